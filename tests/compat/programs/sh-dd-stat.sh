# dd from /dev/zero and /dev/urandom, stat, truncate, fallocate, sync, cmp, split
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
dd if=/dev/zero of=zeros bs=1M count=16 status=none
[ "$(stat -c %s zeros)" -eq 16777216 ]
dd if=/dev/urandom of=rand bs=4k count=8 status=none
dd if=rand of=/dev/null bs=1k status=none
truncate -s 1M sparse && [ "$(stat -c %s sparse)" -eq 1048576 ]
fallocate -l 2M alloc
sync
split -b 1M zeros part. && [ "$(ls part.* | wc -l)" -eq 16 ]
cat part.* | cmp - zeros
stat -c '%A %U %G %n' zeros
rm -f zeros rand sparse alloc part.*
echo OK
