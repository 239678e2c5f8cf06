# getent passwd/group/hosts/services, as scripts look users and names up
set -eu   # no pipefail: `| head` may end a writer with SIGPIPE
getent passwd root
getent passwd "$(id -u)"
getent group "$(id -g)"
getent hosts localhost
getent ahosts localhost | head -2
getent services http | grep -q 80/tcp
getent protocols tcp
echo OK
