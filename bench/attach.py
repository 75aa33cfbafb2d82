#!/usr/bin/env python3
"""Benchmark of an attached cpu=samples against one loaded at start-up.

The AttachTarget fixture does a fixed amount of CpuSplit's work ("work N")
on command and answers how many nanoseconds it took, measured inside the
program, so JVM start-up and the attach itself are not part of the figure.
Each round starts three JVMs one after the other:

  baseline   no agent;
  start-up   -agentpath:libhprof_rs.so=cpu=samples,interval=10;
  attached   no agent at start; after a warm-up, `hprof-rs attach PID
             cpu=samples,interval=10`, then the measured work.

Every JVM does the same warm-up (so the work methods are compiled alike)
before the measured work. The figures are the medians of the measured
work; both overhead ratios are against the baseline of the same run.

Usage: bench/attach.py [runs] [rounds]"""
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

OPTIONS = "cpu=samples,interval=10"


class Target:
    def __init__(self, java, classes, cwd, agent_arg=None):
        cmd = [java] + ([agent_arg] if agent_arg else []) + ["-cp", classes, "AttachTarget"]
        self.p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.expect("ready")

    def expect(self, prefix):
        line = self.p.stdout.readline().strip()
        if not line.startswith(prefix):
            self.p.kill()
            sys.exit(f"AttachTarget answered {line!r}, not {prefix!r}: {self.p.stderr.read()}")
        return line

    def ask(self, cmd, prefix):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.expect(prefix)

    def work(self, rounds):
        return int(self.ask(f"work {rounds}", "worked ").split()[1]) / 1e9

    def exit(self):
        self.ask("exit", "bye")
        self.p.stdin.close()
        err = self.p.stderr.read()
        if self.p.wait(timeout=60) != 0:
            sys.exit(f"AttachTarget failed: {err}")
        return err


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
    warmup = max(rounds // 10, 20)
    agent = harness.build_agent()
    tool = harness.build_tool()
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = tempfile.mkdtemp(prefix="hprof-bench-attach-")
    times = {"baseline": [], "start-up": [], "attached": []}

    def one(kind):
        out = os.path.join(work, f"{kind}.txt")
        arg = f"-agentpath:{agent}={OPTIONS},file={out}" if kind == "start-up" else None
        t = Target(java, classes, work, arg)
        t.work(warmup)
        if kind == "attached":
            r = subprocess.run([tool, "attach", str(t.p.pid), f"{OPTIONS},file={out}", "--agent", agent],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                t.p.kill()
                sys.exit(f"hprof-rs attach failed: {r.stdout}{r.stderr}")
        times[kind].append(t.work(rounds))
        t.exit()
        if kind != "baseline" and "CPU SAMPLES END" not in open(out).read():
            sys.exit(f"{kind}: no CPU SAMPLES in {out}")

    one("baseline")  # warm the page cache
    times["baseline"].clear()
    kinds = ["baseline", "start-up", "attached"]
    for i in range(runs):
        # Each kind takes each place in turn, so a drift of the machine
        # within a round favours none.
        for kind in kinds[i % 3:] + kinds[:i % 3]:
            one(kind)
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k}: median {med[k]:.3f} s of work ({rounds} rounds; runs {harness.fmt(v)})")
    r_start = med["start-up"] / med["baseline"]
    r_attach = med["attached"] / med["baseline"]
    print(f"{OPTIONS}: ratio loaded at start-up {r_start:.3f}, attached {r_attach:.3f} "
          f"(attached / start-up {r_attach / r_start:.3f})")
    print(f"RESULT attach ratio_startup={r_start:.3f} ratio_attached={r_attach:.3f}")


if __name__ == "__main__":
    main()
