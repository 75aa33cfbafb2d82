#!/usr/bin/env python3
"""Benchmark of push= (docs/push.md): the cost of sending each interval's
profile to a Pyroscope-compatible server, all in the same run.

CpuSplit (CPU-bound, a fixed number of rounds) timed, interleaved, as:
  * no agent;
  * cpu=samples,interval=10 (the same agent, no push);
  * the same with push=http://127.0.0.1:PORT,pushinterval=10 to a loopback
    recorder in this script that answers every post (target <= 1.02x of no
    agent, and of cpu=samples);
  * cpu=samples,format=b,net=... to `hprof-rs push --interval 10s` posting
    to the same recorder (the tool's push: the JVM's cost of a stream read
    by the tool, which asks for CPU SAMPLES every interval; the tool's own
    CPU is printed apart);
  * async-profiler (event=cpu,interval=10ms, collapsed to a file) when a
    build is found: it has no push to Pyroscope of its own (Pyroscope's
    Java agent wraps it), so its plain CPU mode is the comparable mode.
    It is taken through harness.async_profiler() ($ASYNC_PROFILER_HOME,
    else .cache/async-profiler, built there from its public source when
    missing); without it that row says so.

Wall time and process CPU (user + system, all threads), median of N runs
each. The posts the recorder received are counted and printed.

The default 8000 rounds make runs of about 35 s on a 2-core machine, so
each pushes three full 10-s intervals and the last partial one; a run
shorter than the interval measures only the last post.

Usage: bench/push.py [runs] [rounds]"""
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class Recorder(http.server.BaseHTTPRequestHandler):
    posts = 0
    bytes = 0

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        Recorder.posts += 1
        Recorder.bytes += n
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = sys.argv[2] if len(sys.argv) > 2 else "8000"
    agent = harness.build_agent()
    classes = harness.compile_fixtures()
    work = tempfile.mkdtemp(prefix="hprof-bench-push-")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    program = ["-cp", classes, "CpuSplit", "0", rounds]
    out = os.path.join(work, "out.txt")
    sides = {
        "no agent": ["java"] + program,
        "cpu=samples": ["java", f"-agentpath:{agent}=cpu=samples,interval=10,file={out}"] + program,
        "cpu=samples+push": ["java", f"-agentpath:{agent}=cpu=samples,interval=10,file={out},"
                             f"push=http://127.0.0.1:{port},pushinterval=10"] + program,
    }
    tool = harness.build_tool()
    TOOL = "cpu=samples+hprof-rs push"
    sides[TOOL] = None  # its command names the port the tool chose, per run

    def tool_run():
        p = subprocess.Popen([tool, "push", "--port", "0", "--url", f"http://127.0.0.1:{port}",
                              "--interval", "10s", "--app", "bench", "--sampling-interval", "10"],
                             stderr=subprocess.PIPE, text=True)
        p.stderr.readline()  # listening on ...
        said = p.stderr.readline()  # start the agent with net=...,tokenfile=...,format=b
        net = said.split("net=")[1].split(",")[0]
        token = said.split("tokenfile=")[1].split(",")[0]
        return p, ["java", f"-agentpath:{agent}=cpu=samples,interval=10,format=b,net={net},"
                           f"tokenfile={token}"] + program
    tool_cpu = []
    ap = harness.async_profiler_lib()
    if ap:
        sides["async-profiler cpu"] = ["java", f"-agentpath:{ap}=start,event=cpu,interval=10ms,collapsed,"
                                       f"file={os.path.join(work, 'ap.txt')}"] + program
    else:
        print("async-profiler: not available (see above); "
              "its row is left out")
    harness.timed(sides["no agent"], work)  # warm-up
    wall = {k: [] for k in sides}
    cpu = {k: [] for k in sides}
    for _ in range(runs):
        for k, cmd in sides.items():
            pusher = None
            if k == TOOL:
                pusher, cmd = tool_run()
            # One run gives both: CPU of the waited-for child, wall around it.
            t0 = harness.time.perf_counter()
            cpu[k].append(harness.timed(cmd, work, "cpu"))
            wall[k].append(harness.time.perf_counter() - t0)
            if pusher:
                c0 = harness.children_cpu()
                pusher.communicate()
                if pusher.returncode != 0:
                    sys.exit("hprof-rs push failed")
                tool_cpu.append(harness.children_cpu() - c0)
    med = {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in sides}
    for k in sides:
        print(f"{k}: wall median {med[k][0]:.3f} s {harness.fmt(wall[k])}, "
              f"process CPU median {med[k][1]:.3f} s {harness.fmt(cpu[k])}")
    base = med["no agent"]
    for k in sides:
        if k != "no agent":
            print(f"ratio {k} / no agent: wall {med[k][0] / base[0]:.3f}, CPU {med[k][1] / base[1]:.3f}")
    p, s = med["cpu=samples+push"], med["cpu=samples"]
    print(f"ratio push / cpu=samples (the push itself): wall {p[0] / s[0]:.3f}, CPU {p[1] / s[1]:.3f}")
    t = med[TOOL]
    print(f"ratio hprof-rs push / cpu=samples (the tool's push, the JVM's side): wall {t[0] / s[0]:.3f}, "
          f"CPU {t[1] / s[1]:.3f}; the tool's own CPU median {statistics.median(tool_cpu):.3f} s")
    print(f"ratio hprof-rs push / push= (tool vs agent): wall {t[0] / p[0]:.3f}, CPU {t[1] / p[1]:.3f}")
    if ap:
        a = med["async-profiler cpu"]
        print(f"ratio push / async-profiler cpu: wall {p[0] / a[0]:.3f}, CPU {p[1] / a[1]:.3f}")
    print(f"recorder: {Recorder.posts} posts, {Recorder.bytes} bytes "
          f"({Recorder.posts / runs:.1f} per run; target >= 1 per 10 s of run)")


if __name__ == "__main__":
    main()
