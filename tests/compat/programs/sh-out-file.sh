# a file named "out" in the working directory: nohup's output redirected
# there, then a C program compiled to it with gcc and run (the run makes
# nothing in /work of its own: every name there is the program's)
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
if [ -e out ] || [ -L out ]; then echo "out exists before the program made it" >&2; exit 1; fi
nohup sh -c 'echo hup' > out
[ -f out ]
[ "$(cat out)" = hup ]
cat > hello.c <<'C'
#include <stdio.h>
int main(void) { puts("built as out"); return 0; }
C
gcc -O2 -o out hello.c     # over the text file
[ -f out ]
[ -x out ]
[ "$(./out)" = "built as out" ]
rm out
echo again > out
grep -qx again out
rm -f out hello.c
echo OK
