# who am I: getpass.getuser, pwd/grp lookups, os.getgroups, expanduser
import getpass
import grp
import os
import pwd

uid, gid = os.getuid(), os.getgid()
pw = pwd.getpwuid(uid)
print("user", getpass.getuser(), uid, gid, pw.pw_name, pw.pw_dir, pw.pw_shell)
assert getpass.getuser() == pw.pw_name
assert grp.getgrgid(gid).gr_name
assert pwd.getpwnam(pw.pw_name).pw_uid == uid
assert pwd.getpwuid(0).pw_name == "root"
assert isinstance(os.getgroups(), list)
assert os.path.expanduser("~") == os.environ["HOME"]
assert os.geteuid() == uid and os.getegid() == gid
assert len(pwd.getpwall()) >= 2
print("OK")
