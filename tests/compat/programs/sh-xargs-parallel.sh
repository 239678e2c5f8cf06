# xargs -P parallel workers, a CPU-bound shell loop, command substitution in bulk
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
seq 1 40 | xargs -P 8 -I{} sh -c 'echo $(( {} * {} )) > sq.{}'
total=$(cat sq.* | paste -sd+ | bc)
[ "$total" -eq 22140 ]
rm sq.*
s=0; for i in $(seq 1 20000); do s=$((s + i)); done
[ "$s" -eq 200010000 ]
echo OK
