#!/usr/bin/env python3
"""Benchmark of monitor=y: overhead and accuracy.

Overhead: wall time with `monitor=y` vs without the agent, interleaved runs,
median of N (default 7), on two workloads:
  * contention: `Contention hammer 4 3000000` — four threads take one lock
    12 million times around a short computation (thousands of contended
    entries, i.e. JVMTI events, per run);
  * CPU-bound: `CpuSplit 0 600` — one thread, no contention (measures what
    merely having the profile on costs).
Accuracy: `Contention measure 3 6 50` — MONITOR TIME total vs the blocked
time the fixture measured itself with System.nanoTime, per run.

Usage: bench/monitors.py [runs]"""
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def monitor_total_ms(path):
    m = re.search(r"^MONITOR TIME BEGIN \(total = (\d+) ms\)", open(path).read(), re.M)
    return int(m.group(1)) if m else 0


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    agent = harness.build_agent()
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = os.path.dirname(classes)
    out = os.path.join(classes, "monitor.txt")
    prof = f"-agentpath:{agent}=monitor=y,file={out}"

    entries = []

    def contention_stats(_i):
        text = open(out).read()
        entries.append(sum(int(m.group(1)) for m in re.finditer(
            r"^\s*\d+\s+\S+%\s+\S+%\s+(\d+)\s+\d+\s+Contention\$HotLock \(Java\)$", text, re.M)))

    hammer = ["-cp", classes, "Contention", "hammer", "4", "3000000"]
    r_hammer = harness.compare("monitor=y on Contention hammer 4 3000000",
                               [java] + hammer, [java, prof] + hammer, runs, work, contention_stats)
    print(f"contended entries per run (MONITOR TIME count): median {statistics.median(entries):.0f}, "
          f"min {min(entries)}, max {max(entries)}")

    cpu = ["-cp", classes, "CpuSplit", "0", "600"]
    r_cpu = harness.compare("monitor=y on CpuSplit 0 600", [java] + cpu, [java, prof] + cpu, runs, work)

    errors = []
    for _ in range(max(3, runs // 2)):
        p = subprocess.run([java, prof, "-cp", classes, "Contention", "measure", "3", "6", "50"],
                           cwd=work, capture_output=True, text=True, check=True)
        truth = int(re.search(r"^blocked_ns_total (\d+)$", p.stdout, re.M).group(1)) / 1e6
        errors.append((monitor_total_ms(out) - truth) / truth)
    print("accuracy: MONITOR TIME total vs fixture-measured blocked time, error per run: "
          + ", ".join(f"{100 * e:+.2f}%" for e in errors))
    worst = max(abs(e) for e in errors)
    print(f"RESULT monitors ratio_contention={r_hammer:.3f} ratio_cpu={r_cpu:.3f} "
          f"worst_time_error_pct={100 * worst:.2f}")


if __name__ == "__main__":
    main()
