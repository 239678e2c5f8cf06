# open("out", "w"): a file named out in the working directory, written, read
# back, appended, replaced and removed (the run makes nothing in /work of
# its own: every name there is the program's)
import os
import stat

assert not os.path.lexists("out")
with open("out", "w") as f:
    f.write("first\n")
assert open("out").read() == "first\n"
assert stat.S_ISREG(os.lstat("out").st_mode)
with open("out", "a") as f:
    f.write("second\n")
assert open("out").read().splitlines() == ["first", "second"]
with open("out.new", "w") as f:
    f.write("replaced\n")
os.replace("out.new", "out")
assert open("out").read() == "replaced\n"
os.remove("out")
assert not os.path.lexists("out")
print("OK")
