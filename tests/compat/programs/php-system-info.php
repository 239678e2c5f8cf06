<?php
// sys_getloadavg, php_uname, gethostname, posix_getpwuid, posix_uname, getmyuid, memory/disk
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
$l = sys_getloadavg();
fail_if(count($l) !== 3, 'count($l) !== 3');
echo php_uname(), "\n";
fail_if(PHP_OS !== "Linux" || !gethostname(), 'PHP_OS !== "Linux" || !gethostname()');
$pw = posix_getpwuid(posix_geteuid());
echo "user ", $pw["name"], " ", $pw["dir"], "\n";
fail_if(!posix_getgrgid(posix_getegid()), '!posix_getgrgid(posix_getegid())');
fail_if(posix_uname()["sysname"] !== "Linux", 'posix_uname()["sysname"] !== "Linux"');
fail_if(disk_free_space(".") <= 0 || disk_total_space(".") <= 0, 'disk_free_space(".") <= 0 || disk_total_space(".") <= 0');
fail_if(getenv("HOME") === false, 'getenv("HOME") === false');
fail_if(!is_readable("/etc/os-release"), '!is_readable("/etc/os-release")');
$os = parse_ini_file("/etc/os-release");
echo $os["PRETTY_NAME"], "\n";
fail_if(!posix_getrlimit(), '!posix_getrlimit()');
echo "OK\n";
