# ip addr / ip link / ip route as scripts look at the network (netlink, read only)
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
ip -o link show lo
ip addr show lo | grep -q 'inet 127.0.0.1'
ip -br addr
ip route show > /dev/null
ip -6 addr show lo | grep -q '::1'
ss -ltn > /dev/null
echo OK
