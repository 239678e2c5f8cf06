# setsid, nohup, disowned daemons that finish on their own, process groups
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
setsid sh -c 'echo "$$" > sid.pid; sleep 0.2' < /dev/null > /dev/null 2>&1 &
nohup sh -c 'echo nohup-ran > nohup.txt' > /dev/null 2>&1 &
wait
sleep 0.3
[ -s sid.pid ] && grep -qx nohup-ran nohup.txt
set -m
sleep 5 & pg=$!
kill -- -"$pg"
wait "$pg" 2>/dev/null || true
echo OK
