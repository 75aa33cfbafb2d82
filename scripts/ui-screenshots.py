#!/usr/bin/env python3
"""Screenshots of every view of `hprof-rs ui` for docs/ui.md, taken with
headless Chromium (Debian `chromium` and `chromium-driver`).

Everything runs in a scratch directory with short relative names (the
binaries copied to bin/, the fixtures compiled to classes/), so the
pictures show no machine's paths: files opened from the command line, a
heap dump, and programs started from the Launch form (monitor=y, and one
whose allocations are marked).

Usage: scripts/ui-screenshots.py [OUT_DIR]   (default docs/ui)"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from ui_driver import Browser, Ui  # noqa: E402


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "ui"))
    os.makedirs(out, exist_ok=True)
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    demo = os.path.join(tempfile.gettempdir(), "hprof-rs-ui-demo")
    shutil.rmtree(demo, ignore_errors=True)
    for d in ("bin", "classes", "src"):
        os.makedirs(os.path.join(demo, d))
    for f in ("hprof-rs", "libhprof_rs.so"):
        shutil.copy(os.path.join(ROOT, "target", "release", f), os.path.join(demo, "bin"))
    sources = glob.glob(os.path.join(ROOT, "java-fixtures", "*.java"))
    for s in sources:
        shutil.copy(s, os.path.join(demo, "src"))
    subprocess.run(["javac", "--release", "11", "-g", "-d", "classes", *[os.path.join("src", os.path.basename(s)) for s in sources]],
                   cwd=demo, check=True)

    def java(opts, *args):
        subprocess.run(["java", f"-agentpath:bin/libhprof_rs.so={opts}", "-cp", "classes", *args],
                       cwd=demo, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    java("cpu=samples,interval=2,thread=y,depth=16,format=b,file=threads.hprof", "NamedThreads", "800")
    java("cpu=samples,interval=2,depth=16,format=b,file=cpu.hprof", "CpuSplit", "3")
    java("heap=sites,cutoff=0,depth=8,format=b,file=sites.hprof", "AllocSites")
    java("heap=dump,format=b,file=dump.hprof", "HoldObjects")

    ui = Ui(["cpu.hprof", "threads.hprof", "sites.hprof", "dump.hprof"],
            ["--source", "src", "--agent", "bin/libhprof_rs.so"], exe=os.path.join(demo, "bin", "hprof-rs"), cwd=demo)
    b = Browser(1400, 900)
    shot = lambda name: b.screenshot(os.path.join(out, name))  # noqa: E731
    click = lambda sel: b.wait_js(f"const e = document.querySelector('{sel}'); if (!e) return false; e.click(); return true")  # noqa: E731

    def typed(id_, text):
        b.js("const e = document.getElementById(arguments[0]); e.value = arguments[1];"
             " e.dispatchEvent(new Event('input')); return 1", id_, text)
    try:
        ui.wait_sessions(lambda s: len(s) == 4 and all(x["state"] == "ended" for x in s))
        b.go(ui.url)
        # CPU of CpuSplit: flame graph (the SVG document in its frame), hot methods.
        b.wait_js("const d = document.getElementById('flame').contentDocument;"
                  " return !!d && d.querySelectorAll('g.f').length > 3")
        typed("search", "work30")
        time.sleep(0.5)
        shot("cpu-flame.png")
        typed("search", "")
        click("input[name=cpuview][value=table]")
        b.wait_js("return document.querySelectorAll('#hot tbody tr').length > 3")
        shot("cpu-hot-methods.png")
        # NamedThreads: call tree, thread filter at line granularity, source.
        click('#sessions li[data-id="2"]')
        click("input[name=cpuview][value=tree]")
        b.wait_js("return document.querySelectorAll('#calltree tbody tr').length > 3")
        click("#calltree tbody tr .toggle")
        b.wait_js("return document.querySelectorAll('#calltree tbody tr').length > 6")
        click("#calltree tbody tr:nth-child(2) .toggle")
        time.sleep(0.5)
        click("#calltree tbody tr:nth-child(3) .toggle")
        time.sleep(0.5)
        shot("cpu-call-tree.png")
        alpha = b.wait_js("const o = [...document.querySelectorAll('#threadsel option')].find(o => o.textContent.startsWith('worker-alpha')); return o ? o.value : false")
        typed("threadsel", alpha)
        typed("gran", "line")
        click("input[name=cpuview][value=table]")
        b.wait_js("return document.querySelector('#hot tbody td.src') !== null")
        click("#hot tbody td.src")
        b.wait_js("return document.getElementById('srcline') !== null")
        shot("source.png")
        click("#sourceclose")
        typed("threadsel", "")
        typed("gran", "method")
        click('#tabs button[data-tab="threads"]')
        b.wait_js("return document.querySelectorAll('#threads tbody tr').length > 3")
        shot("threads.png")
        # AllocSites: sites table and allocation tree.
        click('#sessions li[data-id="3"]')
        click('#tabs button[data-tab="memory"]')
        typed("classfilter", "AllocSites")
        b.wait_js("return document.querySelectorAll('#sites tbody tr').length > 3")
        shot("memory-sites.png")
        typed("classfilter", "")
        click("input[name=memview][value=tree]")
        b.wait_js("return document.querySelectorAll('#alloctree tbody tr').length > 3")
        # Open the first root and, under it, the first child, three levels.
        for level in range(1, 4):
            click(f"#alloctree tbody tr:nth-child({level}) .toggle")
            b.wait_js(f"return document.querySelectorAll('#alloctree tbody tr').length > {level + 2}")
            time.sleep(0.3)
        shot("memory-tree.png")
        click("input[name=memview][value=table]")
        # The heap dump.
        click('#sessions li[data-id="4"]')
        click('#tabs button[data-tab="heap"]')
        b.wait_js("return document.querySelectorAll('#heaptable tbody tr').length > 3")
        shot("heap.png")
        # The analyser: from a class by clicks to the path from a GC root.
        def link(scope, text=None):
            t0 = time.time()
            while not b.js("const a = [...document.querySelectorAll(arguments[0] + ' a')]"
                           ".find(a => arguments[1] === null || a.textContent === arguments[1]);"
                           " if (!a) return false; a.click(); return true", scope, text):
                assert time.time() - t0 < 60, f"no link {text!r} in {scope}"
                time.sleep(0.2)
        click("#heapanalyse")
        b.wait_js("return !!document.querySelector('#heapanswer .heapclasses')", limit=90)
        typed("heapfilter", "HoldObjects$HeldA")
        b.wait_js("return [...document.querySelectorAll('#heapanswer .heapclasses tbody tr')].length === 2")
        link("#heapanswer .heapclasses", "HoldObjects$HeldA")
        b.wait_js("return !!document.querySelector('#heapanswer .heapobjects tbody tr')")
        link("#heapanswer .heapobjects tbody tr td:first-child")
        b.wait_js("return (document.querySelector('#heapanswer h3') || {}).textContent.includes('(instance)')")
        link("#heapanswer", "path from a GC root")
        b.wait_js("return !!document.querySelector('#heapanswer .heappath li')")
        shot("heap-path.png")
        typed("heapfilter", "")
        click("#heaphisto")
        # Launch: a monitor=y program.
        click("#launchbtn")
        b.wait_js("return document.getElementById('launchagent').textContent.includes('libhprof_rs.so')")
        typed("launchcmd", "java -cp classes Contention measure 4 5 20")
        typed("launchopts", "monitor=y")
        shot("launch.png")
        click("#launchgo")
        b.wait_js("return document.getElementById('launchpanel').hidden")
        click('#tabs button[data-tab="monitors"]')
        b.wait_js("return document.getElementById('montime').tBodies[0].rows.length > 0", limit=90)
        shot("monitors.png")
        # Launch: marks around AllocPhases' second phase, then its console.
        os.makedirs(os.path.join(demo, "phases"))
        click("#launchbtn")
        typed("launchcmd", "java -cp classes AllocPhases phases")
        typed("launchopts", "heap=sites,depth=8")
        click("#launchgo")
        b.wait_js("return document.getElementById('launchpanel').hidden")
        sid = ui.get("/api/sessions")["sessions"][-1]["id"]
        wait_console(ui, sid, "[stdout] phase1")
        click('#tabs button[data-tab="memory"]')
        b.wait_js("return !document.getElementById('markbegin').disabled")
        click("#markbegin")
        b.wait_js("return document.getElementById('markinfo').textContent.includes('begin report')")
        open(os.path.join(demo, "phases", "go"), "w").close()
        wait_console(ui, sid, "[stdout] phase2")
        click("#markend")
        b.wait_js("return document.getElementById('markinfo').textContent.includes('end report')")
        typed("sort", "objects")
        time.sleep(1)
        shot("memory-marks.png")
        click('#tabs button[data-tab="console"]')
        b.wait_js("return document.getElementById('console').textContent.includes('phase2')")
        shot("console.png")
        click("#stop")
        b.wait_js("return document.getElementById('proc').textContent.includes('killed')")
    except Exception:
        shot("failed.png")
        raise
    finally:
        b.close()
        ui.close()
    print(f"screenshots in {out}")


def wait_console(ui, sid, text, limit=60):
    t0 = time.time()
    while time.time() - t0 < limit:
        c = ui.get(f"/api/session/{sid}/console", "since=0")
        if any(text in line[1] for line in c["lines"]):
            return
        time.sleep(0.1)
    raise TimeoutError(f"console never showed {text}")


if __name__ == "__main__":
    main()
