# a command under a pty through script(1) (IO::Pty is not installed here)
use strict; use warnings;
my $out = qx(script -qec 'tty; perl -e "print -t STDOUT ? qq(tty\\n) : qq(notty\\n)"' /dev/null);
print $out;
die "no pts" unless $out =~ m{/dev/pts/};
die "not a tty" unless $out =~ /^tty\r?$/m;
print "OK\n";
