#!/usr/bin/env python3
"""The handler's heap lies beside its other mappings (issue 34).

codellm-handler is a static PIE: the kernel maps it among the shared
mappings but starts its brk far from them (ELF_ET_DYN_BASE), so a brk
heap's first page needs a branch of page tables of its own: 0.05-0.5 ms
of every request on a paravirtualized machine, where a first page beside
the binary costs some 15 us (README, Performance). The handler therefore
puts a PROT_NONE page at its brk before its first malloc: brk cannot
grow, and malloc takes its memory from mmap, next to the binary.

What this test sees of a real handler in the middle of a request (its
block held until the test lets it go), and again in a handler that
refused a request (the refusal's path allocates too):
  - the 4 KiB page at the end of its brk heap is mapped PROT_NONE (the
    end is start_brk, field 47 of /proc/PID/stat, where no [heap]
    mapping exists; a libc that took brk memory before main() leaves a
    [heap], and the page then follows it);
  - the heap did not grow while the handler served: the [heap] it has
    (if any) ends at that page.
The time it saves is make bench's to show, not a test's.
"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import *  # noqa: E402,F401,F403

t = Tap()


def handler_pids(server):
    """The live handler processes of the server."""
    return [p for p in server.handlers() if runs_handler(p)]


def layout(pid):
    """(start_brk, [heap] mapping as (start, end) or None, {start: (end,
    perms)} of every mapping) of a live process."""
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    # fields after "(comm)": the third field of the line is the first
    start_brk = int(stat.rsplit(")", 1)[1].split()[47 - 3])
    maps, heap = {}, None
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            maps[lo] = (hi, parts[1])
            if parts[-1] == "[heap]":
                heap = (lo, hi)
    return start_brk, heap, maps


def check_guard(pid, what):
    try:
        start_brk, heap, maps = layout(pid)
    except (OSError, ValueError, IndexError) as e:
        t.ok(False, "%s: the handler's layout is readable" % what, repr(e))
        return
    end = heap[1] if heap else start_brk
    guard = maps.get(end)
    t.ok(guard == (end + 4096, "---p"),
         "%s: a 4 KiB PROT_NONE page at the brk heap's end (%#x; [heap] %s)"
         % (what, end, "none" if not heap else "%#x-%#x" % heap),
         "mapping there: %r" % (guard,))
    t.ok(heap is None or heap[0] == start_brk,
         "%s: no brk heap but one a libc made before main()" % what, repr(heap))


with Server("--timeout", "60") as s:
    res = {}
    th = threading.Thread(target=lambda: res.setdefault(
        "r", s.run(block("bash", HOLD + "\necho held"))))
    th.start()
    blocks = running_blocks(s, 1)
    found = handler_pids(s)
    t.ok(len(blocks) == 1 and len(found) == 1,
         "a request's handler and its block are running (%d, %d)" % (len(found), len(blocks)))
    if found:
        check_guard(found[0], "a handler mid-run")
    let_go(blocks)
    th.join(90)
    r = res.get("r")
    t.ok(r is not None and r.status == 200 and content(r) == "held\n",
         "the held run answers as usual once let go", repr(r))

    # a refusal: the handler stops at a bad body and answers 400; held
    # open first (the head read, the body never sent) to look at it
    c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    try:
        req = build_request("POST", "/v1/chat/completions", b"{bad}")
        c.sendall(req[:-5])
        deadline = time.time() + 30
        found = []
        while not found and time.time() < deadline:
            found = handler_pids(s)
            time.sleep(0.02)
        t.ok(len(found) == 1, "a handler waiting for a body is running")
        if found:
            check_guard(found[0], "a handler before its body")
        c.sendall(b"{bad}")
        r = Resp(read_all(c, 30))
    finally:
        c.close()
    t.ok(r.status == 400, "the bad body is refused with 400", repr(r))

t.done()
