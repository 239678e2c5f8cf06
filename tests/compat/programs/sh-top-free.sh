# top in batch mode, free, uptime, vmstat: the usual "how loaded is this box"
set -eu   # no pipefail: `| head` may end a writer with SIGPIPE
top -bn1 | head -5
top -bn1 | grep -q '^%Cpu\|Cpu(s)'
free -m
free -b | awk '/^Mem:/ {exit !($2 > 0)}'
uptime
vmstat 1 1 | tail -1
echo OK
