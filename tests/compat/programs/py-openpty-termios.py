# os.openpty + termios: raw mode, echo off, window size, read through the pair
import fcntl
import os
import struct
import termios
import tty

master, slave = os.openpty()
name = os.ttyname(slave)
assert name.startswith("/dev/pts/"), name
attrs = termios.tcgetattr(slave)
tty.setraw(slave)
raw = termios.tcgetattr(slave)
assert not raw[3] & termios.ECHO and not raw[3] & termios.ICANON
attrs[3] &= ~termios.ECHO      # no echo back to the master
termios.tcsetattr(slave, termios.TCSANOW, attrs)
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
rows, cols = struct.unpack("HHHH", fcntl.ioctl(slave, termios.TIOCGWINSZ, b"\0" * 8))[:2]
assert (rows, cols) == (40, 100)
assert os.get_terminal_size(slave) == os.terminal_size((100, 40))
os.write(master, b"hello\n")
assert os.read(slave, 100) == b"hello\n"
os.write(slave, b"back\n")
assert os.read(master, 100) == b"back\r\n"
# reopening the slave by its name works too
fd = os.open(name, os.O_RDWR | os.O_NOCTTY)
os.write(fd, b"x\n")
assert os.read(master, 100) == b"x\r\n"
os.close(fd)
termios.tcflush(slave, termios.TCIOFLUSH)
print("pty", name)
print("OK")
