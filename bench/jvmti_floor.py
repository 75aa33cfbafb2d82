#!/usr/bin/env python3
"""What the JVM alone charges for the JVMTI mechanisms heap=sites and
heap=dump are built on, next to what hprof-rs costs, in the same runs.

The probe agent bench/jvmti-floor (libjvmti_floor.so) does only the JVM-side
work of a profile and keeps nothing: no tables, no output. Its options:
`event` = SampledObjectAlloc for every allocation (interval 0), empty
callback; `stack` = GetStackTrace of 4 frames per allocation; `tag` =
SetTag on every allocated object; `free` = ObjectFree events; `walk` = on
JVMTI.data_dump, a full GC and FollowReferences tagging every reachable
object and reading every primitive value (what a heap dump must see).

Part 1, allocation sites: AllocBench (4 threads) and javac, each without
an agent, under each probe level, and under hprof-rs heap=sites,depth=4
(exact mode), interleaved; medians and ratios to no agent. The row
`event,stack,tag,free` is the floor of exact tracking as issue #3 specifies
it (allocation events + stacks + tags + ObjectFree): no agent built on
those mechanisms can cost less.

Part 2, heap dump: HeapBench (~mb MB live) under the probe's `walk`, timed
against `jcmd GC.heap_dump` in the same JVM, with the RSS growth of the
walk (the JVMTI tag map), as bench/heap_dump.py does for hprof-rs.

Usage: bench/jvmti_floor.py [runs=5] [alloc-rounds-in-thousands=200]
[javac-files=300] [mb=1024] [parts=alloc,javac,dump]
(HPROF_TEST_JDK=<java home> selects the JDK, as for the other benchmarks.)"""
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import alloc_sites  # noqa: E402
import heap_dump  # noqa: E402

LEVELS = ["event", "event,stack", "event,tag,free", "event,stack,tag,free"]


def build_probe():
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "jvmti-floor"], cwd=harness.ROOT, check=True)
    return os.path.join(harness.ROOT, "target", "release", "libjvmti_floor.so")


def ladder(name, base, variants, runs, cwd):
    """variants: [(label, cmd)]; base: the command without an agent."""
    harness.timed(base, cwd)
    times = {label: [] for label, _ in [("no agent", base)] + variants}
    for _ in range(runs):
        times["no agent"].append(harness.timed(base, cwd))
        for label, cmd in variants:
            times[label].append(harness.timed(cmd, cwd))
    mb = statistics.median(times["no agent"])
    print(f"{name} ({runs} interleaved runs, medians)")
    for label, xs in times.items():
        m = statistics.median(xs)
        print(f"  {label:<34} {m:7.3f} s  {m / mb:6.1f}x   {harness.fmt(xs)}")


def disposal_seconds(stderr_chunks):
    m = re.search(r"disposed in (\d+) ms", "".join(stderr_chunks))
    return int(m.group(1)) / 1000 if m else 0.0


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = sys.argv[2] if len(sys.argv) > 2 else "200"
    nfiles = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    mb = int(sys.argv[4]) if len(sys.argv) > 4 else 1024
    parts = (sys.argv[5] if len(sys.argv) > 5 else "alloc,javac,dump").split(",")
    agent = harness.build_agent()
    probe = build_probe()
    classes = harness.compile_fixtures()
    home = harness.java_home()
    java = os.path.join(home, "bin", "java")
    work = os.path.dirname(classes)
    out = os.path.join(work, "sites.out")

    if "alloc" in parts:
        alloc_ladder(java, agent, probe, classes, rounds, out, runs, work)
    if "javac" in parts:
        javac_ladder(home, agent, probe, nfiles, out, runs)
    if "dump" in parts:
        dump_floor(agent, probe, classes, home, mb, runs)


def probe_variants(launcher, agent_flag, probe, agent, out, app):
    """Each probe level, then hprof-rs exact heap=sites, as commands;
    `agent_flag` is "-agentpath:" (java) or "-J-agentpath:" (javac)."""
    limit = alloc_sites.LIMIT
    variants = [(f"probe {lv}", limit + [launcher, f"{agent_flag}{probe}={lv}"] + app) for lv in LEVELS]
    variants.append(("hprof-rs heap=sites,depth=4", limit + [launcher, f"{agent_flag}{agent}=heap=sites,depth=4,file={out}"] + app))
    return variants


def alloc_ladder(java, agent, probe, classes, rounds, out, runs, work):
    app = ["-cp", classes, "AllocBench", "4", rounds]
    variants = probe_variants(java, "-agentpath:", probe, agent, out, app)
    ladder(f"AllocBench 4 threads x {rounds}k rounds", alloc_sites.LIMIT + [java] + app, variants, runs, work)


def javac_ladder(home, agent, probe, nfiles, out, runs):
    javac = alloc_sites.javac_path(home)
    d, files = alloc_sites.gen_sources(nfiles)
    args = ["-d", os.path.join(d, "classes")] + files
    variants = probe_variants(javac, "-J-agentpath:", probe, agent, out, args)
    ladder(f"javac {nfiles} files", alloc_sites.LIMIT + [javac] + args, variants, runs, d)
    shutil.rmtree(d, ignore_errors=True)


def dump_floor(agent, probe, classes, home, mb, runs):
    tmp = os.path.join(harness.ROOT, "target", "bench-heap-dump")
    os.makedirs(tmp, exist_ok=True)
    rows = [heap_dump.one_run(agent, classes, home, mb, tmp, f"-agentpath:{probe}=walk") for _ in range(runs)]
    # jcmd returns once the probe has also disposed of its scratch
    # environment, which hprof-rs does in the background: take that out.
    walk = [r.ours - disposal_seconds(r.stderr) for r in rows]
    hs, growth = [r.hotspot for r in rows], [r.growth for r in rows]
    mw, mh, g = statistics.median(walk), statistics.median(hs), statistics.median(growth)
    print(f"heap of ~{mb} MB live data ({runs} runs: HotSpot's dump, then the probe's walk, in each JVM; medians)")
    print(f"  probe walk (jcmd, GC + FollowReferences, tags, no output): {mw:.2f} s  {harness.fmt(walk)}")
    print(f"  HotSpot jcmd GC.heap_dump (GC + walk + file):        {mh:.2f} s  {harness.fmt(hs)}")
    print(f"  ratio walk/HotSpot dump: {mw / mh:.2f}")
    print(f"  peak RSS growth during the walk: {g / 2**20:.0f} MiB = {100 * g / (mb << 20):.1f}% of the live heap"
          f"  {[round(x / 2**20) for x in growth]} MiB")
    report = [line.strip() for line in "".join(rows[-1].stderr).splitlines() if "floor walk" in line]
    gb, ga = [r.gc_before for r in rows], [r.gc_after for r in rows]
    print(f"  full GC just before the walk: {statistics.median(gb):.2f} s, just after: {statistics.median(ga):.2f} s")
    print(f"  probe's report (last run): {report[-1] if report else '-'}")


if __name__ == "__main__":
    main()
