#!/usr/bin/env python3
"""Benchmark: `hprof-rs histo` on a ~1 GB HotSpot heap dump.

Makes the dump with java-fixtures/HoldObjects.java (scale 3000: 9 M small
objects, 2.1 M objects with byte arrays, 120 k int[1000]) and
`jcmd GC.heap_dump`, reads it once to warm the page cache, then times
`hprof-rs histo` in >= 5 runs. If `hprof-slurp` is available (PATH or
$HPROF_SLURP; e.g. `cargo install hprof-slurp --root <scratch dir>`), it
runs interleaved with ours on the same file and the ratio of medians
(hprof-rs / hprof-slurp) is printed. The dump is deleted afterwards.

Usage: bench/histo.py [runs] [scale]"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TARGET_S = 0.53  # hprof-slurp's time on this machine (2 cores)


def make_dump(classes, scale, path):
    java = os.path.join(harness.java_home(), "bin", "java")
    jcmd = os.path.join(harness.java_home(), "bin", "jcmd")
    p = subprocess.Popen([java, "-Xmx3g", "-XX:+UseParallelGC", "-cp", classes, "HoldObjects", str(scale)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().strip()
        if line != "ready":
            sys.exit(f"fixture did not start: {line!r}")
        subprocess.run([jcmd, str(p.pid), "GC.heap_dump", path], check=True, capture_output=True)
    finally:
        p.stdin.close()
        p.wait()


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    scale = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    tool = harness.build_tool()
    classes = harness.compile_fixtures()
    work = tempfile.mkdtemp(prefix="hprof-bench-histo-")
    dump = os.path.join(work, "big.hprof")
    try:
        make_dump(classes, scale, dump)
        size = os.path.getsize(dump)
        print(f"dump: {size / 2**20:.0f} MiB ({dump})")
        ours = [tool, "histo", dump]
        slurp = os.environ.get("HPROF_SLURP") or shutil.which("hprof-slurp")
        if slurp:
            ratio = harness.compare("histo (baseline = hprof-slurp, 'agent' = hprof-rs histo)",
                                    [slurp, dump], ours, runs, work)
            print(f"hprof-rs histo / hprof-slurp = {ratio:.3f} (target <= 1.0)")
        else:
            harness.timed(ours, work)
            times = [harness.timed(ours, work) for _ in range(runs)]
            med = statistics.median(times)
            print(f"hprof-rs histo: median {med:.3f} s over {runs} runs {harness.fmt(times)}; "
                  f"{size / med / 2**30:.2f} GiB/s; target {TARGET_S} s (hprof-slurp not found)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(classes, ignore_errors=True)


if __name__ == "__main__":
    main()
