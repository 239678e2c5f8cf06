# /etc/os-release: read directly and through platform.freedesktop_os_release()
import platform

info = platform.freedesktop_os_release()
print(info.get("PRETTY_NAME"))
assert info["ID"] and info["NAME"]
with open("/etc/os-release") as f:
    text = f.read()
assert "ID=" in text
print("OK")
