# sqlite3 CLI and python's sqlite3 on the same file
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
sqlite3 data.db 'PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1),(2),(3);' > /dev/null
[ "$(sqlite3 data.db 'SELECT sum(x) FROM t')" -eq 6 ]
python3 -c 'import sqlite3; c=sqlite3.connect("data.db"); c.execute("insert into t values (4)"); c.commit()'
sqlite3 -csv data.db 'SELECT count(*) FROM t' | grep -qx 4
echo OK
