# IO::Socket::UNIX server on a path, socketpair, IO::Select
use strict; use warnings;
use IO::Socket::UNIX; use IO::Select; use Socket;
my $path = "$ENV{HOME}/p.sock";
my $srv = IO::Socket::UNIX->new(Local => $path, Listen => 1) or die "unix: $!";
my $pid = fork() // die;
if ($pid == 0) { my $c = IO::Socket::UNIX->new(Peer => $path) or exit 1; print $c "unix\n"; exit 0; }
my $c = $srv->accept; my $l = <$c>; waitpid($pid, 0);
die unless $l eq "unix\n";
socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die;
my $sel = IO::Select->new($b);
die if $sel->can_read(0);
syswrite($a, "x");
die unless $sel->can_read(1);
unlink $path;
print "OK\n";
