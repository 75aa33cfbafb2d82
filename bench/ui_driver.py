"""Helpers for the UI benchmarks and screenshot script: start `hprof-rs ui`
and read its start-up lines, and drive a headless Chromium through
WebDriver (chromedriver) with the standard library only.

Debian: `chromium` and `chromium-driver` (scripts/install-test-tools.sh)."""
import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ui:
    """A running `hprof-rs ui`; `url` has the token, `agent_opts` the
    net= option to append."""

    def __init__(self, files=(), extra=(), exe=None, cwd=None):
        exe = exe or os.path.join(ROOT, "target", "release", "hprof-rs")
        self.proc = subprocess.Popen([exe, "ui", *extra, *files], stdout=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, cwd=cwd)
        page = self.proc.stdout.readline().strip()
        opts = self.proc.stdout.readline().strip()
        self.url = page.split("open ", 1)[1]
        self.agent_opts = opts.split("agent options: ", 1)[1]
        self.base = self.url.split("/?", 1)[0]
        self.token = self.url.split("token=", 1)[1]

    def get(self, path, params=""):
        with urllib.request.urlopen(f"{self.base}{path}?token={self.token}&{params}") as r:
            return json.loads(r.read())

    def wait_sessions(self, pred, limit=120):
        t0 = time.time()
        while time.time() - t0 < limit:
            v = self.get("/api/sessions")
            if pred(v["sessions"]):
                return v["sessions"]
            time.sleep(0.1)
        raise TimeoutError("sessions never reached the expected state")

    def close(self):
        # SIGTERM: the UI removes its directory of agent tokens.
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Browser:
    """One headless Chromium session through chromedriver."""

    def __init__(self, width=1400, height=1000):
        driver = shutil.which("chromedriver")
        chromium = shutil.which("chromium")
        if not driver or not chromium:
            raise SystemExit("chromium and chromedriver are needed: scripts/install-test-tools.sh")
        self.port = free_port()
        self.proc = subprocess.Popen([driver, f"--port={self.port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.profile = tempfile.mkdtemp(prefix="hprof-rs-chromium-")
        t0 = time.time()
        while True:
            try:
                if self._call("GET", "/status")["value"]["ready"]:
                    break
            except OSError:
                pass
            if time.time() - t0 > 30:
                raise TimeoutError("chromedriver not ready")
            time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", f"--user-data-dir={self.profile}"]}}}}
        self.session = self._call("POST", "/session", caps)["value"]["sessionId"]

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())

    def call(self, method, what, body=None):
        return self._call(method, f"/session/{self.session}/{what}", body)["value"]

    def go(self, url):
        self.call("POST", "url", {"url": url})

    def js(self, script, *args):
        return self.call("POST", "execute/sync", {"script": script, "args": list(args)})

    def wait_js(self, script, limit=60):
        """Evaluate until the result is truthy; return it."""
        t0 = time.time()
        while True:
            v = self.js(script)
            if v:
                return v
            if time.time() - t0 > limit:
                raise TimeoutError(f"page never satisfied: {script}")
            time.sleep(0.05)

    def screenshot(self, path):
        png = base64.b64decode(self.call("GET", "screenshot"))
        with open(path, "wb") as f:
            f.write(png)

    def close(self):
        try:
            self._call("DELETE", f"/session/{self.session}")
        except OSError:
            pass
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
