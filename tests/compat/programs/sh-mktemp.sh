# mktemp files and directories (default TMPDIR, explicit /tmp, -p), trap cleanup
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
f=$(mktemp)
d=$(mktemp -d)
t=$(mktemp /tmp/compat-sh.XXXXXX)
p=$(mktemp -p "$HOME" x.XXXX)
trap 'rm -rf "$f" "$d" "$t" "$p"' EXIT
echo data > "$f"; echo more > "$t"
touch "$d/inside"
[ -s "$f" ] && [ -s "$t" ] && [ -e "$d/inside" ] && [ -e "$p" ]
case $t in /tmp/compat-sh.*) ;; *) exit 1;; esac
echo "mktemp gave $f $d $t"
echo OK
