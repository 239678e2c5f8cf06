# File::Temp (tempfile, tempdir, dir => '/tmp'), File::Path, File::Find, File::Copy, /tmp paths
use strict; use warnings;
use File::Temp qw(tempfile tempdir); use File::Path qw(make_path remove_tree);
use File::Find; use File::Copy; use File::Spec;
my ($fh, $name) = tempfile(); print $fh "temp"; close $fh;
die unless -s $name == 4; unlink $name;
my $d = tempdir(CLEANUP => 1);
make_path("$d/a/b/c");
open my $f, ">", "$d/a/b/c/x.txt" or die; print $f "x"; close $f;
my @found; find(sub { push @found, $_ if -f }, $d);
die "@found" unless "@found" eq "x.txt";
copy("$d/a/b/c/x.txt", "$d/y.txt") or die;
my $t = tempdir("compat-XXXX", DIR => "/tmp", CLEANUP => 1);
die unless -d $t;
my $p = "/tmp/compat-pl-$$";
open my $g, ">", $p or die "$p: $!"; print $g "hard"; close $g; unlink $p or die;
print "tmpdir ", File::Spec->tmpdir, "\n";
print "OK\n";
