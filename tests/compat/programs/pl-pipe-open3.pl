# pipe(), open with |-, qx//, system, IPC::Open2/Open3
use strict; use warnings;
use IPC::Open2; use IPC::Open3; use Symbol 'gensym';
pipe(my $r, my $w) or die;
my $pid = fork() // die;
if ($pid == 0) { close $r; print $w "child line\n"; close $w; exit 0; }
close $w;
my $line = <$r>;
waitpid($pid, 0);
die $line unless $line eq "child line\n";
open(my $ls, "-|", "seq", "3") or die; my @l = <$ls>; close $ls;
die unless @l == 3;
die unless qx(echo hi | tr a-z A-Z) eq "HI\n";
die unless system("true") == 0;
system("sh", "-c", "exit 3"); die unless $? >> 8 == 3;
my $p2 = open2(my $out, my $in, "sort");
print $in "b\na\n"; close $in;
my $sorted = join "", <$out>; waitpid($p2, 0);
die $sorted unless $sorted eq "a\nb\n";
my $err = gensym;
my $p3 = open3(my $in3, my $out3, $err, "sh", "-c", "echo o; echo e >&2");
close $in3;
my $o = join "", <$out3>; my $e = join "", <$err>; waitpid($p3, 0);
die "$o $e" unless $o eq "o\n" && $e eq "e\n";
print "OK\n";
