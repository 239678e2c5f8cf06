# ls / and ls /dev, find / -maxdepth 1, du of the working directory
set -eu   # no pipefail: `| head` may end a writer with SIGPIPE
ls /
ls -la / | head -5
ls /dev
ls -la /dev/null /dev/zero /dev/urandom /dev/stdout
find / -maxdepth 1 -mindepth 1 -type d 2>/dev/null | sort | head -20
ls / | grep -qx usr
ls / | grep -qx tmp
ls /dev | grep -qx null
ls -d /dev/shm /dev/pts
du -sh "$HOME" 
echo OK
