#!/usr/bin/env python3
"""Benchmark: what streaming to `hprof-rs ui` costs the profiled JVM,
compared with the same profile written to a file.

The same busy fixture (AllocBench: threads allocating small objects and
arrays a few calls deep, so both profiles have work) runs with
`cpu=samples,interval=1,heap=sites,depth=16,format=b` and either
`file=OUT` or the UI's `net=` option, interleaved run for run, so drift
of the machine affects both sides alike. The UI reads every stream into a
session as it arrives; a headless Chromium keeps the page open on the
newest session (views and event stream live) unless --no-browser is
given. Reported: medians of the JVM's wall time and their ratio (UI /
file), and the median of the ratios of each pair of runs.

Usage: bench/ui_overhead.py [runs] [alloc-rounds-in-thousands] [--no-browser]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from ui_driver import Browser, Ui  # noqa: E402

OPTS = "cpu=samples,interval=1,heap=sites,depth=16"


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root):
    """CPU time of a process and its living descendants (the browser)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    total, todo = 0.0, [root]
    while todo:
        p = todo.pop()
        try:
            total += cpu_seconds(p)
        except OSError:
            pass
        todo.extend(c for c, pp in parent.items() if pp == p)
    return total


def run_jvm(cmd, cwd, ui=None, browser=None):
    """Wall time of one JVM run. With a browser, the page is pointed at
    the run's session as soon as it appears."""
    before = len(ui.get("/api/sessions")["sessions"]) if ui else 0
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if browser is not None:
        while p.poll() is None:
            s = ui.get("/api/sessions")["sessions"]
            if len(s) > before:
                # The page learns of the session from its event stream.
                browser.wait_js(f"const e = document.querySelector('#sessions li[data-id=\"{s[-1]['id']}\"]');"
                                " if (!e) return false; e.click(); return true", limit=30)
                break
            time.sleep(0.02)
    _, err = p.communicate()
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"benchmark run failed: {' '.join(cmd)}\n{err}")
    return dt


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = int(args[0]) if args else 9
    rounds = args[1] if len(args) > 1 else "300"
    with_browser = "--no-browser" not in sys.argv
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=harness.ROOT, check=True)
    agent = os.path.join(harness.ROOT, "target", "release", "libhprof_rs.so")
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = tempfile.mkdtemp(prefix="hprof-bench-ui-")
    ui = Ui()
    browser = Browser() if with_browser else None
    try:
        if browser:
            browser.go(ui.url)
        out = os.path.join(work, "out.hprof")
        to_file = [java, f"-agentpath:{agent}={OPTS},format=b,file={out}", "-cp", classes,
                   "AllocBench", "4", rounds]
        to_ui = [java, f"-agentpath:{agent}={OPTS},{ui.agent_opts}", "-cp", classes,
                 "AllocBench", "4", rounds]
        run_jvm(to_file, work)  # warm the page cache
        files, uis, ui_cpu, browser_cpu = [], [], [], []
        for _ in range(runs):
            files.append(run_jvm(to_file, work))
            os.remove(out)
            c0 = cpu_seconds(ui.proc.pid)
            b0 = tree_cpu_seconds(browser.proc.pid) if browser else 0
            uis.append(run_jvm(to_ui, work, ui, browser))
            ui_cpu.append(cpu_seconds(ui.proc.pid) - c0)
            browser_cpu.append((tree_cpu_seconds(browser.proc.pid) if browser else 0) - b0)
        sessions = ui.get("/api/sessions")["sessions"]
        bad = [s for s in sessions if s["state"] != "ended"]
        if bad:
            sys.exit(f"some UI sessions did not end cleanly: {bad}")
        mf, mu = statistics.median(files), statistics.median(uis)
        print(f"AllocBench 4 threads x {rounds}k rounds, {OPTS}, {runs} runs each"
              f"{' (page open in headless Chromium)' if browser else ''}:")
        print(f"  to a file: median {mf:.3f} s {harness.fmt(files)}")
        print(f"  to the UI: median {mu:.3f} s {harness.fmt(uis)}")
        print(f"  ratio UI / file: {mu / mf:.4f} ({(mu / mf - 1) * 100:+.2f} %)")
        # Each UI run follows its file run: the median of the pairs' ratios
        # is less moved by load that drifts during the benchmark.
        pairs = statistics.median(u / f for f, u in zip(files, uis))
        print(f"  median of the run pairs' ratios: {pairs:.4f} ({(pairs - 1) * 100:+.2f} %)")
        # What the UI process took from the machine while a run streamed
        # to it: an upper bound of what it can take from the JVM.
        print(f"  hprof-rs ui CPU time per streamed run: median {statistics.median(ui_cpu) * 1000:.0f} ms "
              f"({statistics.median(c / w for c, w in zip(ui_cpu, uis)) * 100:.2f} % of the run's wall time)")
        if browser:
            print(f"  headless Chromium CPU time per streamed run (page open on the session): median "
                  f"{statistics.median(browser_cpu) * 1000:.0f} ms "
                  f"({statistics.median(c / w for c, w in zip(browser_cpu, uis)) * 100:.2f} % of the run's wall time)")
        print(f"  streams read by the UI: {len(sessions)}, last one {sessions[-1]['records']} records, "
              f"{sessions[-1]['bytes']} bytes")
    finally:
        if browser:
            browser.close()
        ui.close()


if __name__ == "__main__":
    main()
