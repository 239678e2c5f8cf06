# ulimit -a and lowering limits in a subshell
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
ulimit -a
( ulimit -n 64; [ "$(ulimit -n)" -eq 64 ] )
( ulimit -f 10; head -c 4096 /dev/zero > small.bin )
( ulimit -v 1000000; python3 -c 'print("limited python")' )
( ulimit -c 0 )
rm -f small.bin
echo OK
