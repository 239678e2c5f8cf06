# echo x > /dev/stderr, >/dev/stdout, reading /dev/stdin, /dev/fd/N, /proc/self/fd
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
echo "error message" > /dev/stderr
echo "normal message" > /dev/stdout
echo "via fd 2" > /dev/fd/2
echo "to /proc/self/fd/1" > /proc/self/fd/1
log() { echo "log: $*" >&2; }
log works
cat /dev/stdin > /dev/null
printf 'x\n' | cat /dev/stdin | grep -qx x
exec 3> fd3.txt
echo three > /dev/fd/3
exec 3>&-
grep -qx three fd3.txt
tee /dev/stderr <<< "tee to stderr" > /dev/null
echo OK
