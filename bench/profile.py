#!/usr/bin/env python3
"""Benchmark of `hprof-rs profile -d DURATION PID` on a busy program,
beside async-profiler's `asprof -d DURATION -f out.html PID`.

The AttachTarget fixture does a fixed amount of CpuSplit's work ("work N")
on command. Each round starts one JVM per side, one after the other, in
turns:

  baseline   no profiler: the work alone;
  hprof-rs   `hprof-rs profile -d DURATION -o out.html PID` started, and
             once it says the profile runs, the work;
  asprof     the same with `asprof -d DURATION -f out.html PID`, when
             async-profiler is there (a measuring reference only).

Every JVM first does the same warm-up. The work is sized so that it ends
well inside the duration. Figures (medians):

  - the process's CPU time for the work (user + system of every thread of
    the JVM, /proc/PID/stat, so the profiler's own threads in the JVM
    count), and its ratio to the baseline: the overhead while attached;
  - the time from the end of the duration to the HTML file: the command's
    wall time minus the duration for both tools (the attach, the stop and
    the writing), and the tool's own figure (`wrote ... N s after the
    profile ended`).

async-profiler is taken through harness.async_profiler() ($ASYNC_PROFILER_HOME,
else .cache/async-profiler, built there from its public source when
missing); without it only our side is measured, and the script says so.

With the event `wall`, both sides take wall-clock samples instead: `hprof-rs
profile -e wall` (every 20 ms, its default) and `asprof -e wall -i 20ms`.

With the event `alloc`, the work is AttachTarget's `warm` (byte[1024]
allocated and dropped on two threads, some 1 GB/s) and both sides sample
allocations: `hprof-rs profile -e alloc` (the agent's sampled sites, taken
by the tool every 250 ms and summed) and `asprof -e alloc`. One more side,
`hprof-rs .hprof`, writes the agent's own report (no takes): the
difference between the two is what the takes cost.

Usage: bench/profile.py [runs] [duration seconds] [cpu|wall|alloc]
(default 3 runs, 30 s, cpu)"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from attach import Target  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / HZ


def asprof_path():
    home = harness.async_profiler()
    p = os.path.join(home, "bin", "asprof") if home else ""
    return p if os.access(p, os.X_OK) else None


class Profiler(threading.Thread):
    """Runs a profiler command; `started` is set once it says the profile
    runs (a line matching `ready`), `wall` is its wall time, `lines` what it
    printed."""

    def __init__(self, cmd, ready):
        super().__init__()
        self.cmd, self.ready = cmd, re.compile(ready)
        self.started = threading.Event()
        self.lines, self.wall, self.rc = [], None, None

    def run(self):
        t0 = time.perf_counter()
        p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            self.lines.append(line.rstrip("\n"))
            if self.ready.search(line):
                self.started.set()
        self.rc = p.wait()
        self.wall = time.perf_counter() - t0
        self.started.set()


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    duration = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
    event = sys.argv[3] if len(sys.argv) > 3 else "cpu"
    if event not in ("cpu", "wall", "alloc"):
        sys.exit("the event is cpu, wall or alloc")
    ours_event = {"wall": ["-e", "wall"], "alloc": ["-e", "alloc"]}.get(event, [])
    theirs_event = {"wall": ["-e", "wall", "-i", "20ms"], "alloc": ["-e", "alloc"]}.get(event, [])
    agent = harness.build_agent()
    tool = harness.build_tool()
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = tempfile.mkdtemp(prefix="hprof-bench-profile-")
    asprof = asprof_path()
    if not asprof:
        print("async-profiler not available (see above); "
              "measuring hprof-rs alone")
    kinds = ["baseline", "hprof-rs"] + (["hprof-rs .hprof"] if event == "alloc" else []) \
        + (["asprof"] if asprof else [])

    def do_work(t, rounds):
        if event == "alloc":
            t0 = time.perf_counter()
            t.ask(f"warm {rounds}", "warm")
            return time.perf_counter() - t0
        return t.work(rounds)

    # Size the work: about half the duration, so it ends inside the profile.
    t = Target(java, classes, work)
    do_work(t, 200)
    per_round = do_work(t, 200) / 200
    t.exit()
    rounds = max(int(duration * 0.5 / per_round), 100)
    warmup = max(rounds // 10, 50)
    print(f"event {event}; work: {rounds} rounds (about {rounds * per_round:.1f} s), duration {duration:g} s")

    cpu = {k: [] for k in kinds}
    after = {k: [] for k in kinds if k != "baseline"}
    own_after = []

    def one(kind):
        t = Target(java, classes, work)
        pid = t.p.pid
        do_work(t, warmup)
        prof = None
        if kind.startswith("hprof-rs"):
            out = os.path.join(work, f"hprof-{pid}.{'hprof' if kind.endswith('.hprof') else 'html'}")
            prof = Profiler([tool, "profile", "-d", f"{duration:g}s", "-o", out, "--agent", agent] + ours_event
                            + [str(pid)],
                            r"profiling JVM \d+")
        elif kind == "asprof":
            out = os.path.join(work, f"asprof-{pid}.html")
            prof = Profiler([asprof, "-d", f"{duration:g}", "-f", out] + theirs_event + [str(pid)],
                            r"Profiling for")
        if prof:
            prof.start()
            prof.started.wait(120)
        c0 = cpu_seconds(pid)
        do_work(t, rounds)
        cpu[kind].append(cpu_seconds(pid) - c0)
        if prof:
            prof.join()
            if prof.rc != 0 or not os.path.exists(out):
                t.p.kill()
                sys.exit(f"{kind} failed ({prof.rc}): " + "\n".join(prof.lines))
            after[kind].append(prof.wall - duration)
            if kind == "hprof-rs":
                m = [re.search(r"([0-9.]+) s after the profile ended", l) for l in prof.lines]
                own_after.extend(float(x.group(1)) for x in m if x)
        t.exit()

    for i in range(runs):
        # Each kind takes each place in turn, so a drift of the machine
        # within a round favours none.
        for kind in kinds[i % len(kinds):] + kinds[:i % len(kinds)]:
            one(kind)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    for k in kinds:
        print(f"{k}: median {med[k]:.3f} s of process CPU for the work (runs {harness.fmt(cpu[k])})")
    ratios = {k: med[k] / med["baseline"] for k in kinds if k != "baseline"}
    for k, r in ratios.items():
        a = statistics.median(after[k])
        print(f"{k}: CPU overhead ratio {r:.3f}; command wall time beyond the duration {a:.3f} s "
              f"(runs {harness.fmt(after[k])})")
    if own_after:
        print(f"hprof-rs: output written {statistics.median(own_after):.3f} s after the profile ended "
              f"(its own figure, median)")
    line = f"RESULT profile event={event} ratio_hprof={ratios['hprof-rs']:.3f} after_hprof={statistics.median(after['hprof-rs']):.3f}"
    if "hprof-rs .hprof" in ratios:
        line += f" ratio_hprof_no_takes={ratios['hprof-rs .hprof']:.3f}"
    if "asprof" in ratios:
        line += (f" ratio_asprof={ratios['asprof']:.3f} after_asprof={statistics.median(after['asprof']):.3f}"
                 f" hprof_vs_asprof={ratios['hprof-rs'] / ratios['asprof']:.3f}")
    print(line)


if __name__ == "__main__":
    main()
