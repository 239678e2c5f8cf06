# multiprocessing.shared_memory: create, attach by name from a child, ShareableList
import multiprocessing as mp
from multiprocessing import shared_memory


def child(name):
    shm = shared_memory.SharedMemory(name=name)
    shm.buf[0:5] = b"world"
    shm.close()


if __name__ == "__main__":
    shm = shared_memory.SharedMemory(create=True, size=1 << 20)
    try:
        shm.buf[0:5] = b"hello"
        p = mp.Process(target=child, args=(shm.name,))
        p.start()
        p.join(60)
        assert p.exitcode == 0
        assert bytes(shm.buf[0:5]) == b"world"
        sl = shared_memory.ShareableList([1, 2.5, "three", None])
        try:
            sl[0] = 42
            assert sl[0] == 42 and sl[2] == "three"
        finally:
            sl.shm.close()
            sl.shm.unlink()
    finally:
        shm.close()
        shm.unlink()
    print("shared memory", shm.name)
    print("OK")
