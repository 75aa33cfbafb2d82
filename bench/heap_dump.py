#!/usr/bin/env python3
"""Benchmark of heap=dump: time and memory of our binary heap dump vs
HotSpot's own dumper (`jcmd <pid> GC.heap_dump`) on the same heap, in the
same JVM run.

Each run starts the HeapBench fixture (about `mb` MB of live data, -Xmx3g,
so binary 1.0.2 with segments) under the agent with `heap=dump,format=b,
doe=n`, waits until the heap is built, then takes both dumps, HotSpot's
first, with `jcmd GC.heap_dump` (a full GC first, as ours does with
gcbeforedump=y), then ours with `jcmd JVMTI.data_dump` (done when the agent
prints " done."). Before each dump, `sync`: without it the second dump of
a run waited for the first one's ~1 GiB of dirty pages to be written back,
which added up to 6 s to HotSpot's dump when it came second and, with the order
alternating, made earlier ratios look better than they were. Whether our
dump leaves work behind for the VM is checked by timing a `jcmd GC.run`
just before and just after it. Memory of our dump: the peak RSS (VmHWM,
reset to the current RSS through /proc/<pid>/clear_refs just before the
dump) minus the RSS before it, cross-checked by a thread sampling VmRSS
every 5 ms while the dump runs (jcmd returns only when the dump is done,
so sampling must not wait for it); this is the agent's memory for the dump,
the VM's JVMTI tag map included. Reported: medians of N runs, the
ratio ours/HotSpot (target <= 1.0), MiB/s of each, and RSS growth as a
fraction of the live heap (target < 15%).

If hprof-slurp (`cargo install hprof-slurp`; or HPROF_SLURP=<path>) is
installed, both files of the last run are read with it and the instance
counts of the workload's classes compared (skipped otherwise).

Usage: bench/heap_dump.py [runs=5] [mb=1024]"""
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kb(pid):
    return status_kb(pid, "VmRSS")


def cleanup_running(pid):
    """True while the agent's "HPROF heap dump cleanup" thread (dropping
    the dump's tags after the dump) is alive."""
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                if f.read().startswith("HPROF heap dump"):
                    return True
        except OSError:
            pass
    return False


def reset_peak(pid):
    """Reset VmHWM to the current RSS (Linux >= 4.0); False if refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


# One JVM's measurements (seconds, bytes); `stderr`: the agent's output in
# chunks, each ending at a " done." line.
Run = collections.namedtuple("Run", "ours hotspot growth size_ours size_hs sampled retained release stderr gc_before gc_after")


def one_run(agent, classes, jdk, mb, tmp, agent_arg=None):
    """One JVM: HotSpot's dump, then ours (or, with `agent_arg`, another
    agent's response to JVMTI.data_dump that prints " done.")."""
    out = os.path.join(tmp, "ours.hprof")
    hs = os.path.join(tmp, "hotspot.hprof")
    for f in (out, hs, os.path.join(tmp, "marker")):
        if os.path.exists(f):
            os.remove(f)
    agent_arg = agent_arg or f"-agentpath:{agent}=heap=dump,format=b,doe=n,file={out}"
    p = subprocess.Popen([os.path.join(jdk, "bin", "java"), "-Xms3g", "-Xmx3g", agent_arg,
                          "-cp", classes, "HeapBench", str(mb), os.path.join(tmp, "marker")],
                         cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    jcmd = os.path.join(jdk, "bin", "jcmd")
    stderr_lines = []
    done = threading.Event()

    def read_err():
        buf = ""
        while True:
            ch = p.stderr.read(1)
            if not ch:
                break
            buf += ch
            if buf.endswith(" done."):
                stderr_lines.append(buf)
                done.set()
                buf = ""
        stderr_lines.append(buf)
    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()

    def ours():
        done.clear()
        before = rss_kb(p.pid)
        hwm_ok = reset_peak(p.pid)
        peak = [before]
        sampling = threading.Event()

        def sample():
            while not sampling.is_set():
                peak[0] = max(peak[0], rss_kb(p.pid))
                time.sleep(0.005)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        subprocess.run([jcmd, str(p.pid), "JVMTI.data_dump"], check=True, capture_output=True)
        done.wait(timeout=600)
        dt = time.perf_counter() - t0
        # The tags are dropped in the background after the dump: wait for
        # that (so HotSpot's dump does not share the CPU with it) and time it.
        t1 = time.perf_counter()
        while cleanup_running(p.pid) and time.perf_counter() - t1 < 120:
            time.sleep(0.01)
        release = time.perf_counter() - t1
        hwm = status_kb(p.pid, "VmHWM") if hwm_ok else 0
        sampling.set()
        sampler.join()
        retained = rss_kb(p.pid) - before
        return dt, (max(peak[0], hwm) - before) * 1024, (peak[0] - before) * 1024, retained * 1024, release

    def hotspot():
        t0 = time.perf_counter()
        subprocess.run([jcmd, str(p.pid), "GC.heap_dump", hs], check=True, capture_output=True)
        return time.perf_counter() - t0

    def full_gc():
        os.sync()
        t0 = time.perf_counter()
        subprocess.run([jcmd, str(p.pid), "GC.run"], check=True, capture_output=True)
        return time.perf_counter() - t0

    os.sync()
    t_hs = hotspot()
    gc_before = full_gc()
    t_ours, growth, sampled, retained, release = ours()
    gc_after = full_gc()
    size_ours = os.path.getsize(out) if os.path.exists(out) else 0
    size_hs = os.path.getsize(hs)
    open(os.path.join(tmp, "marker"), "w").close()
    p.wait(timeout=120)
    reader.join(timeout=10)
    return Run(t_ours, t_hs, growth, size_ours, size_hs, sampled, retained, release, stderr_lines, gc_before, gc_after)


WORKLOAD_CLASSES = ["HeapBench$Item", "int[]", "byte[]", "char[]", "long[]", "java.lang.Object[]"]


def slurp_counts(tool, path, tmp):
    """Instance counts by class name of the 20 classes with most bytes."""
    out = os.path.join(tmp, os.path.basename(path) + ".json")
    subprocess.run([tool, "--top", "20", "--json", "-o", out, path], check=True, capture_output=True)
    with open(out) as f:
        data = json.load(f)
    return {c["class_name"]: c["instance_count"] for c in data["heap"]["top_allocated_classes"]}


def check_with_slurp(tmp):
    tool = os.environ.get("HPROF_SLURP") or shutil.which("hprof-slurp")
    if not tool:
        print("  hprof-slurp not installed: cross-check skipped")
        return
    ours = slurp_counts(tool, os.path.join(tmp, "ours.hprof"), tmp)
    hs = slurp_counts(tool, os.path.join(tmp, "hotspot.hprof"), tmp)
    rows = [f"{c} {ours.get(c)}/{hs.get(c)}" for c in WORKLOAD_CLASSES]
    # The workload's own class must match exactly; arrays may differ by the
    # VM's own few objects made between the two dumps (jcmd, attach).
    exact = ours.get(WORKLOAD_CLASSES[0]) == hs.get(WORKLOAD_CLASSES[0]) is not None
    close = all(ours.get(c) and hs.get(c) and abs(ours[c] - hs[c]) <= max(5, hs[c] // 1000) for c in WORKLOAD_CLASSES)
    verdict = "agree" if exact and close else "DISAGREE"
    print(f"  hprof-slurp instance counts ours/HotSpot (last run): {', '.join(rows)}: {verdict}")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    mb = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    agent = harness.build_agent()
    classes = harness.compile_fixtures()
    jdk = harness.java_home()
    tmp = os.path.join(harness.ROOT, "target", "bench-heap-dump")
    os.makedirs(tmp, exist_ok=True)
    rows = [one_run(agent, classes, jdk, mb, tmp) for _ in range(runs)]
    ours = [r.ours for r in rows]
    hs = [r.hotspot for r in rows]
    growth = [r.growth for r in rows]
    mo, mh = statistics.median(ours), statistics.median(hs)
    so, sh = rows[-1].size_ours, rows[-1].size_hs
    print(f"heap dump of ~{mb} MB live data, {runs} runs (HotSpot's dump, then ours, in each JVM)")
    print(f"  ours (JVMTI heap walk, 1.0.2): median {mo:.2f} s, {so / 2**20:.0f} MiB file, {so / 2**20 / mo:.0f} MiB/s  {harness.fmt(ours)}")
    print(f"  HotSpot jcmd GC.heap_dump:     median {mh:.2f} s, {sh / 2**20:.0f} MiB file, {sh / 2**20 / mh:.0f} MiB/s  {harness.fmt(hs)}")
    print(f"  time ratio ours/HotSpot: {mo / mh:.2f} (target <= 1.0)")
    g = statistics.median(growth)
    sampled = [r.sampled for r in rows]
    print(f"  peak RSS growth during our dump: median {g / 2**20:.0f} MiB = {100 * g / (mb << 20):.1f}% of the live heap (target < 15%)"
          f"  {[round(x / 2**20) for x in growth]} MiB (VmHWM; 5 ms samples of VmRSS: {[round(x / 2**20) for x in sampled]} MiB)")
    kept = [r.retained for r in rows]
    check_with_slurp(tmp)
    rel = [r.release for r in rows]
    print(f"  tags dropped in the background after our dump in: median {statistics.median(rel):.2f} s  {harness.fmt(rel)}")
    print(f"  RSS still held after that: median {statistics.median(kept) / 2**20:.0f} MiB  {[round(x / 2**20) for x in kept]} MiB")
    gb, ga = [r.gc_before for r in rows], [r.gc_after for r in rows]
    print(f"  full GC (jcmd GC.run) just before our dump: median {statistics.median(gb):.2f} s {harness.fmt(gb)};"
          f" just after: {statistics.median(ga):.2f} s {harness.fmt(ga)}")


if __name__ == "__main__":
    main()
