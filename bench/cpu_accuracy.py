#!/usr/bin/env python3
"""Accuracy of cpu=samples beside async-profiler, in one session.

Runs async-profiler (`event=cpu`, 1 ms of CPU per sample) and our agent
(`cpu=samples,interval=1`) on the same programs, alternately, and prints
for each program the top-10 methods by self share (the share of samples
whose top Java frame is that method) side by side, with the difference,
and the share of samples each profiler lost (walks that failed).

Programs:
  inlined  java-fixtures/InlinedWork: a loop calling two small inlined
           methods with 3:1 work
  rhino    Debian's Rhino (/usr/share/java/js.jar) running bench/raytrace.js
  javac    javac compiling generated sources

Target (issue 27): each of the top 10 within 2 points or 15 % of
async-profiler's share; at most 2 % of samples lost.

async-profiler is a measuring reference, not part of the project: the
script takes a build of it through harness.async_profiler()
($ASYNC_PROFILER_HOME, else .cache/async-profiler, built there from its
public source when missing) and stops with a message when there is none.

Usage: bench/cpu_accuracy.py [--rounds N] [--only inlined,rhino,javac]
                             [--agent PATH] [--before PATH]
  --agent   our agent library (default: built here, release)
  --before  another build of our agent, shown as a third column (for
            before/after figures)
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RHINO_JAR = "/usr/share/java/js.jar"
# Frames async-profiler marks as Java (`ann`): JIT-compiled, inlined,
# interpreted, C1-compiled.
AP_JAVA = ("_[j]", "_[i]", "_[0]", "_[1]")
TOP = 10


def find_async_profiler():
    lib = harness.async_profiler_lib()
    if lib is None:
        sys.exit("This benchmark compares with async-profiler and cannot run without it (see above).")
    return lib


def generate_sources(root, n):
    """`n` Java sources that depend on each other (generics, lambdas,
    switches, exceptions, inner classes, varargs)."""
    os.makedirs(os.path.join(root, "gen"), exist_ok=True)
    files = []
    for i in range(n):
        prev = "Object" if i == 0 else f"C{i - 1}"
        path = os.path.join(root, "gen", f"C{i}.java")
        with open(path, "w") as f:
            f.write(f"""package gen;
import java.util.*;
import java.util.function.*;
public class C{i} {{
    private final List<String> names = new ArrayList<>();
    static int sum(int... xs) {{ int s = 0; for (int x : xs) s += x; return s; }}
    int kind(Object o) {{
        if (o instanceof String) return 1;
        switch (names.size() % 4) {{ case 0: return 2; case 1: return 3; default: return {i}; }}
    }}
    <T extends Comparable<T>> T max(List<T> xs) {{
        T best = null;
        for (T x : xs) if (best == null || x.compareTo(best) > 0) best = x;
        return best;
    }}
    int guarded(String s) {{
        try {{ return Integer.parseInt(s); }} catch (NumberFormatException e) {{ return -{i}; }} finally {{ names.add(s); }}
    }}
    class Inner {{ int v = sum(1, 2, {i}); }}
    Function<Integer, Integer> f = x -> x + {i};
    {prev} link;
}}
""")
        files.append(path)
    return files


def has_module(java, module):
    out = subprocess.run([java, "--list-modules"], capture_output=True, text=True).stdout
    return any(line.startswith(module + "@") for line in out.splitlines())


class Profile:
    """Samples by top Java method, pooled over rounds, and lost samples."""

    def __init__(self):
        self.by_method = collections.Counter()
        self.counted = 0
        self.lost = 0

    def share(self, m):
        return 100.0 * self.by_method[m] / self.counted if self.counted else 0.0

    def lost_share(self):
        n = self.counted + self.lost
        return 100.0 * self.lost / n if n else 0.0


def read_async_profiler(path, into):
    """Collapsed stacks with `ann`: the top frame marked as Java is the
    sample's method. Samples without a Java frame that carry one of
    async-profiler's walk errors (`[unknown]`, `[break_...]`, ...) are its
    lost samples; others (threads in JVM code only) are not Java's."""
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not n.isdigit():
            continue
        n = int(n)
        frames = stack.split(";")
        top = next((f for f in reversed(frames) if f.endswith(AP_JAVA)), None)
        if top is not None:
            into.by_method[top[:-4].replace("/", ".")] += n
            into.counted += n
        elif any(f.startswith("[") and ("unknown" in f or "break" in f or "walkable" in f) for f in frames):
            into.lost += n


LOST_LINE = re.compile(r"^(?:CPU SAMPLES LOST|HPROF: cpu=samples).*?(\d+) samples counted, (\d+) not counted", re.M)


def read_ours(path, stderr, into):
    """Our CPU SAMPLES section: rows by top frame; lost samples from the
    report's line about them (or, from older builds, the exit line on
    standard error)."""
    text = open(path).read()
    start = text.index("CPU SAMPLES BEGIN")
    section = text[start:text.index("CPU SAMPLES END", start)]
    total = int(re.search(r"total = (\d+)", section).group(1))
    for m in re.finditer(r"^\s*\d+\s+\S+%\s+\S+%\s+(\d+)\s+\d+\s+(\S+)$", section, re.M):
        into.by_method[m.group(2)] += int(m.group(1))
    into.counted += total
    m = LOST_LINE.search(text) or LOST_LINE.search(stderr)
    if m:
        into.lost += int(m.group(2))


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"run failed: {' '.join(cmd)}\n{p.stderr[-4000:]}")
    return p.stderr


def measure(name, program, rounds, ap_lib, agents, work):
    """Alternate async-profiler and each of our builds, `rounds` times."""
    ap = Profile()
    ours = {label: Profile() for label, _ in agents}
    for r in range(rounds):
        out = os.path.join(work, f"{name}-ap-{r}.collapsed")
        run(["java", f"-agentpath:{ap_lib}=start,event=cpu,interval=1ms,ann,collapsed,file={out}"] + program, work)
        read_async_profiler(out, ap)
        for label, lib in agents:
            out = os.path.join(work, f"{name}-{label}-{r}.txt")
            err = run(["java", f"-agentpath:{lib}=cpu=samples,interval=1,depth=8,verbose=y,file={out}"] + program,
                      work)
            read_ours(out, err, ours[label])
    return ap, ours


def table(name, ap, ours):
    labels = list(ours)
    head = f"{'method':<64} {'a-p %':>6}" + "".join(f" {label + ' %':>9} {'diff':>6}" for label in labels)
    print(f"\n== {name}: self share of samples, top {TOP} by async-profiler "
          f"(async-profiler {ap.counted} samples; "
          + ", ".join(f"{label} {o.counted}" for label, o in ours.items()) + ")")
    print(head)
    within = {label: 0 for label in labels}
    worst = {label: 0.0 for label in labels}
    for m, _ in ap.by_method.most_common(TOP):
        a = ap.share(m)
        row = f"{m[-64:]:<64} {a:6.1f}"
        for label in labels:
            o = ours[label].share(m)
            d = o - a
            ok = abs(d) <= 2.0 or (a > 0 and abs(d) / a <= 0.15)
            within[label] += ok
            worst[label] = max(worst[label], abs(d))
            row += f" {o:9.1f} {d:+6.1f}{'' if ok else '!'}"
        print(row)
    print(f"{'lost (walks that failed)':<64} {ap.lost_share():6.1f}"
          + "".join(f" {ours[label].lost_share():9.1f} {'':>6}" for label in labels))
    for label in labels:
        print(f"{name} [{label}]: {within[label]} of {min(TOP, len(ap.by_method))} within 2 points or 15 %, "
              f"largest difference {worst[label]:.1f} points, lost {ours[label].lost_share():.1f} % "
              f"(async-profiler: lost {ap.lost_share():.1f} %)")


def main():
    ap_args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap_args.add_argument("--rounds", type=int, default=2)
    ap_args.add_argument("--only", default="inlined,rhino,javac")
    ap_args.add_argument("--agent")
    ap_args.add_argument("--before")
    ap_args.add_argument("--inlined-seconds", default="6")
    ap_args.add_argument("--rhino-frames", default="6")
    ap_args.add_argument("--javac-files", type=int, default=600)
    args = ap_args.parse_args()
    ap_lib = find_async_profiler()
    agents = [("ours", os.path.abspath(args.agent) if args.agent else harness.build_agent())]
    if args.before:
        agents.insert(0, ("before", os.path.abspath(args.before)))
    classes = harness.compile_fixtures()
    work = tempfile.mkdtemp(prefix="hprof-cpu-accuracy-")
    java = shutil.which("java")
    print(f"java: {java}; async-profiler: {ap_lib}; ours: "
          + ", ".join(f"{label} {lib}" for label, lib in agents) + f"; {args.rounds} rounds each")
    try:
        for name in args.only.split(","):
            if name == "inlined":
                program = ["-cp", classes, "InlinedWork", args.inlined_seconds]
            elif name == "rhino":
                if not os.path.isfile(RHINO_JAR):
                    print(f"\n== rhino: skipped, no {RHINO_JAR} (Debian package rhino)")
                    continue
                program = ["-cp", RHINO_JAR, "org.mozilla.javascript.tools.shell.Main",
                           os.path.join(HERE, "raytrace.js"), args.rhino_frames]
            elif name == "javac":
                if not has_module(java, "jdk.compiler"):
                    print("\n== javac: skipped, the JDK has no jdk.compiler module")
                    continue
                files = generate_sources(os.path.join(work, "src"), args.javac_files)
                os.makedirs(os.path.join(work, "classes"), exist_ok=True)
                program = ["-m", "jdk.compiler/com.sun.tools.javac.Main", "-proc:none", "-d",
                           os.path.join(work, "classes")] + files
            else:
                sys.exit(f"unknown program {name}")
            ap, ours = measure(name, program, args.rounds, ap_lib, agents, work)
            table(name, ap, ours)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
