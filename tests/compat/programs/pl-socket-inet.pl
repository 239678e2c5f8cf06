# IO::Socket::INET server + client on 127.0.0.1 (forked), IO::Socket::IP on ::1, UDP
use strict; use warnings;
use IO::Socket::INET; use IO::Socket::IP;
my $srv = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Listen => 5, ReuseAddr => 1) or die "listen: $@";
my $port = $srv->sockport;
my $pid = fork() // die;
if ($pid == 0) {
    my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port) or exit 1;
    print $c "perl tcp\n";
    my $r = <$c>;
    exit($r eq "PERL TCP\n" ? 0 : 2);
}
my $conn = $srv->accept;
my $line = <$conn>;
print $conn uc $line;
close $conn;
waitpid($pid, 0);
die "client $?" if $?;
my $s6 = IO::Socket::IP->new(LocalHost => "::1", LocalPort => 0, Listen => 1) or die "v6: $@";
my $c6 = IO::Socket::IP->new(PeerHost => "::1", PeerPort => $s6->sockport) or die "v6 connect: $@";
my $a6 = $s6->accept; print $c6 "six\n"; die unless <$a6> eq "six\n";
my $u = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 0, Proto => "udp") or die;
my $uc = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $u->sockport, Proto => "udp") or die;
$uc->send("dgram"); $u->recv(my $buf, 100); die unless $buf eq "dgram";
print "OK\n";
