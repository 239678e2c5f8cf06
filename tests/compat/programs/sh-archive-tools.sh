# tar, gzip, bzip2, xz, zip-less archives; sort, uniq, awk, sed, cut, tr, wc
set -eu   # no pipefail: `| grep -q` and `| head` may end a writer with SIGPIPE
mkdir -p proj/src
for i in $(seq 1 20); do echo "line $i $((i % 3))" >> proj/src/data.txt; done
tar czf proj.tgz proj
tar tzf proj.tgz | grep -q proj/src/data.txt
mkdir unpacked && tar xzf proj.tgz -C unpacked
cmp proj/src/data.txt unpacked/proj/src/data.txt
gzip -k proj/src/data.txt && gunzip -c proj/src/data.txt.gz | wc -l | grep -qx 20
xz -k proj/src/data.txt && xz -dc proj/src/data.txt.xz | md5sum > /dev/null
bzip2 -k proj/src/data.txt && bzcat proj/src/data.txt.bz2 | tail -1 | grep -qx 'line 20 2'
[ "$(awk '{print $3}' proj/src/data.txt | sort | uniq -c | wc -l)" -eq 3 ]
sed -n 's/^line \([0-9]*\) 0$/\1/p' proj/src/data.txt | paste -sd, | grep -qx '3,6,9,12,15,18'
cut -d' ' -f2 proj/src/data.txt | tr '\n' ' ' | wc -w | grep -qx 20
sha256sum proj.tgz > sums && sha256sum -c sums > /dev/null
echo OK
