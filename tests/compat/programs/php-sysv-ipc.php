<?php
// System V shared memory, semaphores, message queues (IPC namespace) and shmop
function fail_if($bad, $what) { if ($bad) { fwrite(STDERR, "failed: $what\n"); exit(1); } }
$key = ftok(__FILE__, "c");
$shm = shm_attach($key, 10000, 0600);
shm_put_var($shm, 1, ["a" => 1]);
fail_if(shm_get_var($shm, 1) !== ["a" => 1], 'shm_get_var($shm, 1) !== ["a" => 1]');
shm_remove($shm);
$sem = sem_get($key, 1, 0600, true);
fail_if(!sem_acquire($sem) || !sem_release($sem), '!sem_acquire($sem) || !sem_release($sem)');
sem_remove($sem);
$q = msg_get_queue($key, 0600);
msg_send($q, 1, "message");
fail_if(!msg_receive($q, 1, $type, 100, $m) || $m !== "message", '!msg_receive($q, 1, $type, 100, $m) || $m !== "message"');
msg_remove_queue($q);
$id = shmop_open(0, "c", 0600, 100);   // IPC_PRIVATE
shmop_write($id, "shmop", 0);
fail_if(shmop_read($id, 0, 5) !== "shmop", 'shmop_read($id, 0, 5) !== "shmop"');
shmop_delete($id);
echo "OK\n";
