# JSON::PP, Digest::SHA, MIME::Base64, Storable to a file, Compress::Zlib
use strict; use warnings;
use JSON::PP; use Digest::SHA qw(sha256_hex); use MIME::Base64; use Storable qw(nstore retrieve);
use Compress::Zlib;
my $data = { a => [1, 2, 3], b => "text" };
my $j = JSON::PP->new->canonical;
die unless $j->encode($j->decode($j->encode($data))) eq $j->encode($data);
die unless sha256_hex("abc") =~ /^ba7816bf/;
die unless decode_base64(encode_base64("xyz")) eq "xyz";
nstore($data, "d.sto"); die unless retrieve("d.sto")->{b} eq "text";
die unless uncompress(compress("z" x 100)) eq "z" x 100;
print "OK\n";
