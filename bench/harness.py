"""Shared benchmark harness: builds the release agent, compiles the Java
fixtures, and times the same workload with and without the agent in
interleaved runs, so drift of the machine affects both sides alike.

Overhead is reported as the ratio of medians (agent / baseline), of wall
time or of the process's CPU time (user + system, all its threads)."""
import os
import resource
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


def build_tool():
    """Build the hprof-rs binary; its path."""
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "hprof-rs"], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release", "hprof-rs")


def compile_fixtures():
    out = tempfile.mkdtemp(prefix="hprof-bench-classes-")
    src = os.path.join(ROOT, "java-fixtures")
    files = [os.path.join(src, f) for f in os.listdir(src) if f.endswith(".java")]
    subprocess.run(["javac", "--release", "11", "-g", "-d", out] + files, check=True)
    return out


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, cwd, measure="wall"):
    """Seconds of wall time, or of CPU time of the process (`measure="cpu"`:
    user + system of every thread, from the kernel's accounting of the
    waited-for child)."""
    t0, c0 = time.perf_counter(), children_cpu()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    dt, dc = time.perf_counter() - t0, children_cpu() - c0
    if p.returncode != 0:
        sys.exit(f"benchmark run failed: {' '.join(cmd)}\n{p.stderr}")
    return dc if measure == "cpu" else dt


def compare(name, base_cmd, agent_cmd, runs, cwd, after_agent_run=None, measure="wall"):
    """Interleave baseline and agent runs; print medians and the ratio."""
    timed(base_cmd, cwd)  # warm the page cache / JIT-independent start-up costs
    base, agent = [], []
    for i in range(runs):
        base.append(timed(base_cmd, cwd, measure))
        agent.append(timed(agent_cmd, cwd, measure))
        if after_agent_run:
            after_agent_run(i)
    mb, ma = statistics.median(base), statistics.median(agent)
    what = "process CPU" if measure == "cpu" else "wall"
    print(f"{name}: {what} baseline median {mb:.3f} s, with agent median {ma:.3f} s, "
          f"ratio {ma / mb:.3f} (runs={runs}; baseline {fmt(base)}; agent {fmt(agent)})")
    return ma / mb


def fmt(xs):
    return "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"
