# logging to a file with rotation, a queue handler in a thread, and to stderr
import logging
import logging.handlers
import queue

log = logging.getLogger("compat")
log.setLevel(logging.DEBUG)
h = logging.handlers.RotatingFileHandler("app.log", maxBytes=200, backupCount=3)
log.addHandler(h)
log.addHandler(logging.StreamHandler())
for i in range(100):
    log.info("message %d", i)
h.close()
import os
assert os.path.exists("app.log.1") and os.path.exists("app.log.3")
q = queue.Queue()
ql = logging.getLogger("q")
ql.addHandler(logging.handlers.QueueHandler(q))
listener = logging.handlers.QueueListener(q, logging.FileHandler("q.log"))
listener.start()
ql.warning("through a queue")
listener.stop()
assert "through a queue" in open("q.log").read()
print("OK")
