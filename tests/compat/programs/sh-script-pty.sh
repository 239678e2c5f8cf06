# script(1) gives a command a pty: stty -a, tty, [ -t 1 ] under it
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
out=$(script -qec 'tty; stty -a | head -1; [ -t 1 ] && echo "stdout is a terminal"' /dev/null)
echo "$out"
echo "$out" | grep -q '^/dev/pts/'
echo "$out" | grep -q 'speed'
echo "$out" | grep -q 'stdout is a terminal'
[ -t 1 ] && exit 1
echo OK
