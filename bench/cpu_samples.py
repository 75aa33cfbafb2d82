#!/usr/bin/env python3
"""Benchmark of cpu=samples: overhead and accuracy, all in the same run.

* CpuSplit (CPU-bound, fixed amount of work): wall time with
  `cpu=samples,interval=10` vs without the agent (target <= 1.02x).
  Accuracy: total variation distance (TVD) between the measured and the
  known 60/30/10 split of CPU time over work60/30/10.
* IdleThreads 500 500 (500 threads blocked in a native socket read, 500
  parked) beside one worker doing a fixed amount of work: the process's CPU
  time (user + system, all threads) with `cpu=samples` at interval=10
  (target <= 1.03x) and interval=1 (target <= 1.10x) vs without the agent.
  Accuracy: the worker's share of the samples and the TVD of its split.
  For reference, the original's rule (`cpusampler=runnable`, every thread's
  stack every tick) at interval=10.

Interleaved runs, median of N (default 7) each side.

Usage: bench/cpu_samples.py [runs] [cpusplit_rounds] [idle_rounds]"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SPLIT = [0.6, 0.3, 0.1]


def samples_by_method(path, cls):
    """(counts of cls.work60/30/10, all samples) of the first CPU SAMPLES section."""
    counts = {"work60": 0, "work30": 0, "work10": 0}
    text = open(path).read()
    start = text.index("CPU SAMPLES BEGIN")
    section = text[start:text.index("CPU SAMPLES END", start)]
    total = int(re.search(r"total = (\d+)", section).group(1))
    for m in re.finditer(r"^\s*\d+\s+\S+%\s+\S+%\s+(\d+)\s+\d+\s+" + cls + r"\.(work\d\d)$", section, re.M):
        counts[m.group(2)] += int(m.group(1))
    return [counts["work60"], counts["work30"], counts["work10"]], total


def tvd(shares):
    return sum(abs(s - e) for s, e in zip(shares, SPLIT)) / 2


class Accuracy:
    """Collects each agent run's split; summarises them pooled and per run."""

    def __init__(self, out, cls):
        self.out, self.cls, self.runs = out, cls, []

    def __call__(self, _i):
        self.runs.append(samples_by_method(self.out, self.cls))

    def summary(self):
        worker = sum(sum(c) for c, _ in self.runs)
        total = sum(t for _, t in self.runs)
        pooled = [sum(c[k] for c, _ in self.runs) / worker for k in range(3)]
        per_run = sorted(tvd([x / sum(c) for x in c]) for c, _ in self.runs)
        return {
            "in_worker": worker / total,
            "pooled": pooled,
            "tvd_pooled": tvd(pooled),
            "tvd_run": per_run[len(per_run) // 2],
            "per_run": total // len(self.runs),
            "total": total,
        }

    def line(self, name):
        s = self.summary()
        return (f"accuracy {name}: {100 * s['in_worker']:.2f}% of {s['total']} samples in the worker's methods; "
                f"their pooled split {', '.join(f'{100 * x:.2f}%' for x in s['pooled'])}, "
                f"TVD {100 * s['tvd_pooled']:.2f} pp; per run median TVD {100 * s['tvd_run']:.2f} pp "
                f"(about {s['per_run']} samples per run)")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    split_rounds = sys.argv[2] if len(sys.argv) > 2 else "2000"
    idle_rounds = sys.argv[3] if len(sys.argv) > 3 else "1500"
    agent = harness.build_agent()
    classes = harness.compile_fixtures()
    java = os.path.join(harness.java_home(), "bin", "java")
    work = os.path.dirname(classes)
    out = os.path.join(classes, "cpu.txt")

    def with_agent(opts, main_args):
        return [java, f"-agentpath:{agent}={opts},file={out}", "-cp", classes] + main_args

    split_args = ["CpuSplit", "0", split_rounds]
    acc_split = Accuracy(out, "CpuSplit")
    r_split = harness.compare("cpu=samples,interval=10 on CpuSplit", [java, "-cp", classes] + split_args,
                              with_agent("cpu=samples,interval=10", split_args), runs, work, acc_split)
    print(acc_split.line("CpuSplit interval=10"))

    idle_args = ["IdleThreads", "500", "500", idle_rounds]
    idle_base = [java, "-cp", classes] + idle_args
    r_idle, acc_idle = {}, {}
    for key, opts in [("10", "cpu=samples,interval=10"), ("1", "cpu=samples,interval=1"),
                      ("10_runnable", "cpu=samples,interval=10,cpusampler=runnable")]:
        acc_idle[key] = Accuracy(out, "CpuSplit")
        r_idle[key] = harness.compare(f"{opts} on IdleThreads 500 500 {idle_rounds}", idle_base,
                                      with_agent(opts, idle_args), runs, work, acc_idle[key], measure="cpu")
        print(acc_idle[key].line(f"IdleThreads {opts}"))

    s = acc_split.summary()
    a10, a1 = acc_idle["10"].summary(), acc_idle["1"].summary()
    print(f"RESULT cpu_samples ratio={r_split:.3f} tvd_pooled_pp={100 * s['tvd_pooled']:.2f} "
          f"tvd_run_pp={100 * s['tvd_run']:.2f} "
          f"idle_cpu_ratio_i10={r_idle['10']:.3f} idle_cpu_ratio_i1={r_idle['1']:.3f} "
          f"idle_cpu_ratio_i10_runnable={r_idle['10_runnable']:.3f} "
          f"idle_worker_share_i10={100 * a10['in_worker']:.2f} idle_worker_share_i1={100 * a1['in_worker']:.2f} "
          f"idle_tvd_pooled_pp_i1={100 * a1['tvd_pooled']:.2f}")


if __name__ == "__main__":
    main()
