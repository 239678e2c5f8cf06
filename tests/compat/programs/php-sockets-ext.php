<?php
// the sockets extension: socket_create_pair, a TCP listener on 127.0.0.1 and ::1
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
fail_if(!socket_create_pair(AF_UNIX, SOCK_STREAM, 0, $pair), '!socket_create_pair(AF_UNIX, SOCK_STREAM, 0, $pair)');
socket_write($pair[0], "pair");
fail_if(socket_read($pair[1], 4) !== "pair", 'socket_read($pair[1], 4) !== "pair"');
foreach ([[AF_INET, "127.0.0.1"], [AF_INET6, "::1"]] as [$fam, $addr]) {
    $s = socket_create($fam, SOCK_STREAM, SOL_TCP);
    if (!socket_bind($s, $addr, 0) || !socket_listen($s)) { fwrite(STDERR, socket_strerror(socket_last_error()) . "\n"); exit(1); }
    socket_getsockname($s, $a, $port);
    $c = socket_create($fam, SOCK_STREAM, SOL_TCP);
    fail_if(!socket_connect($c, $addr, $port), "connect $addr");
    $conn = socket_accept($s);
    socket_write($c, "hi");
    fail_if(socket_read($conn, 2) !== "hi", "read over $addr");
    socket_close($c); socket_close($conn); socket_close($s);
}
echo "OK\n";
