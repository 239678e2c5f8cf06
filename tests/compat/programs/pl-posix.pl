# POSIX: uname, getpid/getppid, setsid in a child, strftime, floor, :sys_wait_h, sysconf, ttyname
use strict; use warnings;
use POSIX qw(uname strftime floor setsid :sys_wait_h sysconf _SC_PAGESIZE _SC_OPEN_MAX);
my @u = uname(); die unless $u[0] eq "Linux";
print join(" ", @u), "\n";
die unless floor(2.7) == 2;
print strftime("%Y-%m-%d", gmtime(0)), "\n";
die unless sysconf(_SC_OPEN_MAX) >= 1 && sysconf(_SC_PAGESIZE) == 4096;
my $pid = fork() // die;
if ($pid == 0) { POSIX::_exit(setsid() > 0 ? 0 : 1); }
waitpid($pid, 0); die "setsid" if $?;
die "tty?" if POSIX::isatty(1);
$ENV{TZ} = "Asia/Tokyo"; POSIX::tzset();
die "tz" unless (localtime(0))[2] == 9;
print "OK\n";
