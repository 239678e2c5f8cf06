# ctypes: libc calls and a Python callback (libffi closures need writable+executable memory)
import ctypes
import ctypes.util

libc = ctypes.CDLL(ctypes.util.find_library("c"))
assert libc.getpid() > 0
assert libc.strlen(b"hello") == 5
arr = (ctypes.c_int * 5)(5, 1, 4, 2, 3)
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
libc.qsort(arr, 5, ctypes.sizeof(ctypes.c_int), CMP(lambda a, b: a[0] - b[0]))
assert list(arr) == [1, 2, 3, 4, 5]
libm = ctypes.CDLL(ctypes.util.find_library("m"))
libm.sqrt.restype = ctypes.c_double
libm.sqrt.argtypes = [ctypes.c_double]
assert libm.sqrt(16.0) == 4.0
print("find_library(c) =", ctypes.util.find_library("c"))
print("OK")
