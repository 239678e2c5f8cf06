<?php
// stream_socket_server on 127.0.0.1 with a forked client, stream_select, stream_socket_pair
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
$srv = stream_socket_server("tcp://127.0.0.1:0", $errno, $errstr);
if (!$srv) { fwrite(STDERR, "server: $errstr ($errno)\n"); exit(1); }
$name = stream_socket_get_name($srv, false);
$pid = pcntl_fork();
if ($pid === 0) {
    $c = stream_socket_client("tcp://$name", $e, $es, 60);
    fwrite($c, "php tcp\n");
    $r = fgets($c);
    exit($r === "PHP TCP\n" ? 0 : 1);
}
$conn = stream_socket_accept($srv, 60);   // the child may be slow to run on a busy machine
$line = fgets($conn);
fwrite($conn, strtoupper($line));
fclose($conn);
pcntl_waitpid($pid, $st);
fail_if(pcntl_wexitstatus($st) !== 0, 'pcntl_wexitstatus($st) !== 0');
[$a, $b] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
fwrite($a, "pair");
$r = [$b]; $w = null; $e = null;
fail_if(stream_select($r, $w, $e, 1) !== 1 || fread($b, 4) !== "pair", 'stream_select($r, $w, $e, 1) !== 1 || fread($b, 4) !== "pair"');
$u = stream_socket_server("udp://127.0.0.1:0", $errno, $errstr, STREAM_SERVER_BIND);
$uc = stream_socket_client("udp://" . stream_socket_get_name($u, false));
fwrite($uc, "dgram");
fail_if(stream_socket_recvfrom($u, 100) !== "dgram", 'stream_socket_recvfrom($u, 100) !== "dgram"');
echo "served on $name\n";
echo "OK\n";
