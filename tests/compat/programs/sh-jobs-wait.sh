# background jobs: sleep & wait, wait -n, jobs, exit statuses of jobs, disown
set -uo pipefail
# four 1 s sleeps side by side end after about 1 s, one after another
# after 4 s at least: the bound leaves a busy machine 3 s to start them
start=$(date +%s%N)
for i in 1 2 3 4; do sleep 1 & done
wait
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$ms" -lt 4000 ] || { echo "took $ms ms"; exit 1; }
(exit 3) & p=$!
wait "$p"; [ $? -eq 3 ] || exit 1
sleep 0.1 & sleep 5 &
wait -n
jobs | wc -l | grep -q '[12]'
kill %2 2>/dev/null || kill $! 2>/dev/null
wait 2>/dev/null
sleep 0.1 & disown
echo OK
