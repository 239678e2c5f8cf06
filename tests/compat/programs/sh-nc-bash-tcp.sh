# bash's /dev/tcp against a local python listener
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
python3 - <<'PY' &
import socket
s = socket.create_server(("127.0.0.1", 0))
open("port.tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename("port.tmp", "port")
c, _ = s.accept()
c.sendall(c.recv(100).upper())
c.close()
PY
py=$!
# up to 60 s for the port file (python starts slowly on a busy machine);
# a listener that died stops the wait at once
deadline=$((SECONDS + 60))
until [ -e port ]; do
	kill -0 "$py" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ] || break
	sleep 0.05
done
exec 3<>"/dev/tcp/127.0.0.1/$(cat port)"
echo "bash tcp" >&3
read -r reply <&3
exec 3>&-
wait
[ "$reply" = "BASH TCP" ]
echo OK
