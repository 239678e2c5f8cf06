<?php
// php -S on 127.0.0.1 in the background and file_get_contents / curl-less HTTP against it
file_put_contents("index.php", "<?php echo 'hello ' . \$_GET['n'];");
$s = stream_socket_server("tcp://127.0.0.1:0"); $addr = stream_socket_get_name($s, false); fclose($s);
$p = proc_open(["php", "-S", $addr, "-t", getcwd()], [0 => ["file", "/dev/null", "r"], 1 => ["file", "/dev/null", "w"], 2 => ["file", "/dev/null", "w"]], $pipes);
$body = false;
// up to 60 s for the server to answer (a busy machine starts it slowly);
// a server that died stops the wait at once
$deadline = microtime(true) + 60;
while ($body === false && microtime(true) < $deadline && proc_get_status($p)["running"]) {
    usleep(100000);
    $body = @file_get_contents("http://$addr/index.php?n=world");
}
proc_terminate($p);
proc_close($p);
if ($body !== "hello world") { fwrite(STDERR, "got " . var_export($body, true) . "\n"); exit(1); }
echo "OK\n";
