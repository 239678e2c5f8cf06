# open '>', '/dev/stderr' and '/dev/stdout', STDIN by path, warn, /dev/fd
use strict; use warnings;
open(my $e, ">", "/dev/stderr") or die "/dev/stderr: $!"; print $e "to /dev/stderr\n"; close $e;
open(my $o, ">>", "/dev/stdout") or die "/dev/stdout: $!"; print $o "to /dev/stdout\n"; close $o;
open(my $i, "<", "/dev/stdin") or die "/dev/stdin: $!"; my @in = <$i>; die if @in;
warn "warn goes to stderr\n";
open(my $f2, ">&", \*STDERR) or die; print $f2 "dup of stderr\n";
open(my $fd, ">", "/dev/fd/1") or die "/dev/fd/1: $!"; print $fd "via /dev/fd/1\n"; close $fd;
$| = 1;
print "OK\n";
