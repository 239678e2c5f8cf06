# flock between processes, sysopen O_EXCL, rename, stat, utime, symlinks
use strict; use warnings;
use Fcntl qw(:flock O_CREAT O_EXCL O_WRONLY);
open(my $fh, ">", "lock") or die; flock($fh, LOCK_EX) or die;
my $pid = fork() // die;
if ($pid == 0) { open(my $g, ">>", "lock") or exit 2; exit(flock($g, LOCK_EX | LOCK_NB) ? 1 : 0); }
waitpid($pid, 0); die "flock child $?" if $?;
sysopen(my $x, "excl", O_CREAT | O_EXCL | O_WRONLY) or die; close $x;
die if sysopen(my $y, "excl", O_CREAT | O_EXCL | O_WRONLY);
rename("excl", "moved") or die; utime(0, 0, "moved") or die;
die unless (stat "moved")[9] == 0;
symlink("moved", "ln") or die; die unless readlink("ln") eq "moved";
print "OK\n";
