<?php
// php://stdout, php://stderr, php://fd/N, reading /dev/stdin
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
// (PHP itself cannot open /dev/stderr by path when it is a pipe: its realpath
// turns /proc/self/fd/2 -> "pipe:[N]" into a relative name)
file_put_contents("php://stderr", "php://stderr\n");
file_put_contents("php://fd/2", "php://fd/2\n");
$f = fopen("php://stdout", "w"); fwrite($f, "to php://stdout\n"); fclose($f);
fwrite(STDOUT, "to STDOUT\n");
fail_if(file_get_contents("/dev/stdin") !== "", 'file_get_contents("/dev/stdin") !== ""');
error_log("error_log goes to stderr");
echo "OK\n";
