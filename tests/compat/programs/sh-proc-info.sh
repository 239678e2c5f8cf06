# cat /proc/cpuinfo | head, /proc/meminfo, uptime, loadavg, lscpu
set -eu   # no pipefail: `| head` may end a writer with SIGPIPE
cat /proc/cpuinfo | head -5
grep -c ^processor /proc/cpuinfo
head -3 /proc/meminfo
grep -q MemTotal /proc/meminfo
cat /proc/loadavg
cat /proc/uptime
uptime -p || uptime
cat /proc/self/status | grep -E '^(Name|Pid|PPid|Uid|Threads)'
cat /proc/version
lscpu | head -5
echo OK
