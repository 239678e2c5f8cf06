<?php
// proc_open with pipes, exec, shell_exec, system, passthru, popen
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
$p = proc_open(["sort"], [0 => ["pipe", "r"], 1 => ["pipe", "w"], 2 => ["pipe", "w"]], $pipes);
fwrite($pipes[0], "b\na\nc\n");
fclose($pipes[0]);
$out = stream_get_contents($pipes[1]);
fclose($pipes[1]); fclose($pipes[2]);
if (proc_close($p) !== 0 || $out !== "a\nb\nc\n") { fwrite(STDERR, "proc_open: $out\n"); exit(1); }
exec("seq 3", $lines, $rc);
fail_if($lines !== ["1", "2", "3"] || $rc !== 0, '$lines !== ["1", "2", "3"] || $rc !== 0');
fail_if(trim(shell_exec("echo shell | tr a-z A-Z")) !== "SHELL", 'trim(shell_exec("echo shell | tr a-z A-Z")) !== "SHELL"');
ob_start(); system("echo sys", $rc2); $s = ob_get_clean();
fail_if($s !== "sys\n" || $rc2 !== 0, '$s !== "sys\\n" || $rc2 !== 0');
$h = popen("echo popen", "r"); $x = fgets($h); pclose($h);
fail_if($x !== "popen\n", '$x !== "popen\\n"');
echo "OK\n";
