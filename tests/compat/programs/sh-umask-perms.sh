# umask, chmod, chown to oneself, install -m, ln -s, readlink -f, realpath
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
umask 027
touch f && [ "$(stat -c %a f)" = 640 ]
mkdir d && [ "$(stat -c %a d)" = 750 ]
chmod u+x f && [ -x f ]
chown "$(id -u):$(id -g)" f
install -m 0755 f bin-f && [ "$(stat -c %a bin-f)" = 755 ]
ln -s f link && [ "$(readlink link)" = f ]
[ "$(readlink -f link)" = "$(realpath f)" ]
cp -a d d2 && mv d2 d3 && rmdir d3
echo OK
