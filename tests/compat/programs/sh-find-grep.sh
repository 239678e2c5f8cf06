# find and grep over the system's read-only trees, as exploratory scripts do
set -eu   # no pipefail: `| head` may end a writer with SIGPIPE
find /usr/lib/python3.11 -maxdepth 1 -name 'json' -type d | grep -q json
grep -rl 'def dumps' /usr/lib/python3.11/json/ | head -1
find /usr/share/zoneinfo/Europe -name Paris | grep -q Paris
find /etc -maxdepth 1 -name '*.conf' 2>/dev/null | head -3
find "$HOME" -maxdepth 1 | head
ls /usr/bin | wc -l
which ls python3
echo OK
