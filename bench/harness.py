"""Shared benchmark harness: builds the release agent, compiles the Java
fixtures, and times the same workload with and without the agent in
interleaved runs, so drift of the machine affects both sides alike.

Overhead is reported as the ratio of medians (agent / baseline), of wall
time or of the process's CPU time (user + system, all its threads)."""
import os
import resource
import shutil
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


# The measuring reference for CPU profiles: async-profiler, built from its
# public source into the repository's cache (never part of the product).
ASYNC_PROFILER_TAG = "v4.5"
ASYNC_PROFILER_GIT = "https://github.com/async-profiler/async-profiler.git"


def async_profiler():
    """An async-profiler directory with lib/libasyncProfiler.so and
    bin/asprof, or None (said on stdout): $ASYNC_PROFILER_HOME if set; else
    .cache/async-profiler, built there when missing from the source tree in
    $ASYNC_PROFILER_SRC or from a clone of ASYNC_PROFILER_TAG (which needs
    the network, make and a C++ compiler)."""
    if os.environ.get("ASYNC_PROFILER_HOME"):
        home = os.environ["ASYNC_PROFILER_HOME"]
        if os.path.isfile(os.path.join(home, "lib", "libasyncProfiler.so")):
            return home
        print(f"async-profiler: no lib/libasyncProfiler.so in $ASYNC_PROFILER_HOME ({home})")
        return None
    home = os.path.join(ROOT, ".cache", "async-profiler")
    if os.path.isfile(os.path.join(home, "lib", "libasyncProfiler.so")):
        return home
    src = os.environ.get("ASYNC_PROFILER_SRC") or os.path.join(ROOT, ".cache", "async-profiler-src")
    try:
        if not os.path.isfile(os.path.join(src, "Makefile")):
            print(f"async-profiler: cloning {ASYNC_PROFILER_TAG} into {src} ...", flush=True)
            subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", ASYNC_PROFILER_TAG,
                            ASYNC_PROFILER_GIT, src], check=True, timeout=300)
        print(f"async-profiler: building {src} ...", flush=True)
        jobs = str(os.cpu_count() or 2)
        subprocess.run(["make", "-j", jobs, "build/lib", "build/bin", "build/lib/libasyncProfiler.so", "build/bin/asprof"],
                       cwd=src, check=True, timeout=1800,
                       env=dict(os.environ, JAVA_HOME=java_home()))
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        print(f"async-profiler: could not get it built ({e}); set ASYNC_PROFILER_HOME to an "
              "async-profiler directory (lib/libasyncProfiler.so, bin/asprof) or ASYNC_PROFILER_SRC "
              "to its source tree")
        return None
    os.makedirs(os.path.join(home, "lib"), exist_ok=True)
    os.makedirs(os.path.join(home, "bin"), exist_ok=True)
    for part in ("lib/libasyncProfiler.so", "bin/asprof"):
        tmp = os.path.join(home, part + ".part")
        shutil.copyfile(os.path.join(src, "build", part), tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, os.path.join(home, part))
    return home


def async_profiler_lib():
    """async-profiler's agent library (lib/libasyncProfiler.so of
    async_profiler()), or None."""
    home = async_profiler()
    return os.path.join(home, "lib", "libasyncProfiler.so") if home else None


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
