# how scripts check for a terminal when they have none
set -uo pipefail
[ -t 0 ] && exit 1
[ -t 1 ] && exit 1
tty; [ $? -eq 1 ] || exit 1
if [ -r /dev/tty ] && : < /dev/tty 2>/dev/null; then echo "has a tty?"; exit 1; fi
stty -a 2>/dev/null && exit 1
tput cols 2>/dev/null || echo "no terminal for tput"
echo OK
