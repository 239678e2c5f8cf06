# hard-coded /tmp paths, as countless scripts use them
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
w=/tmp/compat-sh-$$
mkdir -p "$w/sub"
echo "hello" > "$w/sub/file.txt"
cp "$w/sub/file.txt" "/tmp/compat-copy-$$.txt"
cat "/tmp/compat-copy-$$.txt" | grep -qx hello
ls -la /tmp > /dev/null
df -P /tmp > /dev/null
touch /tmp/compat-lock-$$ && rm /tmp/compat-lock-$$
rm -rf "$w" "/tmp/compat-copy-$$.txt"
[ ! -e "$w" ]
echo OK
