#!/usr/bin/env python3
"""Benchmark: how long the page of `hprof-rs ui` takes to show the first
view (the CPU flame graph) of a 1 000 000-sample profile, measured in the
browser.

The profile is synthetic, so its size is exact: 100 000 traces of depth 16
over 1 600 methods, 10 samples each (1 000 000 samples), whose stacks
share prefixes and branch further down as real ones do (about 400 000
call-tree nodes), plus an ALLOC SITES record of 100 000 sites. The UI is
given the file on its command line; once it has read it, a headless
Chromium loads the page N times, each time from scratch, and the page
reports `window.hprofFirstView`: `performance.now()` (ms since the
navigation started) when the first CPU view with data was drawn. So the
figure covers loading the page, fetching the session list and the view,
building the view on the server (the first request of each load builds
the call tree; later ones hit its cache) and drawing it. Also reported:
switching to the hot-methods table, the call tree and the 100 000-site
table, timed in the page.

Usage: bench/ui_first_render.py [loads]
"""
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_driver import ROOT, Browser, Ui  # noqa: E402

TRACES = 100_000
DEPTH = 16
PER_TRACE = 10
WIDTH = 100  # methods per depth level


def record(out, tag, body):
    out += struct.pack(">BII", tag, 0, len(body)) + body


def profile():
    out = bytearray(b"JAVA PROFILE 1.0.2\0" + struct.pack(">IQ", 4, 0))
    record(out, 0x01, struct.pack(">I", 1) + b"bench.Work")
    record(out, 0x01, struct.pack(">I", 2) + b"Work.java")
    record(out, 0x02, struct.pack(">IIII", 1, 100, 0, 1))
    for d in range(DEPTH):
        for m in range(WIDTH):
            fid = 10 + d * WIDTH + m
            record(out, 0x01, struct.pack(">I", fid) + f"d{d}m{m}".encode())
            record(out, 0x04, struct.pack(">IIIIIi", fid, fid, 0, 2, 1, fid))
    rows = []
    for t in range(1, TRACES + 1):
        # Root first: level d takes the trace number's high bits, so
        # stacks share prefixes near the root and branch further down.
        frames = [10 + d * WIDTH + ((t * 2654435761 >> max(0, 20 - d)) % WIDTH) for d in range(DEPTH)]
        frames.reverse()  # top of stack first in a TRACE
        record(out, 0x05, struct.pack(f">III{DEPTH}I", t, 0, DEPTH, *frames))
        rows.append((PER_TRACE, t))
    total = sum(c for c, _ in rows)
    body = struct.pack(">II", total, len(rows)) + b"".join(struct.pack(">II", c, t) for c, t in rows)
    record(out, 0x0D, body)
    sites = b"".join(struct.pack(">BIIIIII", 0, 1, t, 16, 1, 16 * t % 100000, t % 977 + 1)
                     for t in range(1, TRACES + 1))
    head = struct.pack(">HIIIQQI", 0, 0, 16 * TRACES, TRACES, 0, 0, TRACES)
    record(out, 0x06, head + sites)
    return bytes(out), total


def main():
    loads = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    data, total = profile()
    work = tempfile.mkdtemp(prefix="hprof-bench-render-")
    path = os.path.join(work, "million.hprof")
    with open(path, "wb") as f:
        f.write(data)
    t0 = time.perf_counter()
    ui = Ui([path])
    browser = Browser()
    try:
        s = ui.wait_sessions(lambda s: s and s[0]["state"] != "live")[0]
        read = time.perf_counter() - t0
        if s["state"] != "ended":
            sys.exit(f"the UI could not read the profile: {s['error']}")
        firsts = []
        for _ in range(loads):
            browser.go("about:blank")
            browser.go(ui.url)
            firsts.append(browser.wait_js("return window.hprofFirstView", limit=60))
        frames = browser.js("return document.querySelectorAll('#flame .fr').length")
        kept = browser.js("return document.getElementById('cpusum').textContent")

        def timed(action, ready):
            return browser.call("POST", "execute/async", {"args": [], "script": f"""
                const done = arguments[arguments.length - 1];
                const t0 = performance.now();
                {action}
                const poll = () => ({ready}) ? done(performance.now() - t0) : setTimeout(poll, 5);
                poll();"""})
        table = timed("document.querySelector('input[name=cpuview][value=table]').click();",
                      "document.querySelectorAll('#hot tbody tr').length === 100")
        tree = timed("document.querySelector('input[name=cpuview][value=tree]').click();",
                     "document.querySelectorAll('#calltree tbody tr').length > 0")
        sites = timed("document.querySelector('#tabs button[data-tab=memory]').click();",
                      "document.querySelectorAll('#sites tbody tr').length === 100")
        print(f"profile: {total:,} samples, {TRACES:,} traces of depth {DEPTH}, {TRACES:,} sites, "
              f"{len(data) / 1e6:.1f} MB; read by the UI in {read:.2f} s (to the session's end)")
        print(f"first view (CPU flame graph, {frames} frames drawn; {kept}) over {loads} page loads:")
        print(f"  median {statistics.median(firsts):.0f} ms, max {max(firsts):.0f} ms "
              f"[{', '.join(f'{x:.0f}' for x in firsts)}]")
        print(f"then: hot-methods table {table:.0f} ms, call tree {tree:.0f} ms, "
              f"100 000-site table {sites:.0f} ms")
    finally:
        browser.close()
        ui.close()


if __name__ == "__main__":
    main()
