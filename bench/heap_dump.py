#!/usr/bin/env python3
"""Benchmark of heap=dump: time and memory of our heap dumps vs HotSpot's
own dumper (`jcmd <pid> GC.heap_dump`) on the same heap.

Each JVM starts the HeapBench fixture (about `mb` MB of live data, -Xmx3g,
so binary 1.0.2 with segments), waits until the heap is built, then takes
two dumps, HotSpot's first in the 1st, 3rd... JVM and ours first in the
2nd, 4th..., with `jcmd GC.heap_dump` (a full GC first, as
ours does with gcbeforedump=y), then the agent's with `jcmd
JVMTI.data_dump` (done when the agent prints " done."). HeapBench builds
the same heap every time, so the JVMs of one run of this script compare:

  vm      heap=dump,format=b (dumper=vm, the default): the VM's dumper,
          its file becoming our output (docs/heap_dump.md);
  copy    the same into a symlink to the output file, which the VM's file
          cannot replace: its heap records copied as they are, by the
          kernel, while the VM writes them;
  text    heap=dump,format=a: the same, serialized as text;
  walk    heap=dump,format=b,dumper=jvmti: the JVMTI walk;
  floor   the probe agent bench/jvmti-floor's `walk` (GC + FollowReferences
          tagging every object, no output): the least any JVMTI walk costs
          (bench/jvmti_floor.py).
  multi   three of our dumps into one output (heap=dump,format=b) and
          three `jcmd GC.heap_dump` in the same JVM, in pairs whose order
          alternates (ours first, then HotSpot's first, ...; the other way
          round in every other JVM), after one
          `jcmd GC.run` that starts the attach listener; the page cache as
          it is (no sync, no drop between them: a user's SIGQUITs do not
          wait for the disk either); prints per dump both times and their
          ratio, the dump as the JVM saw it (HotSpot's own timer, the
          agent's log), the JVM's and our writer's CPU, and the medians.
          Target: every dump of a stream <= 1.1x.

Targets (issue "heap dumps at the VM's cost"): vm <= 1.1x HotSpot's dump
and RSS growth <= 15 % of the live heap; text <= 2.5x HotSpot's binary
dump; walk <= 1.2x the floor.

Every JVM's attach listener is started (`jcmd VM.version`, or `jcmd
GC.run` in `multi`) before the first timed dump: jcmd waits 100 ms or more
for it at a JVM's first attach, which went to whichever dump came first.

Before each dump, `sync`: without it the second dump of a JVM waited for
the first one's ~1 GiB of dirty pages to be written back; and, when the
script runs as root, the page cache is dropped (see `settle`). Whether a dump
leaves work behind for the VM is checked by timing a `jcmd GC.run` just
before and just after it. Memory of a dump: the peak RSS (VmHWM, reset
to the current RSS through /proc/<pid>/clear_refs just before the dump)
minus the RSS before it, cross-checked by a thread sampling VmRSS every
5 ms while the dump runs. The agent runs with logflags=1, so the phases
of each dump (the VM's dump, the copy after it; or GC, walk, writer) are
printed from its log.

If hprof-slurp (`cargo install hprof-slurp`; or HPROF_SLURP=<path>) is
installed, the vm mode's last JVM's two files (HotSpot's and ours) are
read with it and the instance counts of the workload's classes compared
(skipped otherwise).

Usage: bench/heap_dump.py [runs=3] [mb=1024] [modes=vm,copy,text,walk,floor]
(`multi` is not in the default set: bench/heap_dump.py 1 200 multi.)
(HPROF_TEST_JDK=<java home> selects the JDK; HEAP_BENCH_AGENT=<libhprof_rs.so>
another build of the agent, e.g. an earlier commit's, instead of this
checkout's.)"""
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


def settle():
    """Before each timed dump: write dirty pages back and, when allowed
    (root), drop the page cache, so that both dumps start from the same
    state. With the previous dump's 1.2 GB still cached, the next dump's
    page-cache writes cost up to twice the CPU on a small VM (measured:
    our VM-dumper path 2.3-3.0 s with the cache full, 1.55-1.63 s after
    dropping it; HotSpot's dump 1.22-1.39 s either way)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")
    except OSError:
        pass


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


def one_run(agent, classes, jdk, mb, tmp, agent_arg=None, out_name="ours.hprof", ours_first=False):
    """One JVM: HotSpot's dump, then ours (or, with `agent_arg`, another
    agent's response to JVMTI.data_dump that prints " done."), written to
    `out_name` in `tmp`."""
    out = os.path.join(tmp, out_name)
    hs = os.path.join(tmp, "hotspot.hprof")
    for f in (out, hs, os.path.join(tmp, "marker")):
        if os.path.exists(f) and not os.path.islink(f):
            os.remove(f)
    agent_arg = agent_arg or f"-agentpath:{agent}=heap=dump,format=b,doe=n,file={out}"
    p = subprocess.Popen([os.path.join(jdk, "bin", "java"), "-Xms3g", "-Xmx3g", agent_arg,
                          "-cp", classes, "HeapBench", str(mb), os.path.join(tmp, "marker")],
                         cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    jcmd = os.path.join(jdk, "bin", "jcmd")
    # The JVM's first attach starts its attach listener, which jcmd waits
    # for (sleeping 100 ms or more): not part of either dump.
    subprocess.run([jcmd, str(p.pid), "VM.version"], check=True, capture_output=True)
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
        if SAMPLE_RSS:
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
        if SAMPLE_RSS:
            sampler.join()
        retained = rss_kb(p.pid) - before
        return dt, (max(peak[0], hwm) - before) * 1024, (peak[0] - before) * 1024, retained * 1024, release

    def hotspot():
        t0 = time.perf_counter()
        subprocess.run([jcmd, str(p.pid), "GC.heap_dump", hs], check=True, capture_output=True)
        return time.perf_counter() - t0

    def full_gc():
        settle()
        t0 = time.perf_counter()
        subprocess.run([jcmd, str(p.pid), "GC.run"], check=True, capture_output=True)
        return time.perf_counter() - t0

    # The first dump of a JVM tends to be the slowest (HotSpot's varied
    # most, 1.6-3.0 s on JDK 17): every other JVM takes ours first, so
    # neither side always pays for it.
    if ours_first:
        settle()
        t_ours, growth, sampled, retained, release = ours()
        gc_before = full_gc()
        settle()
        t_hs = hotspot()
        gc_after = full_gc()
    else:
        settle()
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


def multi_run(agent, classes, jdk, mb, tmp, dumps=3, ours_first=True):
    """One JVM: `dumps` of ours into one output and as many `jcmd
    GC.heap_dump`, in pairs whose order alternates (with `ours_first` ours
    first in the 1st, 3rd... pair, HotSpot's first in the others; the other
    way round without), the page cache as it is.
    Each is timed the same way: from the start of its `jcmd` to its end
    (ours: `jcmd JVMTI.data_dump`, whose DataDumpRequest the agent answers
    before jcmd returns; " done." on the agent's stderr is waited for too).
    A `jcmd GC.run` first starts the VM's attach listener (the first attach
    of a JVM waits for it: jcmd sleeps 100 ms or more) and collects, so
    neither side's first dump pays for that. Returns one dict per dump."""
    out = os.path.join(tmp, "multi.hprof")
    marker = os.path.join(tmp, "marker")
    for f in [out, marker] + [os.path.join(tmp, f"hotspot{k}.hprof") for k in range(dumps)]:
        if os.path.exists(f):
            os.remove(f)
    arg = f"-agentpath:{agent}=heap=dump,format=b,doe=n,logflags=1,file={out}"
    p = subprocess.Popen([os.path.join(jdk, "bin", "java"), "-Xms3g", "-Xmx3g", arg,
                          "-cp", classes, "HeapBench", str(mb), marker],
                         cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    jcmd = os.path.join(jdk, "bin", "jcmd")
    phases = []
    done = threading.Semaphore(0)

    def read_err():
        buf = ""
        while True:
            ch = p.stderr.read(1)
            if not ch:
                break
            buf += ch
            if buf.endswith(" done."):
                done.release()
            if ch == "\n":
                if "heap dump phases" in buf:
                    phases.append(buf.strip())
                buf = ""
    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    subprocess.run([jcmd, str(p.pid), "GC.run"], check=True, capture_output=True)

    def ours():
        c0, w0, t0 = process_cpu(p.pid), writer_cpu(p.pid), time.perf_counter()
        subprocess.run([jcmd, str(p.pid), "JVMTI.data_dump"], check=True, capture_output=True)
        assert done.acquire(timeout=600), "our dump never finished"
        t = time.perf_counter() - t0
        return t, process_cpu(p.pid) - c0, writer_cpu(p.pid) - w0

    def hotspot(k):
        path = os.path.join(tmp, f"hotspot{k}.hprof")
        c0, t0 = process_cpu(p.pid), time.perf_counter()
        r = subprocess.run([jcmd, str(p.pid), "GC.heap_dump", path], check=True,
                           capture_output=True, text=True)
        t = time.perf_counter() - t0
        cpu = process_cpu(p.pid) - c0
        os.remove(path)
        # HotSpot's own timer: "Heap dump file created [N bytes in 0.560 secs]".
        inside = float(r.stdout.rsplit(" in ", 1)[1].split()[0]) if " in " in r.stdout else None
        return t, cpu, inside

    rows = []
    for k in range(dumps):
        first = (k % 2 == 0) == ours_first
        if first:
            o, h = ours(), hotspot(k)
        else:
            h = hotspot(k)
            o = ours()
        rows.append({"ours": o[0], "cpu_ours": o[1], "writer": o[2],
                     "hs": h[0], "cpu_hs": h[1], "hs_inside": h[2], "ours_first": first})
    open(marker, "w").close()
    p.wait(timeout=120)
    reader.join(timeout=10)
    for row, line in zip(rows, phases):
        row["phases"] = line
        # "the VM's dump 0.43 s, done 0.01 s after it": our dump as the
        # JVM sees it, from the agent's dump call to its end.
        try:
            vm = float(line.split("the VM's dump ", 1)[1].split()[0])
            after = float(line.split("done ", 1)[1].split()[0])
            row["ours_inside"] = vm + after
        except (IndexError, ValueError):
            row["ours_inside"] = None
    return rows


def process_cpu(pid):
    """CPU seconds (user + system, every thread) the process used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def writer_cpu(pid):
    """CPU seconds the agent's writer thread ("hprof-writer") used so far
    (the scheduler's nanosecond account)."""
    total = 0.0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                if f.read().strip() != "hprof-writer":
                    continue
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0]) / 1e9
        except OSError:
            pass
    return total


def load():
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def multi(agent, classes, jdk, mb, tmp, runs):
    """The `multi` mode: see the module documentation."""
    print(f"three dumps into one output, ~{mb} MB live data (HeapBench), JDK {jdk};"
          " in each JVM ours and `jcmd GC.heap_dump` in pairs, alternating which goes first"
          " (and which goes first in the first pair between JVMs),"
          f" page cache as it is; load average {load()} (1/5/15 min)")
    print("  wall: from the start of each jcmd to its end (ours: jcmd JVMTI.data_dump);"
          " inside: HotSpot's own timer vs the agent's (its dump call to its end), without jcmd's start-up")
    all_rows = []
    for r in range(runs):
        # Which goes first in a JVM's first pair alternates between JVMs.
        rows = multi_run(agent, classes, jdk, mb, tmp, ours_first=r % 2 == 0)
        all_rows.extend(rows)
        print(f"  JVM {r + 1}:")
        for k, x in enumerate(rows):
            inside = ""
            if x.get("ours_inside") and x["hs_inside"]:
                inside = (f"; inside {x['hs_inside']:.2f} / {x['ours_inside']:.2f} s,"
                          f" ratio {x['ours_inside'] / x['hs_inside']:.2f}")
            print(f"    dump {k + 1} ({'ours' if x['ours_first'] else 'jcmd'} first): jcmd {x['hs']:.2f} s,"
                  f" ours {x['ours']:.2f} s, ratio {x['ours'] / x['hs']:.2f}{inside};"
                  f" the JVM's CPU {x['cpu_hs']:.2f} / {x['cpu_ours']:.2f} s (our writer {x['writer']:.2f} s)")
        for x in rows:
            print(f"      {x.get('phases', '')}")
        size = os.path.getsize(os.path.join(tmp, "multi.hprof"))
        print(f"    output: {size / 2**20:.0f} MiB")
    print(f"  medians over {len(all_rows)} dumps (load average now {load()}):")
    for k in range(3):
        rows = all_rows[k::3]
        hs, ours = statistics.median(x["hs"] for x in rows), statistics.median(x["ours"] for x in rows)
        paired = statistics.median(x["ours"] / x["hs"] for x in rows)
        print(f"    dump {k + 1} of a stream: jcmd {hs:.2f} s, ours {ours:.2f} s, ratio {ours / hs:.2f}"
              f" (paired ratios' median {paired:.2f})")
    hs = statistics.median(x["hs"] for x in all_rows)
    ours = statistics.median(x["ours"] for x in all_rows)
    print(f"    every dump: jcmd {hs:.2f} s, ours {ours:.2f} s, ratio {ours / hs:.2f}; worst paired ratio"
          f" {max(x['ours'] / x['hs'] for x in all_rows):.2f}")
    inside = [x for x in all_rows if x.get("ours_inside") and x["hs_inside"]]
    if inside:
        hi = statistics.median(x["hs_inside"] for x in inside)
        oi = statistics.median(x["ours_inside"] for x in inside)
        print(f"    inside the JVM: HotSpot's {hi:.2f} s, ours {oi:.2f} s, ratio {oi / hi:.2f}")
    cpu_hs = statistics.median(x["cpu_hs"] for x in all_rows)
    cpu_ours = statistics.median(x["cpu_ours"] for x in all_rows)
    print(f"    the JVM's CPU: jcmd's dump {cpu_hs:.2f} s, ours {cpu_ours:.2f} s, ratio {cpu_ours / cpu_hs:.2f}"
          " (what a dump costs a machine with no idle core)")
    print("  target: every dump of a stream <= 1.1x jcmd GC.heap_dump (median of three in one JVM)")


# The 5 ms RSS sampler (a cross-check of VmHWM) runs beside our dump only,
# taking CPU from it on a small machine: off unless HEAP_BENCH_SAMPLE_RSS=1.
SAMPLE_RSS = os.environ.get("HEAP_BENCH_SAMPLE_RSS") == "1"

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
    hs = slurp_counts(tool, os.path.join(tmp, "hotspot_vm.hprof"), tmp)
    rows = [f"{c} {ours.get(c)}/{hs.get(c)}" for c in WORKLOAD_CLASSES]
    # The workload's own class must match exactly; arrays may differ by the
    # VM's own few objects made between the two dumps (jcmd, attach).
    exact = ours.get(WORKLOAD_CLASSES[0]) == hs.get(WORKLOAD_CLASSES[0]) is not None
    # Arrays may differ by what the agent's first dump leaves live: on JDK
    # 11, where it looks the MXBean up, the platform MBean providers and
    # their strings (docs/heap_dump.md, "How the dumper is called").
    close = all(ours.get(c) and hs.get(c) and abs(ours[c] - hs[c]) <= max(500, hs[c] // 1000) for c in WORKLOAD_CLASSES)
    verdict = "agree" if exact and close else "DISAGREE"
    print(f"  hprof-slurp instance counts ours/HotSpot (last run): {', '.join(rows)}: {verdict}")


def phase_lines(run):
    """The agent's logflags=1 account of its dump's phases."""
    return [line.strip() for line in "".join(run.stderr).splitlines()
            if "heap dump phases" in line or "floor walk" in line]


def mib(x):
    return f"{x / 2**20:.0f} MiB"


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    mb = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    modes = (sys.argv[3] if len(sys.argv) > 3 else "vm,copy,text,walk,floor").split(",")
    # Another build of the agent (an earlier commit's, to compare), else
    # this checkout's.
    agent = os.environ.get("HEAP_BENCH_AGENT") or harness.build_agent()
    classes = harness.compile_fixtures()
    jdk = harness.java_home()
    tmp = os.path.join(harness.ROOT, "target", "bench-heap-dump")
    os.makedirs(tmp, exist_ok=True)
    import jvmti_floor  # noqa: E402 (it imports this module)
    probe = jvmti_floor.build_probe() if "floor" in modes else None
    if "multi" in modes:
        multi(agent, classes, jdk, mb, tmp, runs)
        modes = [m for m in modes if m != "multi"]
        if not modes:
            return
    opts = {
        "vm": ("heap=dump,format=b", "ours.hprof"),
        "copy": ("heap=dump,format=b", "link.hprof"),
        "text": ("heap=dump,format=a", "ours.txt"),
        "walk": ("heap=dump,format=b,dumper=jvmti", "walk.hprof"),
    }
    results = {}
    for mode in modes:
        rows = []
        for _ in range(runs):
            if mode == "floor":
                r = one_run(agent, classes, jdk, mb, tmp, f"-agentpath:{probe}=walk", "floor.none")
                # jcmd returns once the probe has also disposed of its
                # scratch environment, which hprof-rs does in the
                # background: take that out.
                r = r._replace(ours=r.ours - jvmti_floor.disposal_seconds(r.stderr))
            else:
                o, name = opts[mode]
                if mode == "copy":
                    link = os.path.join(tmp, name)
                    for f in (link, os.path.join(tmp, "copied.hprof")):
                        if os.path.lexists(f):
                            os.remove(f)
                    os.symlink(os.path.join(tmp, "copied.hprof"), link)
                arg = f"-agentpath:{agent}={o},doe=n,logflags=1,file={os.path.join(tmp, name)}"
                r = one_run(agent, classes, jdk, mb, tmp, arg, name, ours_first=len(rows) % 2 == 1)
                if mode == "text":
                    os.remove(os.path.join(tmp, name))
                if mode == "vm":
                    # HotSpot's dump of the same JVM, for hprof-slurp.
                    os.replace(os.path.join(tmp, "hotspot.hprof"), os.path.join(tmp, "hotspot_vm.hprof"))
            rows.append(r)
        results[mode] = rows

    print(f"heap dumps of ~{mb} MB live data (HeapBench), JDK {jdk}, {runs} JVM(s) per mode;"
          " HotSpot's dump and the agent's in each JVM, alternating which goes first; medians")
    med = {}
    for mode, rows in results.items():
        t = [r.ours for r in rows]
        hs = [r.hotspot for r in rows]
        g = [r.growth for r in rows]
        mt, mh, mg = statistics.median(t), statistics.median(hs), statistics.median(g)
        med[mode] = (mt, mh)
        size = rows[-1].size_ours
        rate = f", {size / 2**20:.0f} MiB file, {size / 2**20 / mt:.0f} MiB/s" if size else ""
        print(f"  {mode:5}: {mt:6.2f} s{rate}  {harness.fmt(t)}")
        print(f"         HotSpot's dump in the same JVMs {mh:.2f} s ({rows[-1].size_hs / 2**20:.0f} MiB)"
              f"  {harness.fmt(hs)}; ratio {mt / mh:.2f}")
        print(f"         peak RSS growth {mib(mg)} = {100 * mg / (mb << 20):.1f}% of the live heap"
              f"  {[round(x / 2**20) for x in g]} MiB (5 ms samples: {[round(r.sampled / 2**20) for r in rows]} MiB)")
        gb, ga = [r.gc_before for r in rows], [r.gc_after for r in rows]
        print(f"         full GC just before: {statistics.median(gb):.2f} s, just after: {statistics.median(ga):.2f} s")
        for line in phase_lines(rows[-1])[-1:]:
            print(f"         {line}")
    print("  targets:")
    for m in ("vm", "copy"):
        if m in med:
            mt, mh = med[m]
            g = statistics.median([r.growth for r in results[m]])
            print(f"    VM dumper path ({m}) / jcmd GC.heap_dump: {mt / mh:.2f} (target <= 1.1)")
            print(f"    RSS growth during it: {100 * g / (mb << 20):.1f}% of the heap (target <= 15%)")
    if "text" in med:
        mt, mh = med["text"]
        print(f"    text dump / HotSpot's binary dump: {mt / mh:.2f} (target <= 2.5)")
    if "walk" in med and "floor" in med:
        print(f"    walk / its floor (probe walk): {med['walk'][0] / med['floor'][0]:.2f} (target <= 1.2)")
    if "vm" in results:
        check_with_slurp(tmp)


if __name__ == "__main__":
    main()
