# writing dotfiles and caches under $HOME and ~, as tools do (~/.cache, ~/.config)
import json
import os
import pathlib

home = pathlib.Path.home()
cfg = home / ".config" / "compat" / "settings.json"
cfg.parent.mkdir(parents=True)
cfg.write_text(json.dumps({"a": 1}))
cache = pathlib.Path(os.path.expanduser("~/.cache/compat"))
cache.mkdir(parents=True)
(cache / "blob").write_bytes(b"x" * 10000)
assert json.loads(cfg.read_text()) == {"a": 1}
assert os.environ["TMPDIR"] and os.path.isdir(os.environ["TMPDIR"])
assert os.access(os.environ["TMPDIR"], os.W_OK)
print("home", home)
print("OK")
