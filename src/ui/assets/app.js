"use strict";
// The page of `hprof-rs ui` (docs/ui.md). Polls the server's JSON once a
// second; every request carries the token of the page's own URL.
const TOKEN = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
let current = null;       // selected session id
let tab = "cpu";
let zoom = [];            // flame path names from the root
let consoleSince = 0, consoleOf = null;
let sitesOffset = 0, sitesMatched = 0;
const PAGE_ROWS = 100;

function api(path, params = {}) {
  const q = new URLSearchParams(params);
  q.set("token", TOKEN);
  return fetch(path + "?" + q.toString()).then((r) => r.json());
}
function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
const fmt = (n) => Number(n).toLocaleString("en-US");

async function refreshSessions() {
  const d = await api("/api/sessions");
  $("opts").textContent = d.agentOptions;
  const ul = $("sessions");
  ul.innerHTML = "";
  for (const s of d.sessions) {
    const li = document.createElement("li");
    li.dataset.id = s.id;
    if (s.id === current) li.className = "sel";
    li.innerHTML = `#${s.id} ${esc(s.kind)} <span class="st-${esc(s.state)}">${esc(s.state)}</span>` +
      `<small>${esc(s.source)}<br>${new Date(s.started).toLocaleTimeString()} · ${fmt(s.records)} records</small>`;
    li.onclick = () => select(s.id);
    ul.appendChild(li);
  }
  if (current === null && d.sessions.length) select(d.sessions[0].id);
  const s = d.sessions.find((x) => x.id === current);
  if (s) {
    $("title").textContent = `Session #${s.id}: ${s.kind} ${s.source} — ${s.format}`;
    $("state").innerHTML = `<span class="st-${esc(s.state)}">${esc(s.state)}</span>`;
    $("error").hidden = !s.error;
    $("error").textContent = s.error ? "Error: " + s.error : "";
    for (const b of document.querySelectorAll("#commands button")) b.disabled = !s.commands;
  }
}

function select(id) {
  current = id; zoom = []; consoleSince = 0; sitesOffset = 0;
  $("console").textContent = ""; consoleOf = id;
  refreshSessions(); refreshView();
}

async function refreshView() {
  if (current === null) return;
  const base = `/api/session/${current}/`;
  if (tab === "cpu") renderCpu(await api(base + "cpu", { filter: $("filter").value, top: 200 }));
  else if (tab === "memory") renderSites(await api(base + "sites", { class: $("classfilter").value, sort: $("sort").value, offset: sitesOffset, limit: PAGE_ROWS }));
  else if (tab === "threads") renderThreads(await api(base + "threads"));
  else if (tab === "console") renderConsole(await api(base + "console", { since: consoleSince }));
}

function renderCpu(d) {
  const body = $("hot").tBodies[0];
  if (!d.available) {
    $("cpusum").textContent = "No CPU SAMPLES yet: run with cpu=samples and press “CPU samples” (or wait for the end).";
    body.innerHTML = ""; $("flame").innerHTML = ""; return;
  }
  $("cpusum").textContent = `${fmt(d.kept)} of ${fmt(d.total)} samples after the filter · ${fmt(d.methods)} methods`;
  body.innerHTML = d.rows.map((r, i) =>
    `<tr><td>${i + 1}</td><td>${esc(r.method)}</td><td>${fmt(r.self)}</td><td>${r.selfPct.toFixed(2)}%</td><td>${fmt(r.total)}</td><td>${r.totalPct.toFixed(2)}%</td></tr>`).join("");
  drawFlame(d.flame);
}

function color(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.charCodeAt(0)) | 0;
  return `hsl(${20 + Math.abs(h) % 40}, 85%, ${62 + Math.abs(h >> 8) % 15}%)`;
}

// Flame graph, root at the top: children laid left to right in proportion
// to their samples. A click zooms into a frame; search marks matches.
function drawFlame(root) {
  let node = root;
  for (const n of zoom) {
    const next = (node.c || []).find((k) => k.n === n);
    if (!next) { zoom = []; node = root; break; }
    node = next;
  }
  const el = $("flame");
  const width = el.clientWidth || 1000;
  const term = $("search").value.trim();
  const out = [];
  let depthMax = 0;
  const walk = (n, x, w, depth, path) => {
    if (w < 1) return;
    depthMax = Math.max(depthMax, depth);
    const hit = term && n.n.includes(term) ? " hit" : "";
    out.push(`<div class="fr${hit}" data-path="${esc(JSON.stringify(path))}" style="left:${x}px;top:${depth * 17}px;width:${w}px;background:${color(n.n)}" title="${esc(n.n)} — ${fmt(n.v)} samples">${w > 30 ? esc(n.n) : ""}</div>`);
    let cx = x;
    for (const k of n.c || []) {
      const kw = node.v ? (k.v / node.v) * width : 0;
      walk(k, cx, kw, depth + 1, path.concat([k.n]));
      cx += kw;
    }
  };
  walk(node, 0, width, 0, zoom.slice());
  el.style.height = (depthMax + 1) * 17 + 4 + "px";
  el.innerHTML = out.join("");
}
$("flame").addEventListener("click", (e) => {
  const p = e.target.dataset && e.target.dataset.path;
  if (p) { zoom = JSON.parse(p); refreshView(); }
});
$("unzoom").onclick = () => { zoom = []; refreshView(); };

function renderSites(d) {
  const body = $("sites").tBodies[0];
  if (!d.available) {
    $("memsum").textContent = "No ALLOC SITES yet: run with heap=sites and press “Allocation sites” (or wait for the end).";
    body.innerHTML = ""; $("page").textContent = ""; return;
  }
  sitesMatched = d.matched;
  const est = d.estimated ? " · counts are estimates (heap sampling)" : "";
  $("memsum").textContent = `${fmt(d.sites)} sites, ${fmt(d.matched)} shown by the filter · live ${fmt(d.totalLiveBytes)} bytes in ${fmt(d.totalLiveObjects)} objects · allocated ${fmt(d.totalBytes)} bytes${est}`;
  $("page").textContent = ` ${fmt(d.offset + 1)}–${fmt(d.offset + d.rows.length)} of ${fmt(d.matched)} `;
  const mark = d.estimated ? "≈" : "";
  body.innerHTML = d.rows.map((r) =>
    `<tr><td>${r.rank}</td><td>${esc(r.class)}</td><td>${esc(r.site || "")}</td><td>${mark}${fmt(r.bytes)}</td><td>${mark}${fmt(r.objects)}</td><td>${mark}${fmt(r.liveBytes)}</td><td>${mark}${fmt(r.liveObjects)}</td><td>${r.trace}</td></tr>`).join("");
}
$("prev").onclick = () => { sitesOffset = Math.max(0, sitesOffset - PAGE_ROWS); refreshView(); };
$("next").onclick = () => { if (sitesOffset + PAGE_ROWS < sitesMatched) { sitesOffset += PAGE_ROWS; refreshView(); } };

function renderThreads(list) {
  $("threads").tBodies[0].innerHTML = list.map((t) =>
    `<tr><td>${t.serial}</td><td>${esc(t.name)}</td><td>${esc(t.group)}</td><td>${t.startMs.toFixed(1)}</td><td>${t.endMs === null ? "running" : t.endMs.toFixed(1)}</td></tr>`).join("");
}

function renderConsole(d) {
  if (consoleOf !== current) return;
  const pre = $("console");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  for (const [n, line] of d.lines) pre.textContent += line + "\n";
  consoleSince = d.last;
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

async function send(cmd) {
  if (current === null) return;
  const q = new URLSearchParams({ token: TOKEN });
  const r = await fetch(`/api/session/${current}/command?${q}`, { method: "POST", body: cmd });
  const d = await r.json();
  $("cmdresult").textContent = d.error ? "✗ " + d.error : "✓ sent " + d.sent;
  setTimeout(refreshView, 300);
}
for (const b of document.querySelectorAll("#commands button[data-cmd]")) b.onclick = () => send(b.dataset.cmd);
$("setdepth").onclick = () => send("depth " + parseInt($("depth").value, 10));
$("exitvm").onclick = () => { if (confirm("Exit the profiled JVM? Its process ends now.")) send("exit"); };
setInterval(() => { if ($("autocpu").checked && !$("exitvm").disabled) send("cpu"); }, 2000);

for (const b of document.querySelectorAll("#tabs button")) b.onclick = () => {
  tab = b.dataset.tab;
  for (const x of document.querySelectorAll("#tabs button")) x.classList.toggle("active", x === b);
  for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== "tab-" + tab;
  refreshView();
};
for (const id of ["filter", "search", "classfilter", "sort"]) $(id).addEventListener("input", () => { sitesOffset = 0; refreshView(); });

api("/api/attach").then((d) => { $("attach").textContent = d.message; });
refreshSessions().then(refreshView);
setInterval(() => { refreshSessions(); refreshView(); }, 1000);
