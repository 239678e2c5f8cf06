# nproc, getconf, uname -a, hostname, date, locale, id, whoami, arch
set -eu   # no pipefail: `| head` may end a writer with SIGPIPE
nproc
getconf _NPROCESSORS_ONLN
getconf PAGESIZE | grep -qx 4096
getconf ARG_MAX
uname -a
uname -s | grep -qx Linux
hostname
[ -n "$(hostname)" ]
date -u +%Y-%m-%dT%H:%M:%SZ
date -d @0 -u +%Y | grep -qx 1970
TZ=Asia/Tokyo date -d @0 +%H | grep -qx 09
locale
locale -a | grep -qi 'c.utf'
id
id -u | grep -qx "$(python3 -c 'import os; print(os.getuid())')"
whoami
arch
echo OK
