# . /etc/os-release, lsb-style detection, /etc/debian_version
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
. /etc/os-release
echo "$PRETTY_NAME ($ID $VERSION_ID)"
[ -n "$ID" ]
grep -q '^NAME=' /etc/os-release
cat /etc/debian_version
case "$ID" in debian|ubuntu) command -v apt-get > /dev/null ;; esac
echo OK
