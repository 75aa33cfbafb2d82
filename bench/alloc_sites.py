#!/usr/bin/env python3
"""Benchmark of heap=sites: wall-time overhead, exact and sampled.

Workloads (interleaved runs with and without the agent, ratio of medians):
  1. AllocBench: 4 threads allocating small objects and arrays as fast as
     they can (java-fixtures/AllocBench.java) - the worst case;
  2. javac compiling generated sources (a few hundred files) in one JVM.

Modes: exact heap=sites (depth=4; the default, every allocation counted)
and sampled (heapsample=524288: on average one sample per 512 KiB).
For javac the sampled mode also runs cpu=samples, as a production profile.

The sampled AllocBench run does ten times more work than the exact one:
its fixed costs (one GC at VM init, one GC and the wait for frees before
the exit report, together about 0.1 s) would otherwise hide the
steady-state overhead of a short run. Every command runs under `timeout`
so a hung JVM fails the benchmark instead of stalling it.

Beside them, in the same session, async-profiler sampling allocations at
the same mean interval (`alloc=524288`; for javac with its CPU profile too,
`event=cpu,interval=10ms`, to JFR as it takes both only there), the tool a
user would otherwise pick, taken through harness.async_profiler(); the
script prints our sampled overhead over async-profiler's.

Usage: bench/alloc_sites.py [runs] [alloc-rounds-in-thousands] [javac-files]
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SAMPLE = 524288
LIMIT = ["timeout", "900"]


def gen_sources(n):
    """n classes with fields, methods, generics and string building, which
    gives javac a realistic mix of parsing, attribution and code generation."""
    d = tempfile.mkdtemp(prefix="hprof-bench-javac-")
    src = os.path.join(d, "src")
    os.makedirs(src)
    for i in range(n):
        dep = f"C{(i * 7 + 3) % n}"
        with open(os.path.join(src, f"C{i}.java"), "w") as f:
            f.write(f"""package gen;
import java.util.*;
public class C{i} implements Comparable<C{i}> {{
    private final int id; private final String name; private final List<{dep}> deps = new ArrayList<>();
    private final Map<String, Integer> counts = new HashMap<>();
    public C{i}(int id, String name) {{ this.id = id; this.name = name; }}
    public int compareTo(C{i} o) {{ return Integer.compare(id, o.id); }}
    public void add({dep} d) {{ deps.add(d); counts.merge(d.toString(), 1, Integer::sum); }}
""")
            for m in range(8):
                f.write(f"""    public String m{m}(int x, List<String> xs) {{
        StringBuilder sb = new StringBuilder(name);
        for (int k = 0; k < x; k++) {{ if (k % {m + 2} == 0) sb.append(k).append(':'); else sb.append(xs.get(k % xs.size())); }}
        switch (x & 3) {{ case 0: return sb.toString(); case 1: return sb.reverse().toString(); default: return String.valueOf(sb.length() + {m}); }}
    }}
""")
            f.write(f"    @Override public String toString() {{ return \"C{i}#\" + id + deps.size(); }}\n}}\n")
    return d, sorted(os.path.join(src, f) for f in os.listdir(src))


def javac_path(home):
    """The JDK's javac (a JRE-only home falls back to the one on PATH)."""
    javac = os.path.join(home, "bin", "javac")
    return javac if os.path.exists(javac) else shutil.which("javac")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = sys.argv[2] if len(sys.argv) > 2 else "400"
    nfiles = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    agent = harness.build_agent()
    classes = harness.compile_fixtures()
    home = harness.java_home()
    java = os.path.join(home, "bin", "java")
    work = os.path.dirname(classes)
    out = os.path.join(work, "sites.out")
    ap_out = os.path.join(work, "async-profiler")
    ap = harness.async_profiler_lib()
    if not ap:
        print("async-profiler not available (see above): its rows are left out")
    results = {}

    for mode, opts, n in [("exact", "heap=sites,depth=4", rounds),
                          ("sampled", f"heap=sites,depth=4,heapsample={SAMPLE}", str(10 * int(rounds)))]:
        base = LIMIT + [java, "-cp", classes, "AllocBench", "4", n]
        cmd = LIMIT + [java, f"-agentpath:{agent}={opts},file={out}", "-cp", classes, "AllocBench", "4", n]
        results[f"alloc_{mode}"] = harness.compare(f"AllocBench 4 threads x {n}k rounds, {opts}", base, cmd, runs, work)
        if mode == "sampled" and ap:
            apcmd = LIMIT + [java, f"-agentpath:{ap}=start,alloc={SAMPLE},collapsed,file={ap_out}.collapsed",
                             "-cp", classes, "AllocBench", "4", n]
            results["alloc_async_profiler"] = harness.compare(
                f"AllocBench 4 threads x {n}k rounds, async-profiler alloc={SAMPLE}", base, apcmd, runs, work)
            print(f"  sampled heap=sites / async-profiler: "
                  f"{results['alloc_sampled'] / results['alloc_async_profiler']:.3f}")

    javac = javac_path(home)
    d, files = gen_sources(nfiles)
    outdir = os.path.join(d, "classes")
    jbase = LIMIT + [javac, "-d", outdir] + files
    for mode, opts in [("exact", "heap=sites,depth=4"), ("sampled", f"heap=sites,cpu=samples,depth=4,heapsample={SAMPLE}")]:
        cmd = LIMIT + [javac, f"-J-agentpath:{agent}={opts},file={out}", "-d", outdir] + files
        results[f"javac_{mode}"] = harness.compare(f"javac {nfiles} files, {opts}", jbase, cmd, runs, d)
    if ap:
        cmd = LIMIT + [javac, f"-J-agentpath:{ap}=start,event=cpu,interval=10ms,alloc={SAMPLE},jfr,file={ap_out}.jfr",
                       "-d", outdir] + files
        results["javac_async_profiler"] = harness.compare(
            f"javac {nfiles} files, async-profiler cpu + alloc={SAMPLE}", jbase, cmd, runs, d)
        print(f"  sampled heap=sites + cpu=samples / async-profiler: "
              f"{results['javac_sampled'] / results['javac_async_profiler']:.3f}")
    shutil.rmtree(d, ignore_errors=True)
    print("RESULT alloc_sites " + " ".join(f"{k}={v:.3f}" for k, v in results.items()))


if __name__ == "__main__":
    main()
