<?php
// posix_*: ttyname/isatty without a terminal, times, getrlimit, mkfifo, setsid in a child
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
fail_if(posix_isatty(STDOUT), 'posix_isatty(STDOUT)');
fail_if(!posix_times(), '!posix_times()');
fail_if(!posix_mkfifo("fifo", 0600), '!posix_mkfifo("fifo", 0600)');
$pid = pcntl_fork();
if ($pid === 0) { $f = fopen("fifo", "w"); fwrite($f, "fifo data"); fclose($f); exit(0); }
$f = fopen("fifo", "r"); $d = fread($f, 100); fclose($f);
pcntl_waitpid($pid, $st);
fail_if($d !== "fifo data", '$d !== "fifo data"');
$pid = pcntl_fork();
if ($pid === 0) { exit(posix_setsid() > 0 ? 0 : 1); }
pcntl_waitpid($pid, $st);
fail_if(pcntl_wexitstatus($st) !== 0, 'pcntl_wexitstatus($st) !== 0');
echo "pid ", posix_getpid(), " ppid ", posix_getppid(), " uid ", posix_getuid(), "\n";
echo "OK\n";
