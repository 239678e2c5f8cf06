# background jobs: sleep & wait, wait -n, jobs, exit statuses of jobs, disown
set -uo pipefail
start=$(date +%s%N)
for i in 1 2 3 4; do sleep 0.3 & done
wait
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$ms" -lt 1200 ] || { echo "took $ms ms"; exit 1; }
(exit 3) & p=$!
wait "$p"; [ $? -eq 3 ] || exit 1
sleep 0.1 & sleep 5 &
wait -n
jobs | wc -l | grep -q '[12]'
kill %2 2>/dev/null || kill $! 2>/dev/null
wait 2>/dev/null
sleep 0.1 & disown
echo OK
