# trap EXIT/INT/TERM/USR1, kill -0 $$, kill a child, timeout(1)
set -uo pipefail
got=""
trap 'got="$got usr1"' USR1
kill -USR1 $$
kill -0 $$ || exit 1
[ "$got" = " usr1" ] || exit 1
# the child says on a fifo when its trap is set; TERM before that would
# kill it by default (opened read-write: no open blocks)
mkfifo ready
exec 3<> ready
( trap 'exit 9' TERM; echo trapped >&3; sleep 20 & wait ) &
c=$!
read -r -t 60 -u 3 _ || { echo "child never set its trap"; exit 1; }
kill -TERM "$c"
wait "$c"; s=$?
[ "$s" -eq 9 ] || { echo "child exit $s"; exit 1; }
exec 3>&-
rm ready
timeout 0.3 sleep 5; [ $? -eq 124 ] || exit 1
timeout -s KILL 0.2 sleep 5; [ $? -eq 137 ] || exit 1
bash -c 'trap "echo cleaned" EXIT; exit 0' | grep -qx cleaned
echo OK
