# the environment as scripts see it: env, printenv, export, env -i, PATH lookup
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
env | sort
printenv HOME | grep -qx "$HOME"
[ "$PWD" = "$(pwd)" ]
[ -d "$TMPDIR" ] && [ -w "$TMPDIR" ]
export FOO=bar
bash -c '[ "$FOO" = bar ]'
env -i /usr/bin/env | wc -l | grep -qx 0
command -v python3 node ruby php perl bash sh awk sed grep
type -P ls
echo OK
