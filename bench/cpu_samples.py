#!/usr/bin/env python3
"""Benchmark of cpu=samples: overhead and accuracy.

Overhead: wall time of the CPU-bound CpuSplit fixture (fixed amount of work)
with `cpu=samples,interval=10` vs without the agent, interleaved runs,
median of N (default 7). Accuracy: total variation distance between the
measured and the known 60/30/10 split of CPU time over work60/30/10.

Usage: bench/cpu_samples.py [runs] [rounds]"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def split_of(path):
    counts = {"work60": 0, "work30": 0, "work10": 0}
    text = open(path).read()
    section = text[text.index("CPU SAMPLES BEGIN"):]
    for m in re.finditer(r"^\s*\d+\s+\S+%\s+\S+%\s+(\d+)\s+\d+\s+CpuSplit\.(work\d\d)$", section, re.M):
        counts[m.group(2)] += int(m.group(1))
    n = sum(counts.values())
    return [counts["work60"] / n, counts["work30"] / n, counts["work10"] / n], n


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    rounds = sys.argv[2] if len(sys.argv) > 2 else "2000"
    agent = harness.build_agent()
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = os.path.dirname(classes)
    out = os.path.join(classes, "cpu.txt")
    base = [java, "-cp", classes, "CpuSplit", "0", rounds]
    prof = [java, f"-agentpath:{agent}=cpu=samples,interval=10,file={out}", "-cp", classes, "CpuSplit", "0", rounds]
    tvds = []

    def accuracy(_i):
        shares, n = split_of(out)
        tvd = sum(abs(s - e) for s, e in zip(shares, [0.6, 0.3, 0.1])) / 2
        tvds.append((tvd, n, shares))

    ratio = harness.compare("cpu=samples,interval=10 on CpuSplit", base, prof, runs, work, accuracy)
    tvd_med = sorted(t for t, _, _ in tvds)[len(tvds) // 2]
    # Pooling all runs' samples measures the systematic error of the
    # sampler with the multinomial noise of one short run averaged out.
    total = sum(n for _, n, _ in tvds)
    pooled = [sum(sh[k] * n for _, n, sh in tvds) / total for k in range(3)]
    tvd_pooled = sum(abs(s - e) for s, e in zip(pooled, [0.6, 0.3, 0.1])) / 2
    print(f"accuracy: pooled split {', '.join(f'{100 * s:.2f}%' for s in pooled)} over {total} samples, "
          f"TVD {100 * tvd_pooled:.2f} pp; per run median TVD {100 * tvd_med:.2f} pp "
          f"(about {total // len(tvds)} samples per run)")
    print(f"RESULT cpu_samples ratio={ratio:.3f} tvd_pooled_pp={100 * tvd_pooled:.2f} tvd_run_pp={100 * tvd_med:.2f}")


if __name__ == "__main__":
    main()
