# resource limits and usage: getrlimit/setrlimit (lowering), getrusage, prlimit
import os
import resource

for name in ("RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_FSIZE",
             "RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_CPU"):
    soft, hard = resource.getrlimit(getattr(resource, name))
    print(name, soft, hard)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == min(soft, 256)
resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
ru = resource.getrusage(resource.RUSAGE_SELF)
assert ru.ru_maxrss > 0
assert resource.prlimit(os.getpid(), resource.RLIMIT_NOFILE)[0] == min(soft, 256)
assert resource.getpagesize() == 4096
print("OK")
