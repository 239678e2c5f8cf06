<?php
// tempnam, sys_get_temp_dir, tmpfile, hard-coded /tmp, scandir('/') and /dev
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
$t = tempnam(sys_get_temp_dir(), "php");
file_put_contents($t, "temp");
fail_if(file_get_contents($t) !== "temp", 'file_get_contents($t) !== "temp"');
unlink($t);
$f = tmpfile(); fwrite($f, "anon"); rewind($f);
fail_if(fread($f, 4) !== "anon", 'fread($f, 4) !== "anon"');
$p = "/tmp/compat-php-" . getmypid();
mkdir($p);
file_put_contents("$p/x", "y");
fail_if(file_get_contents("$p/x") !== "y", 'file_get_contents("$p/x") !== "y"');
unlink("$p/x"); rmdir($p);
$t2 = tempnam("/tmp", "compat"); unlink($t2);
$root = scandir("/");
if (!in_array("usr", $root) || !in_array("tmp", $root)) { fwrite(STDERR, implode(" ", $root)); exit(1); }
fail_if(!in_array("null", scandir("/dev")), '!in_array("null", scandir("/dev"))');
echo "temp dir " . sys_get_temp_dir() . "\n";
echo "OK\n";
