# sqlite3: a file database in WAL mode (mmap'ed -shm file), :memory:, two connections
import sqlite3

con = sqlite3.connect("app.db")
assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
con.executemany("INSERT INTO t (name) VALUES (?)", [("a",), ("b",), ("c",)])
con.commit()
other = sqlite3.connect("app.db")
assert other.execute("SELECT count(*) FROM t").fetchone()[0] == 3
other.close()
con.execute("PRAGMA mmap_size=1048576")
assert [r[0] for r in con.execute("SELECT name FROM t ORDER BY id")] == ["a", "b", "c"]
con.close()
mem = sqlite3.connect(":memory:")
mem.execute("CREATE TABLE x (v)")
mem.execute("INSERT INTO x VALUES (json('[1,2]'))")
assert mem.execute("SELECT json_array_length(v) FROM x").fetchone()[0] == 2
mem.execute("CREATE TEMP TABLE tmp (v)")   # temp store, on disk or in memory
mem.executemany("INSERT INTO tmp VALUES (?)", [(i,) for i in range(10000)])
assert mem.execute("SELECT sum(v) FROM tmp").fetchone()[0] == 49995000
print("sqlite", sqlite3.sqlite_version)
print("OK")
