<?php
// files, dirs, glob, json, dates in a time zone, gzip, hashes, flock
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
mkdir("a/b/c", 0777, true);
file_put_contents("a/b/c/d.json", json_encode(["x" => [1, 2]]));
fail_if(json_decode(file_get_contents("a/b/c/d.json"), true) !== ["x" => [1, 2]], 'json_decode(file_get_contents("a/b/c/d.json"), true) !== ["x" => [1, 2]]');
fail_if(count(glob("a/*/*/*.json")) !== 1, 'count(glob("a/*/*/*.json")) !== 1');
$d = new DateTime("@0"); $d->setTimezone(new DateTimeZone("Asia/Tokyo"));
fail_if($d->format("H") !== "09", '$d->format("H") !== "09"');
file_put_contents("compress.zlib://x.gz", str_repeat("z", 1000));
fail_if(strlen(file_get_contents("compress.zlib://x.gz")) !== 1000, 'strlen(file_get_contents("compress.zlib://x.gz")) !== 1000');
fail_if(hash("sha256", "abc") !== "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 'hash("sha256", "abc") !== "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"');
$fh = fopen("lock", "c"); fail_if(!flock($fh, LOCK_EX | LOCK_NB), '!flock($fh, LOCK_EX | LOCK_NB)'); flock($fh, LOCK_UN);
fail_if(strlen(random_bytes(16)) !== 16, 'strlen(random_bytes(16)) !== 16');
echo "OK\n";
