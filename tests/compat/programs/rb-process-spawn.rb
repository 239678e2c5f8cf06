# Process.spawn with pgroup, Process.getpgid, Process.setsid in a child, rlimits, clock_gettime
pid = Process.spawn("sleep 0.1", pgroup: true)
raise "pgid" unless Process.getpgid(pid) == pid
Process.wait(pid)
pid = fork { Process.setsid; exit!(Process.getsid == Process.pid ? 0 : 1) }
raise "setsid" unless Process.wait2(pid)[1].success?
soft, hard = Process.getrlimit(:NOFILE)
Process.setrlimit(:NOFILE, [soft, 128].min, hard)
raise "clock" unless Process.clock_gettime(Process::CLOCK_MONOTONIC) > 0
puts "rlimit nofile #{Process.getrlimit(:NOFILE).inspect}"
puts "OK"
