# pty.spawn a shell command, capturing what it writes through the terminal
import os
import pty

out = []


def read(fd):
    data = os.read(fd, 1024)
    out.append(data)
    return data


st = pty.spawn(["sh", "-c", "tty; test -t 1 && echo is-a-terminal"], read)
text = b"".join(out).decode()
print(text.strip())
assert os.waitstatus_to_exitcode(st) == 0
assert "/dev/pts/" in text and "is-a-terminal" in text, text
print("OK")
