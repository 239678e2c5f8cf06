# here-documents and here-strings (bash writes them to temporary files or pipes)
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
cat > config.ini <<CONF
[main]
home=$HOME
CONF
grep -q "^home=$HOME\$" config.ini
n=$(wc -l <<'END'
one
two
three
END
)
[ "$n" -eq 3 ]
read -r a b <<< "left right"
[ "$a" = left ] && [ "$b" = right ]
python3 - <<'PY'
import sys
print("python from a heredoc", sys.version_info[:2])
PY
big=$(head -c 200000 /dev/zero | tr '\0' x)
[ "$(wc -c <<< "$big")" -eq 200001 ]
echo OK
