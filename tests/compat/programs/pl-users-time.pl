# getpwuid($<), getgrgid, getlogin fallback, hostname, Time::Piece, Sys::Hostname, /etc/passwd lookup
use strict; use warnings;
use Sys::Hostname; use Time::Piece; use Time::HiRes qw(time sleep);
my @pw = getpwuid($<); die "getpwuid: $<" unless @pw;
print "user $pw[0] home $pw[7]\n";
die unless defined getgrgid($();
my $who = getlogin() || $pw[0];
die unless $who;
print "host ", hostname(), "\n";
my $t = Time::Piece->strptime("2024-07-01", "%Y-%m-%d");
die unless $t->year == 2024;
my $t0 = time; sleep(0.05); die unless time - $t0 >= 0.04;
die unless (getpwnam("root"))[2] == 0;
print "OK\n";
