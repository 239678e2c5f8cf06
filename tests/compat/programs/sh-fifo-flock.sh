# named pipes (mkfifo) and flock(1) between processes
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
mkfifo pipe
( echo "through the fifo" > pipe ) &
read -r line < pipe
wait
[ "$line" = "through the fifo" ]
exec 9> lock
flock -n 9
if flock -n lock -c true; then exit 1; fi
flock -u 9
flock -n lock -c true
rm pipe lock
echo OK
