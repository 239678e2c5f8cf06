# compile-and-run when a compiler is installed; otherwise check the interpreters' own builds
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
if command -v cc > /dev/null; then
	cat > hello.c <<'C'
#include <stdio.h>
int main(void) { puts("compiled"); return 0; }
C
	cc -O2 -o hello hello.c
	./hello | grep -qx compiled
else
	echo "no compiler here"
fi
python3 -c 'import sysconfig; print(sysconfig.get_config_var("CC"))'
echo OK
