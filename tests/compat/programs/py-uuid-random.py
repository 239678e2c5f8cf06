# uuid1 (node id from the host), uuid4, os.urandom, getrandom, random.SystemRandom
import os
import random
import uuid

u1, u4 = uuid.uuid1(), uuid.uuid4()
print(u1, u4, hex(uuid.getnode()))
assert u1.version == 1 and u4.version == 4
assert len(os.urandom(64)) == 64
assert len(os.getrandom(16)) == 16
assert 0 <= random.SystemRandom().random() < 1
print("OK")
