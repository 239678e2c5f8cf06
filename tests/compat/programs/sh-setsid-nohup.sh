# setsid, nohup, disowned daemons that finish on their own, process groups
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
setsid sh -c 'echo "$$" > sid.pid; sleep 0.2' < /dev/null > /dev/null 2>&1 &
nohup sh -c 'echo nohup-ran > nohup.txt' > /dev/null 2>&1 &
wait
# setsid forks when it leads a process group, and `wait` cannot wait for
# that child: wait for the daemon's pid file itself, up to 60 s (only a
# daemon that never runs takes that long, however busy the machine)
deadline=$((SECONDS + 60))
until [ -s sid.pid ] || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.05; done
[ -s sid.pid ] && grep -qx nohup-ran nohup.txt
set -m
sleep 5 & pg=$!
kill -- -"$pg"
wait "$pg" 2>/dev/null || true
echo OK
