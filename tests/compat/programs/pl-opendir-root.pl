# opendir / and /dev, glob, -e tests on system paths, /etc/os-release, /proc
use strict; use warnings;
opendir(my $d, "/") or die "opendir /: $!";
my @root = grep { !/^\./ } readdir $d; closedir $d;
print "/: @{[sort @root]}\n";
die unless grep { $_ eq "usr" } @root and grep { $_ eq "tmp" } @root;
opendir(my $dv, "/dev") or die "opendir /dev: $!"; my @dev = readdir $dv;
die unless grep { $_ eq "null" } @dev;
die unless -d "/usr/bin" && -x "/usr/bin/perl";
open(my $os, "<", "/etc/os-release") or die "os-release: $!";
my %os = map { chomp; split /=/, $_, 2 } grep { /=/ } <$os>;
print "$os{PRETTY_NAME}\n";
open(my $ci, "<", "/proc/cpuinfo") or die; die unless grep { /^processor/ } <$ci>;
my @pm = glob("/usr/share/perl/*/POSIX.pod /usr/lib/x86_64-linux-gnu/perl*/*/POSIX.pm");
die "no POSIX.pm" unless @pm;
print "OK\n";
