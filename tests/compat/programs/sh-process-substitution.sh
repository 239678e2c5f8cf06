# process substitution <(...) and >(...), diff of two commands, mapfile from one
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
diff <(printf 'a\nb\n') <(printf 'a\nb\n')
! diff <(echo x) <(echo y) >/dev/null
mapfile -t lines < <(seq 3)
[ "${#lines[@]}" -eq 3 ]
echo hello > >(tr a-z A-Z > upper.txt)
wait $!   # the >(...) process runs on its own: its output is there once it ended
[ "$(cat upper.txt)" = HELLO ]
paste <(seq 1 3) <(seq 4 6) | awk '{s+=$1*$2} END {exit !(s==32)}'
comm -12 <(printf '1\n2\n3\n') <(printf '2\n3\n4\n') | wc -l | grep -qx 2
echo OK
