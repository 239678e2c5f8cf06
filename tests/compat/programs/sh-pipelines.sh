# pipelines, pipefail, PIPESTATUS, tee, xargs, subshells
set -euo pipefail
n=$(seq 1 1000 | grep -c 7)
[ "$n" -eq 271 ] || { echo "count $n"; exit 1; }
seq 1 5 | tee copy.txt | paste -sd+ | bc | grep -qx 15
[ "$(wc -l < copy.txt)" -eq 5 ]
set +o pipefail
false | true; s=("${PIPESTATUS[@]}")
[ "${s[0]}" -eq 1 ] && [ "${s[1]}" -eq 0 ]
set -o pipefail
printf '%s\n' c a b | sort | xargs -n1 echo item | tail -1 | grep -qx 'item c'
out=$( (cd /; pwd); pwd )
echo "$out" | head -1 | grep -qx /
set +o pipefail   # yes ends with SIGPIPE
yes | head -n 100000 | wc -l | grep -qx 100000
set -o pipefail
echo OK
