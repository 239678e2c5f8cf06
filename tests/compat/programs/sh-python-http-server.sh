# python3 -m http.server in the background and curl (or python) against localhost
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
echo "hello from a file" > index.txt
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 > server.log 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
# up to 60 s for the server to answer (python starts slowly on a busy
# machine); a server that died stops the wait at once
deadline=$((SECONDS + 60))
until curl -s "http://127.0.0.1:$port/" > /dev/null 2>&1; do
	kill -0 "$srv" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ] || break
	sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/index.txt" | grep -qx "hello from a file"
curl -fsS "http://localhost:$port/index.txt" > /dev/null
python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/index.txt').read().decode().strip())"
wget -qO- "http://127.0.0.1:$port/index.txt" | grep -q hello
echo OK
