#!/usr/bin/env python3
"""Benchmark of the heap analyser (`hprof-rs heap`, docs/heap-analyser.md)
beside hprof-analyzer 0.2.0 on the same dumps, in the same run.

The dumps are HotSpot's (`jcmd GC.heap_dump`) of bench/heap_dump.py's
program, HeapBench, with `mb` MB of live data (1000: a ~1.2 GB dump of
7.6 M objects; 3300 for a ~4 GB one), made once and kept in
.cache/heap-analyser-bench/ (HEAP_BENCH_DIR overrides).

For each dump, `runs` times, alternating which tool goes first:

  cold    no saved index: `hprof-rs heap DUMP classes` builds the index
          (dominator tree, retained sizes) and prints the class table with
          retained sizes; hprof-analyzer's default run `hprof-analyzer DUMP
          out.json` (its report: dominator tree, retained sizes, leak
          suspects). Wall time and peak RSS of each process (the kernel's
          ru_maxrss of the waited-for child), and their ratios.
  steps   with the index saved: each navigation step (classes, dominators,
          dominated, instances, object, path, path --exclude-weak,
          suspects) and a reopened index (`dominators --top 1`): wall time
          and peak RSS.
  ui      the same steps as the Heap tab asks them, through the HTTP API of
          `hprof-rs ui DUMP` (GET /api/session/1/heap/QUERY): the time until
          the saved index is open, then each answer's round trip, against
          the target of 100 ms a step.

The dump stays in the page cache for both tools (one untimed read first):
what is compared is the analysis, not the disk. Other processes on the
machine make wall times noisy; figures are medians and paired ratios.

hprof-analyzer is taken from HPROF_ANALYZER, else from
.cache/tools/hprof-analyzer-0.2.0/bin, where it is installed on first use
(`cargo install hprof-analyzer --version 0.2.0 --root ...`, from
crates.io).

Usage: bench/heap_analyser.py [mb=1000[,3300]] [runs=3]
(HPROF_TEST_JDK=<java home> selects the JDK that makes the dumps.)"""
import os
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import ui_driver  # noqa: E402

ROOT = harness.ROOT
CACHE = os.path.join(ROOT, ".cache")


def hprof_analyzer():
    if os.environ.get("HPROF_ANALYZER"):
        return os.environ["HPROF_ANALYZER"]
    root = os.path.join(CACHE, "tools", "hprof-analyzer-0.2.0")
    exe = os.path.join(root, "bin", "hprof-analyzer")
    if not os.path.exists(exe):
        print(f"installing hprof-analyzer 0.2.0 into {root} (crates.io; takes minutes)")
        r = subprocess.run(["cargo", "install", "hprof-analyzer", "--version", "0.2.0", "--root", root])
        if r.returncode != 0 or not os.path.exists(exe):
            sys.exit("hprof-analyzer 0.2.0 could not be installed: set HPROF_ANALYZER=<path to it>")
    return exe


def ours():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "hprof-rs"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "hprof-rs")


def make_dump(mb, directory):
    """HotSpot's dump of HeapBench with `mb` MB live (made once)."""
    path = os.path.join(directory, f"heapbench-{mb}.hprof")
    if os.path.exists(path):
        return path
    os.makedirs(directory, exist_ok=True)
    classes = harness.compile_fixtures()
    jdk = harness.java_home()
    heap = max(3, (mb * 3) // 1024 + 2)
    marker = os.path.join(directory, "marker")
    if os.path.exists(marker):
        os.remove(marker)
    p = subprocess.Popen([os.path.join(jdk, "bin", "java"), f"-Xms{heap}g", f"-Xmx{heap}g", "-cp", classes,
                          "HeapBench", str(mb), marker], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    tmp = path + ".tmp"
    subprocess.run([os.path.join(jdk, "bin", "jcmd"), str(p.pid), "GC.heap_dump", tmp], check=True,
                   capture_output=True)
    open(marker, "w").close()
    p.wait(timeout=300)
    os.rename(tmp, path)
    return path


def measured(cmd, cwd):
    """(wall seconds, peak RSS bytes, stdout, stderr) through wait4."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # communicate() would reap the child: read the pipes, then wait4.
    chunks = {}

    def drain(name, pipe):
        chunks[name] = pipe.read()
    ts = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", p.stdout), ("err", p.stderr))]
    for t in ts:
        t.start()
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    for t in ts:
        t.join()
    out, err = chunks.get("out", b""), chunks.get("err", b"")
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}\n{err.decode(errors='replace')[-3000:]}")
    return dt, ru.ru_maxrss * 1024, out.decode(errors="replace"), err.decode(errors="replace")


def index_of(dump):
    return dump + ".hprof-rs-index"


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def mib(b):
    return f"{b / 2**20:.0f} MiB"


def med(xs):
    return statistics.median(xs)


def bench_dump(dump, runs, hs, analyzer):
    size = os.path.getsize(dump)
    print(f"\n== {os.path.basename(dump)}: {size / 1e9:.2f} GB")
    warm(dump)
    cwd = os.path.dirname(dump)
    report = os.path.join(cwd, "hprof-analyzer-out.json")
    ours_t, ours_m, theirs_t, theirs_m = [], [], [], []
    phases = ""
    for i in range(runs):
        order = ["ours", "theirs"] if i % 2 == 0 else ["theirs", "ours"]
        for who in order:
            if who == "ours":
                if os.path.exists(index_of(dump)):
                    os.remove(index_of(dump))
                env_cmd = ["env", "HPROF_RS_HEAP_PHASES=1", hs, "heap", dump, "classes", "--top", "10"]
                dt, rss, out, err = measured(env_cmd, cwd)
                ours_t.append(dt)
                ours_m.append(rss)
                phases = err
            else:
                dt, rss, _, _ = measured([analyzer, dump, report], cwd)
                theirs_t.append(dt)
                theirs_m.append(rss)
    print(f"cold start to the dominator tree and class table with retained sizes (runs={runs}):")
    print(f"  hprof-rs heap:   {med(ours_t):7.2f} s  peak {mib(med(ours_m))}   "
          f"(walls {harness.fmt(ours_t)})")
    print(f"  hprof-analyzer:  {med(theirs_t):7.2f} s  peak {mib(med(theirs_m))}   "
          f"(walls {harness.fmt(theirs_t)})")
    print(f"  ratio ours/theirs: wall {med(ours_t) / med(theirs_t):.3f} (target 0.25), "
          f"peak RSS {med(ours_m) / med(theirs_m):.3f} (target 1.0)")
    pairs = [o / t for o, t in zip(ours_t, theirs_t)]
    print(f"  paired wall ratios: {harness.fmt(pairs)}")
    print("  our phases (last run):")
    for line in phases.splitlines():
        if "phase" in line or "indexed" in line:
            print("    " + line.replace("hprof-rs heap: ", ""))
    # Navigation steps on the saved index.
    if not os.path.exists(index_of(dump)):
        measured([hs, "heap", dump, "dominators", "--top", "1"], cwd)

    def ask(*q):
        return measured([hs, "heap", dump, *q, "--json"], cwd)[2]
    top = json.loads(ask("dominators", "--top", "1"))["objects"][0]["id"]
    item = json.loads(ask("instances", "HeapBench$Item", "--limit", "1"))["objects"][0]["id"]
    steps = [
        ("reopen (dominators --top 1)", ["dominators", "--top", "1"]),
        ("classes", ["classes"]),
        ("dominators --top 25", ["dominators", "--top", "25"]),
        ("dominated TOP", ["dominated", top]),
        ("instances HeapBench$Item", ["instances", "HeapBench$Item", "--limit", "25"]),
        ("object ITEM", ["object", item]),
        ("path ITEM", ["path", item]),
        ("path ITEM --exclude-weak", ["path", item, "--exclude-weak"]),
        ("dominated ITEM", ["dominated", item]),
        ("suspects", ["suspects"]),
    ]
    print(f"navigation steps on the saved index (median of {max(runs, 3)}; target 0.1 s, reopen 1 s):")
    for name, q in steps:
        ts, ms = [], []
        for _ in range(max(runs, 3)):
            dt, rss, _, _ = measured([hs, "heap", dump, *q], cwd)
            ts.append(dt)
            ms.append(rss)
        print(f"  {name:40} {med(ts) * 1000:8.1f} ms  peak {mib(med(ms))}")
    ui_steps(dump, hs, runs, top, item, "HeapBench$Item")
    return med(ours_t), size


def ui_steps(dump, hs, runs, top, item, cls):
    """Each navigation step through the UI's HTTP API, as the Heap tab asks
    it, on the index saved beside the dump (reopened by the UI)."""
    ui = ui_driver.Ui(files=[dump], exe=hs, cwd=os.path.dirname(dump))
    try:
        def ask(q, params=""):
            url = f"{ui.base}/api/session/1/heap/{q}?token={ui.token}&{params}"
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(url) as r:
                    status, body = r.status, r.read()
            except urllib.error.HTTPError as e:
                status, body = e.code, e.read()
            return time.perf_counter() - t0, status, json.loads(body)

        t0 = time.perf_counter()
        while True:
            _, status, v = ask("status")
            if status == 200:
                break
            if status != 202 or time.perf_counter() - t0 > 600:
                sys.exit(f"the UI's index of {dump}: {status} {v}")
            time.sleep(0.005)
        ready = time.perf_counter() - t0
        n = max(runs, 5)
        quoted = urllib.request.quote(cls)
        steps = [
            ("classes (by retained, 100 rows)", "classes", "limit=100"),
            ("classes by name", "classes", "sort=name&limit=100"),
            ("classes filtered", "classes", f"filter={quoted}&limit=100"),
            ("biggest retainers (100)", "dominated", "limit=100"),
            ("dominated TOP", "dominated", f"id={top}&limit=100"),
            (f"instances {cls}", "instances", f"class={quoted}&limit=100"),
            (f"instances {cls}, offset 100000", "instances", f"class={quoted}&offset=100000&limit=100"),
            ("object ITEM", "object", f"id={item}"),
            ("path ITEM", "path", f"id={item}"),
            ("path ITEM, strong only", "path", f"id={item}&exclude_weak=1"),
            ("dominated ITEM", "dominated", f"id={item}&limit=100"),
            ("suspects", "suspects", ""),
            ("diff with itself (both indexed)", "diff", "other=1&limit=100"),
        ]
        print(f"through the UI's HTTP API (hprof-rs ui DUMP; {n} asks each; target 100 ms a step):")
        print(f"  {'saved index opened by the UI':40} {ready * 1000:8.1f} ms (target 1 s)")
        worst = 0.0
        for name, q, params in steps:
            ts = []
            for _ in range(n):
                dt, status, v = ask(q, params)
                if status != 200:
                    sys.exit(f"{q}?{params}: {status} {v}")
                ts.append(dt)
            # The first ask is what a click costs; later ones may be
            # answered from what the first left (suspects keeps its answer).
            worst = max(worst, ts[0], med(ts))
            print(f"  {name:40} first {ts[0] * 1000:8.1f} ms, median {med(ts) * 1000:8.1f} ms")
        print(f"  slowest step {worst * 1000:.1f} ms: {'within' if worst <= 0.1 else 'OVER'} the 100 ms target")
    finally:
        ui.close()


def main():
    sizes = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "1000").split(",")]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    directory = os.environ.get("HEAP_BENCH_DIR") or os.path.join(CACHE, "heap-analyser-bench")
    analyzer = hprof_analyzer()
    hs = ours()
    results = []
    for mb in sizes:
        dump = make_dump(mb, directory)
        results.append(bench_dump(dump, runs, hs, analyzer))
    if len(results) > 1:
        (t0, s0), (t1, s1) = results[0], results[-1]
        print(f"\ngrowth: {s1 / s0:.2f}x the bytes took {t1 / t0:.2f}x the time (linear: equal)")


if __name__ == "__main__":
    main()
