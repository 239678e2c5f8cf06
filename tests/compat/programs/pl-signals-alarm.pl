# %SIG handlers, alarm with eval/die timeouts, kill 0, sleep via select
use strict; use warnings;
my $got = 0;
$SIG{USR1} = sub { $got++ };
kill 'USR1', $$;
select(undef, undef, undef, 0.05);
die "usr1" unless $got == 1;
my $timed = eval { local $SIG{ALRM} = sub { die "alarm\n" }; alarm 1; sleep 5; alarm 0; 0 } // ($@ eq "alarm\n");
die "alarm" unless $timed;
die "kill 0" unless kill 0, $$;
$SIG{CHLD} = 'DEFAULT';
print "OK\n";
