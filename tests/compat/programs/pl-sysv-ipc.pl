# SysV IPC from perl: shmget/shmwrite/shmread, semget/semop, msgget/msgsnd/msgrcv (IPC_PRIVATE)
use strict; use warnings;
use IPC::SysV qw(IPC_PRIVATE IPC_RMID S_IRUSR S_IWUSR IPC_CREAT);
my $id = shmget(IPC_PRIVATE, 1024, S_IRUSR | S_IWUSR) // die "shmget: $!";
shmwrite($id, "sysv shm", 0, 8) or die "shmwrite: $!";
my $buf; shmread($id, $buf, 0, 8) or die; die $buf unless $buf eq "sysv shm";
shmctl($id, IPC_RMID, 0);
my $sem = semget(IPC_PRIVATE, 1, S_IRUSR | S_IWUSR | IPC_CREAT) // die "semget: $!";
semop($sem, pack("s!3", 0, 1, 0)) or die "semop: $!";
semop($sem, pack("s!3", 0, -1, 0)) or die;
semctl($sem, 0, IPC_RMID, 0);
my $q = msgget(IPC_PRIVATE, S_IRUSR | S_IWUSR) // die "msgget: $!";
msgsnd($q, pack("l! a*", 1, "queued"), 0) or die "msgsnd: $!";
msgrcv($q, my $m, 100, 0, 0) or die; my ($type, $text) = unpack("l! a*", $m);
die $text unless $text eq "queued";
msgctl($q, IPC_RMID, 0);
print "OK\n";
