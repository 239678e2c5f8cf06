<?php
// pcntl_fork, pcntl_waitpid, exit statuses, pcntl_signal, posix_kill
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
if (!function_exists("pcntl_fork")) { echo "no pcntl\n"; echo "OK\n"; exit(0); }
$kids = [];
for ($i = 0; $i < 4; $i++) {
    $pid = pcntl_fork();
    if ($pid === 0) { exit($i); }
    $kids[] = $pid;
}
$codes = [];
foreach ($kids as $k) { pcntl_waitpid($k, $st); $codes[] = pcntl_wexitstatus($st); }
sort($codes);
if ($codes !== [0, 1, 2, 3]) { fwrite(STDERR, json_encode($codes)); exit(1); }
pcntl_async_signals(true);
$got = 0;
pcntl_signal(SIGUSR1, function () use (&$got) { $got++; });
posix_kill(posix_getpid(), SIGUSR1);
usleep(10000);
fail_if($got !== 1, '$got !== 1');
$pid = pcntl_fork();
if ($pid === 0) { sleep(30); exit(0); }
posix_kill($pid, SIGKILL);
pcntl_waitpid($pid, $st);
fail_if(!pcntl_wifsignaled($st) || pcntl_wtermsig($st) !== SIGKILL, '!pcntl_wifsignaled($st) || pcntl_wtermsig($st) !== SIGKILL');
echo "OK\n";
