# ps aux, ps -ef, pgrep, our own process visible, background job listed
set -eu   # no pipefail: `| head` may end a writer with SIGPIPE
sleep 30 &
bg=$!
ps aux | head -5
ps -ef | grep -v grep | grep -q "sleep 30"
ps -o pid,ppid,stat,cmd -p $$ | tail -1
ps -p "$bg" > /dev/null
pgrep -x sleep > /dev/null
[ "$(ps -o comm= -p $$)" = bash ]
kill "$bg"
wait "$bg" 2>/dev/null || true
echo OK
