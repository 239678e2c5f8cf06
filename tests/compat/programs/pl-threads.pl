# perl ithreads with Thread::Queue and shared variables
use strict; use warnings;
use threads; use threads::shared; use Thread::Queue;
my $sum :shared = 0;
my $q = Thread::Queue->new(1..100);
$q->end;
my @t = map { threads->create(sub { while (defined(my $x = $q->dequeue)) { lock($sum); $sum += $x } }) } 1..4;
$_->join for @t;
die "sum $sum" unless $sum == 5050;
print "OK\n";
