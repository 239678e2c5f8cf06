# fork, wait, waitpid, $?, kill, exec in a child
use strict; use warnings;
my @kids;
for my $i (0..3) {
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) { exit $i; }
    push @kids, $pid;
}
my @codes;
for (@kids) { waitpid($_, 0); push @codes, $? >> 8; }
die "codes @codes" unless join(",", sort @codes) eq "0,1,2,3";
my $pid = fork() // die;
if ($pid == 0) { exec("sleep", "30") or die; }
kill 'TERM', $pid;
waitpid($pid, 0);
die "signal" unless ($? & 127) == 15;
print "forked ", scalar(@kids) + 1, " children\n";
print "OK\n";
