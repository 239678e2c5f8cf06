# ps aux, ps -ef, pgrep, our own process visible, background job listed
set -eu   # no pipefail: `| head` may end a writer with SIGPIPE
sleep 30 &
bg=$!
# the job is a forked shell until it has exec'd sleep (a busy machine may
# take a while): wait for that, up to 60 s, before looking for "sleep 30"
deadline=$((SECONDS + 60))
until [ "$(cat "/proc/$bg/comm" 2>/dev/null)" = sleep ] || [ "$SECONDS" -ge "$deadline" ]; do
	sleep 0.05
done
ps aux | head -5
ps -ef | grep -v grep | grep -q "sleep 30"
ps -o pid,ppid,stat,cmd -p $$ | tail -1
ps -p "$bg" > /dev/null
pgrep -x sleep > /dev/null
[ "$(ps -o comm= -p $$)" = bash ]
kill "$bg"
wait "$bg" 2>/dev/null || true
echo OK
