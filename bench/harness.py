"""Shared benchmark harness: builds the release agent, compiles the Java
fixtures, and times the same workload with and without the agent in
interleaved runs, so drift of the machine affects both sides alike.

Overhead is reported as the ratio of medians (agent / baseline)."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def java_home():
    if os.environ.get("HPROF_TEST_JDK"):
        return os.environ["HPROF_TEST_JDK"]
    java = subprocess.run(["sh", "-c", 'readlink -f "$(command -v java)"'],
                          capture_output=True, text=True).stdout.strip()
    return os.path.dirname(os.path.dirname(java))


def build_agent():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--lib"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "libhprof_rs.so")


def compile_fixtures():
    out = tempfile.mkdtemp(prefix="hprof-bench-classes-")
    src = os.path.join(ROOT, "java-fixtures")
    files = [os.path.join(src, f) for f in os.listdir(src) if f.endswith(".java")]
    subprocess.run(["javac", "--release", "11", "-g", "-d", out] + files, check=True)
    return out


def timed(cmd, cwd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"benchmark run failed: {' '.join(cmd)}\n{p.stderr}")
    return dt


def compare(name, base_cmd, agent_cmd, runs, cwd, after_agent_run=None):
    """Interleave baseline and agent runs; print medians and the ratio."""
    timed(base_cmd, cwd)  # warm the page cache / JIT-independent start-up costs
    base, agent = [], []
    for i in range(runs):
        base.append(timed(base_cmd, cwd))
        agent.append(timed(agent_cmd, cwd))
        if after_agent_run:
            after_agent_run(i)
    mb, ma = statistics.median(base), statistics.median(agent)
    print(f"{name}: baseline median {mb:.3f} s, with agent median {ma:.3f} s, "
          f"ratio {ma / mb:.3f} (runs={runs}; baseline {fmt(base)}; agent {fmt(agent)})")
    return ma / mb


def fmt(xs):
    return "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"
