"use strict";
// The page of `hprof-rs ui` (docs/ui.md). The server pushes the session
// list as server-sent events whenever a session changes; the page then
// fetches the one view it shows. Every request carries the token of the
// page's own URL. Everything the server sends is inserted as text or
// escaped: names come from profiled programs and files.
const TOKEN = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
const PAGE_ROWS = 100;
const TREE_CHILDREN = 50;
let current = null;       // selected session id
let tab = "cpu";
let shownKey = null;     // viewKey() of what the view shows
let sessions = new Map();
let consoleSince = 0, consoleOf = null;
let hotOffset = 0, hotCount = 0;
let sitesOffset = 0, sitesMatched = 0;
let heapOffset = 0, heapMatched = 0;
let cpuOpen = new Map(), memOpen = new Map();   // tree nodes opened: key -> {path, limit}
// For the benchmark (bench/ui_first_render.py): when the first CPU view
// with data was drawn, in ms since navigation started.
window.hprofFirstView = null;

function query(params = {}) {
  const q = new URLSearchParams(params);
  q.set("token", TOKEN);
  return q.toString();
}
async function api(path, params = {}) {
  const r = await fetch(path + "?" + query(params));
  return r.json();
}
async function post(path, body, params = {}) {
  const r = await fetch(path + "?" + query(params), { method: "POST", body });
  try { return await r.json(); } catch (e) { return { error: "HTTP " + r.status }; }
}
function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
const fmt = (n) => (n === null || n === undefined) ? "" : Number(n).toLocaleString("en-US");
const pct = (x) => x.toFixed(2) + "%";
const radio = (name) => document.querySelector(`input[name="${name}"]:checked`).value;
const sel = () => sessions.get(current);

// ---- sessions -------------------------------------------------------------

function renderSessions(list) {
  sessions = new Map(list.map((s) => [s.id, s]));
  const ul = $("sessions");
  ul.innerHTML = "";
  for (const s of list) {
    const li = document.createElement("li");
    li.dataset.id = s.id;
    if (s.id === current) li.className = "sel";
    const proc = s.process ? (s.process.running ? " · running" : " · " + s.process.exit) : "";
    li.innerHTML = `#${s.id} ${esc(s.kind)} <span class="st-${esc(s.state)}">${esc(s.state)}</span>` +
      `<small>${esc(s.source)}<br>${new Date(s.started).toLocaleTimeString()} · ${fmt(s.records)} records${esc(proc)}</small>`;
    li.onclick = () => select(s.id);
    ul.appendChild(li);
  }
  renderDiffChoices();
  followDump();
  if (current === null && list.length) { select(list[0].id); return; }
  const s = sel();
  renderHead(s);
  const key = s ? viewKey(s) : null;
  if (s && key !== shownKey) { shownKey = key; refreshView(); }
}

// What the shown view depends on: it is fetched again only when this
// changes (a streaming session changes all the time, its CPU section
// only when one arrives).
function viewKey(s) {
  const k = { cpu: [s.cpuSections], memory: [s.sitesReports, JSON.stringify(s.marks)],
    heap: [s.heapDumps, s.heapDumpsRead], monitors: [s.monitorSections],
    threads: [s.threadEvents, s.cpuSections, s.commands], console: [s.consoleLast] }[tab] || [s.version];
  return [tab, s.state].concat(k).join("|");
}

function link(id, href, on) {
  const a = $(id);
  a.classList.toggle("off", !on);
  if (on) a.href = href; else a.removeAttribute("href");
}

function renderHead(s) {
  $("sessionbar").hidden = !s;
  $("sessionview").hidden = !s;
  if (!s) return;
  $("title").textContent = `Session #${s.id}: ${s.kind} ${s.source} — ${s.format}`;
  $("state").innerHTML = `<span class="st-${esc(s.state)}">${esc(s.state)}</span>`;
  $("proc").textContent = s.process ? `pid ${s.process.pid}, ${s.process.running ? "running" : s.process.exit}` : "";
  $("error").hidden = !s.error;
  $("error").textContent = s.error ? "Error: " + s.error : "";
  for (const b of document.querySelectorAll("#commands button, #dumpheap, #threads button")) b.disabled = !s.commands;
  // Auto-refresh sends a command: off once the session takes none.
  $("autocpu").disabled = !s.commands;
  if (!s.commands) $("autocpu").checked = false;
  // Files take no commands at all; agent sessions keep the bar, disabled
  // once they end.
  $("commands").hidden = s.kind === "file" || s.kind === "upload";
  const base = `/api/session/${s.id}/`;
  link("download", base + "download?" + query(), s.download);
  link("pprof", base + "pprof?" + query(), s.cpuSections > 0 || s.sitesReports > 0);
  link("svg", base + "flame.svg?" + query(cpuParams()), s.cpuSections > 0);
  // Launch: kill the program; Attach: end the profile, the program runs on.
  const attached = s.attachedPid != null && s.state === "live";
  $("stop").hidden = !((s.process && s.process.running) || attached);
  $("stop").textContent = attached ? "Stop profiling" : "Stop program";
  $("close").disabled = s.state === "live";
  const m = s.marks;
  const part = (x) => x ? `report ${x.report}` : "none";
  $("markinfo").textContent = `marks: begin ${part(m.begin)}, end ${m.begin && !m.end ? "the latest report" : part(m.end)}` +
    (m.pending ? ` (waiting for the ${m.pending} report)` : "");
}

function select(id) {
  if (id !== current) $("autocpu").checked = false;
  current = id; $("flame").src = "about:blank"; consoleSince = 0; shownKey = null;
  hotOffset = 0; sitesOffset = 0; heapOffset = 0;
  cpuOpen = new Map(); memOpen = new Map();
  $("console").textContent = ""; consoleOf = id;
  $("launchpanel").hidden = true;
  $("attachpanel").hidden = true;
  refreshSessions();
}

async function refreshSessions() {
  const d = await api("/api/sessions");
  $("opts").textContent = d.agentOptions;
  $("textopts").textContent = d.textAgentOptions;
  renderSessions(d.sessions);
}

function connectEvents() {
  const es = new EventSource("/api/events?" + query());
  es.addEventListener("sessions", (e) => {
    $("live").textContent = "live updates on";
    renderSessions(JSON.parse(e.data).sessions);
  });
  es.onerror = () => { $("live").textContent = "live updates: reconnecting…"; };
}

// ---- views ----------------------------------------------------------------

let viewBusy = false, viewAgain = false;
async function refreshView() {
  if (current === null) return;
  if (viewBusy) { viewAgain = true; return; }
  viewBusy = true;
  try { await loadView(); } catch (e) { console.error(e); }
  viewBusy = false;
  if (viewAgain) { viewAgain = false; refreshView(); }
}

function cpuParams() {
  return { filter: $("filter").value, threads: $("threadsel").value, granularity: $("gran").value };
}

async function loadView() {
  const base = `/api/session/${current}/`;
  if (tab === "cpu") {
    const view = radio("cpuview");
    for (const [id, v] of [["flame", "flame"], ["calltree", "tree"], ["hot", "table"]]) $(id).hidden = view !== v;
    $("flamebar").hidden = view !== "flame";
    $("hotpager").hidden = view !== "table";
    const p = cpuParams();
    const d = await api(base + "cpu", { ...p, offset: hotOffset, limit: view === "table" ? PAGE_ROWS : 0, flame: 0 });
    renderCpu(d, view);
    if (view === "tree" && d.available) {
      const t = await post(base + "tree", JSON.stringify({ ...p, open: [...cpuOpen.values()], limit: TREE_CHILDREN }));
      renderTree($("calltree").tBodies[0], t.rows || [], (r) => {
        const k = d.kept || 1;
        return `<td>${fmt(r.t[0])}</td><td>${pct(100 * r.t[0] / k)}</td><td>${fmt(r.s[0])}</td><td>${pct(100 * r.s[0] / k)}</td>`;
      });
    }
  } else if (tab === "memory") {
    const view = radio("memview");
    $("sites").hidden = view !== "table";
    $("alloctree").hidden = view !== "tree";
    $("sitespager").hidden = view !== "table";
    const between = $("between").checked;
    if (view === "table") {
      renderSites(await api(base + "sites", { class: $("classfilter").value, sort: $("sort").value, offset: sitesOffset, limit: PAGE_ROWS, between: between ? 1 : 0 }));
    } else {
      const t = await post(base + "alloctree", JSON.stringify({ class: $("classfilter").value, filter: $("memfilter").value, sort: $("sort").value, between, open: [...memOpen.values()], limit: TREE_CHILDREN }));
      if (!t.available) { $("memsum").textContent = "No ALLOC SITES yet: run with heap=sites and press “Allocation sites” (or wait for the end)."; $("alloctree").tBodies[0].innerHTML = ""; return; }
      const mark = t.estimated ? "≈" : "";
      $("memsum").textContent = `${fmt(t.total[1])} objects, ${fmt(t.total[0])} bytes allocated` + (between ? " between the marks" : "") + (t.estimated ? " · counts are estimates (heap sampling)" : "");
      renderTree($("alloctree").tBodies[0], t.rows, (r) => r.t.map((v) => `<td>${mark}${fmt(v)}</td>`).join(""));
    }
  } else if (tab === "monitors") renderMonitors(await api(base + "monitors"));
  else if (tab === "heap") {
    renderHeap(await api(base + "heap", { dump: $("heapdump").value, class: $("heapfilter").value, sort: $("heapsort").value, offset: heapOffset, limit: PAGE_ROWS }));
    await loadHeapAnswer();
  }
  else if (tab === "threads") renderThreads(await api(base + "threads"));
  else if (tab === "console") renderConsole(await api(base + "console", { since: consoleSince }));
}

function renderCpu(d, view) {
  const ts = $("threadsel");
  const want = ts.value;
  ts.innerHTML = `<option value="">all threads</option>` + (d.threads || []).map((t) =>
    `<option value="${t.serial}">${esc(t.name)} (${fmt(t.samples)})</option>`).join("");
  ts.value = [...ts.options].some((o) => o.value === want) ? want : "";
  ts.disabled = !(d.threads || []).length;
  ts.title = ts.disabled ? "per-thread samples need the agent option thread=y" : "";
  const body = $("hot").tBodies[0];
  const notes = d.notes || [];
  $("cpunote").hidden = !notes.length;
  $("cpunote").textContent = notes.join(" · ");
  if (!d.available) {
    $("cpusum").textContent = d.cpuTime ? "This profile measured CPU TIME (cpu=times or cpu=old): its sections are in the Console; these views show CPU SAMPLES (cpu=samples). hprof-rs flame FILE draws CPU time as a flame graph." :
      d.ended ? "No CPU SAMPLES in this session: the profile ran without cpu=samples." :
      "No CPU SAMPLES yet: run with cpu=samples and press “CPU samples” (or wait for the end).";
    body.innerHTML = ""; $("flame").src = "about:blank"; $("calltree").tBodies[0].innerHTML = ""; return;
  }
  const lost = d.lost ? ` · ${fmt(d.lost.lost)} of ${fmt(d.lost.taken)} samples (${pct(d.lost.pct)}) not counted, their stacks unknown${d.lost.reasons.length ? ": " + d.lost.reasons.map(([w, n]) => `${w} ${fmt(n)}`).join(", ") : ""}` : "";
  $("cpusum").textContent = `${fmt(d.kept)} of ${fmt(d.total)} samples after the filters · ${fmt(d.methods)} ${$("gran").value === "line" ? "lines" : "methods"}${lost}`;
  hotCount = d.methods;
  if (view === "table") {
    $("hotpage").textContent = ` ${fmt(Math.min(d.offset + 1, d.methods))}–${fmt(d.offset + d.rows.length)} of ${fmt(d.methods)} `;
    body.innerHTML = d.rows.map((r) => {
      const src = r.src ? ` class="name src" data-src="${esc(JSON.stringify(r.src))}"` : ` class="name"`;
      return `<tr><td>${r.rank}</td><td${src}>${esc(r.method)}</td><td>${fmt(r.self)}</td><td>${pct(r.selfPct)}</td><td>${fmt(r.total)}</td><td>${pct(r.totalPct)}</td></tr>`;
    }).join("");
  }
  if (view === "flame") drawFlame();
  else if (window.hprofFirstView === null) window.hprofFirstView = performance.now();
}

// The flame graph is the tool's one flame graph document, the interactive
// SVG that `hprof-rs flame --svg` writes and "Export flame SVG" downloads,
// shown in a frame. Its zoom and search live in the frame's URL fragment
// (#zoom=...&search=...): kept when the view is drawn again, and set from
// the search box here.
let flameLoads = 0;
function flameFragment() {
  try { return $("flame").contentWindow.location.hash.slice(1); } catch (e) { return ""; }
}
function flameHash(keepZoom) {
  const parts = keepZoom ? flameFragment().split("&").filter((kv) => kv.startsWith("zoom=")) : [];
  const term = $("search").value.trim();
  // The box searches for the text as typed; the document takes a regular expression.
  if (term) parts.push("search=" + encodeURIComponent(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  return parts.join("&");
}
function drawFlame() {
  const f = $("flame");
  const hash = flameHash(true);
  // A new load each time (the profile may have grown), zoom and search kept.
  f.onload = () => {
    const doc = f.contentDocument;
    const root = doc && doc.documentElement;
    const w = root && +root.getAttribute("width"), h = root && +root.getAttribute("height");
    if (w && h) {
      // Drawn for 1220 px; scaled to the frame's width (its viewBox keeps
      // the script's coordinates), the frame as tall as that makes it.
      root.setAttribute("width", "100%");
      root.removeAttribute("height");
      f.style.height = Math.ceil(f.clientWidth * h / w) + 4 + "px";
    }
    if (window.hprofFirstView === null && doc && doc.querySelector("g.f")) window.hprofFirstView = performance.now();
  };
  f.src = `/api/session/${current}/flame.svg?` + query({ ...cpuParams(), view: 1, load: ++flameLoads }) + (hash ? "#" + hash : "");
}
$("unzoom").onclick = () => {
  try { $("flame").contentWindow.location.hash = flameHash(false); } catch (e) { /* not loaded */ }
};
$("search").addEventListener("input", () => {
  try { $("flame").contentWindow.location.hash = flameHash(true); } catch (e) { /* not loaded */ }
});

// A tree answer is its visible rows, depth first; the path of a row is
// the names of the rows above it at lower depths.
function renderTree(tbody, rows, cells) {
  const stack = [];
  tbody.innerHTML = rows.map((r) => {
    if (r.more !== undefined) {
      const parent = stack.slice(0, r.d);
      return `<tr class="more" data-parent="${esc(JSON.stringify(parent))}" data-shown="${r.shown}"><td data-indent="${r.d * 14 + 18}">… ${fmt(r.more)} more: show 100 more</td><td colspan="4"></td></tr>`;
    }
    stack.length = r.d;
    stack.push(r.n);
    const toggle = r.k ? (r.o ? "▾" : "▸") : "·";
    const leaf = r.n.startsWith("new ") && !r.k ? " leaf" : "";
    const src = frameSrc(r.n) ? " src" : "";
    return `<tr data-path="${esc(JSON.stringify(stack))}" data-kids="${r.k ? 1 : 0}"${r.k ? ' class="opens"' : ""}><td data-indent="${r.d * 14}"><span class="toggle">${toggle}</span><span class="nm${leaf}${src}">${esc(r.n)}</span></td>${cells(r)}</tr>`;
  }).join("");
  // Indents through the DOM: the Content-Security-Policy allows no inline
  // style attributes.
  for (const td of tbody.querySelectorAll("td[data-indent]")) {
    td.style.paddingLeft = td.dataset.indent + "px";
  }
}

function treeClick(e, open) {
  const tr = e.target.closest("tr");
  if (!tr) return;
  if (tr.classList.contains("more")) {
    const parent = JSON.parse(tr.dataset.parent);
    const key = JSON.stringify(parent);
    open.set(key, { path: parent, limit: Number(tr.dataset.shown) + 100 });
    refreshView();
    return;
  }
  const path = JSON.parse(tr.dataset.path || "null");
  if (!path) return;
  if (e.target.classList.contains("src")) {
    const s = frameSrc(path[path.length - 1]);
    if (s) openSource(s[0], s[1], s[2]);
  } else if (tr.dataset.kids === "1") {
    // Anywhere on the row opens or closes it, not only its ▸.
    const key = JSON.stringify(path);
    if (open.has(key)) open.delete(key); else open.set(key, { path, limit: TREE_CHILDREN });
    refreshView();
  }
}
$("calltree").addEventListener("click", (e) => treeClick(e, cpuOpen));
$("alloctree").addEventListener("click", (e) => treeClick(e, memOpen));

// `pkg.Class.method(File.java:12)` -> [class, file, line]
function frameSrc(name) {
  const m = /^(.+)\.[^.(]+\(([^():]+):(\d+)\)$/.exec(name);
  return m ? [m[1], m[2], Number(m[3])] : null;
}

function renderSites(d) {
  const body = $("sites").tBodies[0];
  if (!d.available) {
    $("memsum").textContent = "No ALLOC SITES yet: run with heap=sites and press “Allocation sites” (or wait for the end).";
    body.innerHTML = ""; $("page").textContent = ""; return;
  }
  sitesMatched = d.matched;
  const est = d.estimated ? " · counts are estimates (heap sampling)" : "";
  const between = d.between ? ` · allocated between report ${d.between.begin} and ${d.between.end ? "report " + d.between.end : "the latest"}: ${fmt(d.sum.objects)} objects, ${fmt(d.sum.bytes)} bytes` : "";
  const order = ` · ordered by ${$("sort").selectedOptions[0].text} (the report's own order is live bytes)`;
  $("memsum").textContent = `${fmt(d.sites)} sites, ${fmt(d.matched)} shown · live ${fmt(d.totalLiveBytes)} bytes in ${fmt(d.totalLiveObjects)} objects · allocated ${fmt(d.totalBytes)} bytes${between}${order}${est}`;
  $("page").textContent = ` ${fmt(Math.min(d.offset + 1, d.matched))}–${fmt(d.offset + d.rows.length)} of ${fmt(d.matched)} `;
  const mark = d.estimated ? "≈" : "";
  body.innerHTML = d.rows.map((r) => {
    const src = r.src ? ` class="src" data-src="${esc(JSON.stringify(r.src))}"` : "";
    return `<tr><td>${r.rank}</td><td>${esc(r.class)}</td><td${src} title="${esc(r.stack.join("\n"))}">${esc(r.site || "")}</td><td>${mark}${fmt(r.bytes)}</td><td>${mark}${fmt(r.objects)}</td><td>${mark}${fmt(r.liveBytes)}</td><td>${mark}${fmt(r.liveObjects)}</td><td>${r.trace}</td></tr>`;
  }).join("");
}
$("prev").onclick = () => { sitesOffset = Math.max(0, sitesOffset - PAGE_ROWS); refreshView(); };
$("next").onclick = () => { if (sitesOffset + PAGE_ROWS < sitesMatched) { sitesOffset += PAGE_ROWS; refreshView(); } };
$("hotprev").onclick = () => { hotOffset = Math.max(0, hotOffset - PAGE_ROWS); refreshView(); };
$("hotnext").onclick = () => { if (hotOffset + PAGE_ROWS < hotCount) { hotOffset += PAGE_ROWS; refreshView(); } };
$("heapprev").onclick = () => { heapOffset = Math.max(0, heapOffset - PAGE_ROWS); refreshView(); };
$("heapnext").onclick = () => { if (heapOffset + PAGE_ROWS < heapMatched) { heapOffset += PAGE_ROWS; refreshView(); } };

function stackCell(stack) {
  if (!stack || !stack.length) return "";
  const shown = stack.slice(0, 3).map(esc).join("<br>");
  return `<span title="${esc(stack.join("\n"))}">${shown}${stack.length > 3 ? "<br>…" : ""}</span>`;
}

function renderMonitors(d) {
  $("monnote").textContent = d.note || "";
  const t = d.time;
  $("montimesum").textContent = t ? `(MONITOR TIME: total ${fmt(t.totalMs)} ms; section ${d.timeSections})` : "(no MONITOR TIME section yet: it comes at a dump or at exit, and only when there was contention)";
  $("montime").tBodies[0].innerHTML = t ? t.rows.map((r) =>
    `<tr><td>${r.rank}</td><td>${esc(r.class)}</td><td>${r.timeMs.toFixed(1)}</td><td>${pct(r.pct)}</td><td>${fmt(r.count)}</td><td>${esc(r.thread || "")}</td><td>${stackCell(r.stack)}</td></tr>`).join("") : "";
  $("waitsum").textContent = `(${fmt(d.waitEvents)} WAIT and WAITED events)`;
  $("waits").tBodies[0].innerHTML = d.waits.map((w) =>
    `<tr><td>${esc(w.class)}</td><td>${fmt(w.waits)}</td><td>${fmt(w.timed)}</td><td>${fmt(w.waited)}</td><td>${fmt(w.waitedMs)}</td><td>${fmt(w.maxMs)}</td></tr>`).join("");
  const dump = d.dump;
  $("dumpsum").textContent = dump ? `(${d.dumps} so far)` : "(none yet: a dump comes with SIGQUIT, jcmd JVMTI.data_dump or at exit)";
  $("dumpmonitors").tBodies[0].innerHTML = dump && !dump.monitors.length ? `<tr><td colspan="5">no monitor was owned at the dump</td></tr>` : dump ? dump.monitors.map((m) =>
    `<tr><td>${esc(m.class)}</td><td>${esc(m.owner)}</td><td>${m.entryCount}</td><td>${esc(m.waitingToEnter.join(", "))}</td><td>${esc(m.waitingToBeNotified.join(", "))}</td></tr>`).join("") : "";
  $("dumpthreads").tBodies[0].innerHTML = dump ? dump.threads.map((x) =>
    `<tr><td>${esc(x.name)}</td><td>${esc(x.status)}</td><td>${stackCell(x.stack)}</td></tr>`).join("") : "";
}

function renderHeap(d) {
  const body = $("heaptable").tBodies[0];
  const chooser = $("heapdump");
  const want = chooser.value;
  chooser.innerHTML = `<option value="">latest</option>` + (d.kept || []).map((k) =>
    `<option value="${k.number}">dump ${k.number} (${fmt(k.objects)} objects, at ${(k.atMs / 1000).toFixed(1)} s)</option>`).join("");
  chooser.value = [...chooser.options].some((o) => o.value === want) ? want : "";
  chooser.disabled = (d.kept || []).length < 2;
  if (!d.available) {
    $("heapsum").textContent = d.gone ? "That dump is no longer kept (the UI keeps a session's last 8)." : d.reading ? "A heap dump is being read…" :
      "No heap dump yet: run with heap=dump (or heap=all) and press “Dump heap now”, or open a dump file.";
    body.innerHTML = ""; $("heappage").textContent = ""; return;
  }
  heapMatched = d.matched;
  $("heapsum").textContent = `dump ${d.number} of ${d.dumps}: ${fmt(d.instances)} objects and arrays, ${fmt(d.bytes)} shallow bytes (estimated), ${fmt(d.classes)} classes, ${fmt(d.roots)} roots` + (d.reading ? " · a newer dump is being read" : "");
  $("heappage").textContent = ` ${fmt(Math.min(d.offset + 1, d.matched))}–${fmt(d.offset + d.rows.length)} of ${fmt(d.matched)} `;
  body.innerHTML = d.rows.map((r) =>
    `<tr><td>${r.rank}</td><td>${esc(r.class)}</td><td>${fmt(r.instances)}</td><td>${fmt(r.bytes)}</td></tr>`).join("");
}
// DUMP HEAP opens its dump in the analyser: once the session has read one
// more complete dump than at the click, the page goes to that dump's class
// table (its index is built meanwhile; the histogram shows until then).
let dumpWanted = null;
$("dumpheap").onclick = () => {
  const s = sel();
  if (!s) return;
  dumpWanted = { s: s.id, after: s.heapDumpsRead };
  $("heapstatus").textContent = "Heap dump asked for: waiting for the agent's dump…";
  send("heap-dump");
};
function followDump() {
  const s = dumpWanted && sessions.get(dumpWanted.s);
  if (!s || s.heapDumpsRead <= dumpWanted.after) return;
  dumpWanted = null;
  if (s.id !== current) return;
  location.hash = heapHrefAt(s.id, s.heapDumpsRead, "classes");
}

// ---- the heap analyser ------------------------------------------------------
// Its answers (/api/session/ID/heap/QUERY) are navigated through
// location.hash ("#heap:" and the query's parameters), so every link is a
// step of the browser's history: back and forward work as everywhere.

const HEAP_HASH = "#heap:";
let heapPoll = null;

function heapState() {
  if (!location.hash.startsWith(HEAP_HASH)) return null;
  return new URLSearchParams(location.hash.slice(HEAP_HASH.length));
}
// The hash of an answer about dump `dump` of session `s`.
function heapHrefAt(s, dump, q, params = {}) {
  const p = new URLSearchParams({ s, q });
  if (dump) p.set("dump", dump);
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") p.set(k, v);
  return HEAP_HASH + p.toString();
}
// The hash of an answer of the selected session (and its chosen dump).
function heapHref(q, params = {}) {
  const cur = heapState();
  const dump = cur && cur.get("s") === String(current) ? cur.get("dump") : $("heapdump").value;
  return heapHrefAt(current, dump, q, params);
}
const heapLink = (text, q, params) => `<a href="${esc(heapHref(q, params))}">${esc(text)}</a>`;
const objLink = (id) => id ? heapLink(id, "object", { id }) : "null";
const classLink = (name) => heapLink(name, "instances", { class: name });
// An object's class; a class object as the class it stands for, as MAT
// names them (a path through statics then says whose statics).
const classOf = (o) => o.describes ? "class " + classLink(o.describes) : classLink(o.class);

function heapTable(cls, head, rows) {
  return `<table class="${cls}"><thead><tr>${head.map((h) => `<th>${h}</th>`).join("")}</tr></thead><tbody>` +
    rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join("")}</tr>`).join("") + "</tbody></table>";
}
function heapPager(q, params, offset, shown, total) {
  const prev = offset > 0 ? heapLink("◀ previous", q, { ...params, offset: Math.max(0, offset - PAGE_ROWS) }) : "";
  const next = offset + shown < total ? heapLink("next ▶", q, { ...params, offset: offset + PAGE_ROWS }) : "";
  return `<p class="pager">${prev} ${fmt(Math.min(offset + 1, total))}–${fmt(offset + shown)} of ${fmt(total)} ${next}</p>`;
}
function objectRows(objs) {
  return objs.map((o) => [objLink(o.id), classOf(o), fmt(o.shallow), fmt(o.retained),
    heapLink("dominated", "dominated", { id: o.id }) + " · " + heapLink("path", "path", { id: o.id })]);
}
const OBJ_HEAD = ["object", "class", "shallow bytes", "retained bytes", "follow"];
function valueCell(f) {
  if (typeof f.value === "string" && f.value.startsWith("0x") && f.type === "java.lang.Object") return objLink(f.value);
  return esc(f.value === null ? "null" : f.value);
}
function pathList(steps) {
  return `<ol class="heappath">` + steps.map((s) =>
    `<li>${s.field === null ? "" : `<span class="via">.${esc(s.field)} →</span> `}${objLink(s.id)} ${classOf(s)}</li>`).join("") + "</ol>";
}
function frameText(f) {
  const where = f.line > 0 ? `${f.source}:${f.line}` : f.line === -3 ? "native method" : f.source || "unknown source";
  return `${f.class}.${f.method} (${where})`;
}
// An allocation frame follows to the objects allocated at its site (trace
// `trace`) and, when it names a file and a line, to its source (the
// source view, as the CPU tab's frames do).
function frameHtml(f, trace) {
  const text = trace === null || trace === undefined ? esc(frameText(f)) :
    `<a class="frame" href="${esc(heapHref("site", { trace }))}">${esc(frameText(f))}</a>`;
  const src = f.line > 0 && f.source ? ` <span class="src" title="show the source" data-src="${esc(JSON.stringify([f.class, f.source, f.line]))}">source</span>` : "";
  return text + src;
}
const signed = (n) => (n > 0 ? "+" : "") + fmt(n);

const heapRender = {
  classes(d, st) {
    const sort = st.get("sort") || "retained", filter = st.get("filter") || "";
    const th = (label, key) => key === sort ? `${esc(label)} ▼` : heapLink(label, "classes", { sort: key, filter });
    const head = [th("class", "name"), th("instances", "instances"), th("shallow bytes", "shallow"), th("retained bytes", "retained"), "class object", "loader"];
    return `<h3>Dump ${esc(d.dump)}: ${fmt(d.objects)} objects, ${fmt(d.shallow)} bytes; sizes: ${esc(d.size_model)}</h3>` +
      heapPager("classes", { sort, filter }, d.offset, d.classes.length, d.total) +
      heapTable("heapclasses", head, d.classes.map((c) => [classLink(c.class), fmt(c.instances), fmt(c.shallow), fmt(c.retained), objLink(c.id), objLink(c.loader)]));
  },
  instances(d, st) {
    return `<h3>${fmt(d.total)} object${d.total === 1 ? "" : "s"} of ${esc(d.class)}, biggest retained first</h3>` +
      heapPager("instances", { class: st.get("class") }, d.offset, d.objects.length, d.total) +
      heapTable("heapobjects", OBJ_HEAD, objectRows(d.objects));
  },
  dominated(d, st) {
    const title = d.id ? `${objLink(d.id)} retains ${fmt(d.retained)} bytes; it dominates ${fmt(d.total)} objects directly` :
      `The biggest retainers: ${fmt(d.total)} objects at the top of the dominator tree (${fmt(d.retained)} bytes in all)`;
    return `<h3>${title}</h3>` + heapPager("dominated", { id: st.get("id") }, d.offset, d.objects.length, d.total) +
      heapTable("heapobjects", OBJ_HEAD, objectRows(d.objects));
  },
  path(d, st) {
    const strong = st.get("exclude_weak") === "1";
    const other = heapLink(strong ? "with weak references too" : "strong references only", "path", { id: st.get("id"), exclude_weak: strong ? "" : "1" });
    return `<h3>Path from a GC root (${esc(d.root_kind)})${strong ? ", strong references only" : ""} · ${other}</h3>` + pathList(d.path);
  },
  sites(d) {
    return `<h3>Retained and shallow bytes per allocation site</h3>` + heapTable("heapsites", ["instances", "shallow bytes", "retained bytes", "allocated at"],
      d.sites.map((s) => [heapLink(fmt(s.instances), "site", { trace: s.trace }), fmt(s.shallow), fmt(s.retained),
        s.frames.length ? s.frames.map((f) => frameHtml(f, s.trace)).join("<br>") : heapLink(`trace ${s.trace} (no frames)`, "site", { trace: s.trace })]));
  },
  site(d, st) {
    const s = d.site;
    return `<h3>${fmt(s.instances)} object${s.instances === 1 ? "" : "s"} allocated at trace ${esc(s.trace)}: ${fmt(s.shallow)} shallow bytes, ${fmt(s.retained)} retained bytes</h3>` +
      `<ol class="heaptrace">${s.frames.map((f) => `<li>${frameHtml(f, null)}</li>`).join("")}</ol>` +
      `<p class="note">${d.by_retained ? "biggest retained first" : "in the dump's order (too many objects to sort by retained size)"} · ${heapLink("every allocation site", "sites", {})}</p>` +
      heapPager("site", { trace: st.get("trace") }, d.offset, d.objects.length, s.instances) +
      heapTable("heapobjects", OBJ_HEAD, objectRows(d.objects));
  },
  diff(d, st) {
    const sort = st.get("sort") || "retained", filter = st.get("filter") || "";
    const o = d.other, other = { other: o.session, other_dump: o.dump };
    const th = (label, key) => key === sort ? `${esc(label)} ▼` : heapLink(label, "diff", { ...other, sort: key, filter });
    const head = [th("class", "name"), th("Δ instances", "instances"), th("Δ shallow bytes", "shallow"), th("Δ retained bytes", "retained"), "instances in"];
    return `<h3>Change per class from dump ${esc(d.dump)} of session #${esc(st.get("s"))} to dump ${esc(o.dump)} of session #${esc(o.session)}: ${fmt(d.total)} class${d.total === 1 ? "" : "es"} changed</h3>` +
      heapPager("diff", { ...other, sort, filter }, d.offset, d.classes.length, d.total) +
      heapTable("heapdiff", head, d.classes.map((c) => [heapLink(c.class, "instances", { class: c.class }), signed(c.instances), signed(c.shallow), signed(c.retained),
        heapLink(`dump ${d.dump}`, "instances", { class: c.class }) + " · " +
        `<a href="${esc(heapHrefAt(o.session, o.dump, "instances", { class: c.class }))}">dump ${esc(o.dump)} of #${esc(o.session)}</a>`]));
  },
  suspects(d) {
    const pc = (x) => (100 * x).toFixed(1) + "%";
    let h = `<h3>Leak suspects: objects and classes retaining at least ${pc(d.threshold)} of ${fmt(d.total)} bytes</h3>`;
    if (!d.suspects.length && !d.classes.length) h += "<p>none</p>";
    for (const o of d.suspects) {
      h += `<p>${objLink(o.id)} ${classOf(o)} retains ${fmt(o.retained)} bytes (${pc(o.share)}); accumulates in ${objLink(o.accumulation.id)} ${classOf(o.accumulation)} (${fmt(o.accumulation.retained)} bytes)</p>`;
      if (o.path) h += pathList(o.path.path);
    }
    for (const c of d.classes) h += `<p>${fmt(c.instances)} instances of ${classLink(c.class)} retain ${fmt(c.retained)} bytes (${pc(c.share)})</p>`;
    return h;
  },
  object(d) {
    let h = `<h3>${esc(d.id)} ${d.describes ? "class " + esc(d.describes) + " · " : ""}${d.class_id ? heapLink(d.class, "object", { id: d.class_id }) : esc(d.class)} (${esc(d.kind)})</h3><p>` +
      `shallow ${fmt(d.shallow)} bytes, retained ${fmt(d.retained)} bytes · dominator ${d.dominator ? objLink(d.dominator) : "none (a GC root's own)"}` +
      (d.gc_roots.length ? ` · GC root: ${esc(d.gc_roots.join(", "))}` : "") + "</p><p>" +
      heapLink("path from a GC root", "path", { id: d.id }) + " · " + heapLink("strong path", "path", { id: d.id, exclude_weak: 1 }) + " · " +
      heapLink("objects it retains", "dominated", { id: d.id }) + " · " + classLink(d.class) + "</p>";
    if (d.text !== undefined) h += `<p>text: <code>${esc(JSON.stringify(d.text))}</code></p>`;
    if (d.superclasses) h += `<p>superclasses: ${d.superclasses.map((c) => objLink(c.id) + " " + esc(c.class)).join(" &lt; ")}</p>`;
    if (d.length !== undefined) h += `<p>length ${fmt(d.length)}: [${(d.elements || []).map((v) => typeof v === "string" && v.startsWith("0x") && d.kind === "object array" ? objLink(v) : esc(v === null ? "null" : v)).join(", ")}${d.length > (d.elements || []).length ? ", …" : ""}]</p>`;
    for (const [title, fs] of [["Fields", d.fields], ["Statics", d.statics]]) {
      if (fs && fs.length) h += `<h4>${title}</h4>` + heapTable("heapfields", ["name", "type", "value"], fs.map((f) => [esc(f.name), esc(f.type), valueCell(f)]));
    }
    h += `<h4>References (${fmt(d.references_total)})</h4>` + heapTable("heaprefs", ["field", "object", "class"], d.references.map((l) => [esc(l.field), objLink(l.id), classOf(l)]));
    h += `<h4>Referrers (${fmt(d.referrers_total)})</h4>` + heapTable("heaprefs", ["object", "class", "field"], d.referrers.map((l) => [objLink(l.id), classOf(l), esc(l.field)]));
    h += `<h4>Allocated at</h4>` + (d.trace ? `<p>${heapLink(`every object allocated here (trace ${d.trace_serial})`, "site", { trace: d.trace_serial })}</p><ol class="heaptrace">${d.trace.map((f) => `<li>${frameHtml(f, d.trace_serial)}</li>`).join("")}</ol>` : `<p class="note">no allocation trace in this dump (the agent records them with heap=all)</p>`);
    return h;
  },
};

async function loadHeapAnswer() {
  const st = heapState();
  const on = !!st && st.get("s") === String(current);
  $("heapanswer").hidden = !on;
  $("heaptable").hidden = on;
  $("heappage").hidden = on; $("heapprev").hidden = on; $("heapnext").hidden = on;
  if (!on) { $("heapstatus").textContent = ""; return; }
  clearTimeout(heapPoll);
  const q = st.get("q") || "classes";
  const params = {};
  for (const [k, v] of st) if (k !== "s" && k !== "q") params[k] = v;
  if (["instances", "dominated", "classes", "site", "diff"].includes(q)) params.limit = PAGE_ROWS;
  const hash = location.hash;
  const r = await fetch(`/api/session/${current}/heap/${encodeURIComponent(q)}?` + query(params));
  const d = await r.json();
  if (location.hash !== hash) return;
  if (r.status === 202) {
    // The first view while the index is built: the histogram as the
    // session's reader counted it, above it the build's progress.
    const share = d.total ? ` ${Math.floor(100 * d.done / d.total)}%` : "";
    const whose = d.session !== undefined && d.session !== current ? ` of session #${d.session}` : "";
    $("heapstatus").textContent = `Indexing dump ${d.dump}${whose}: ${d.stage}${share}…`;
    $("heapanswer").innerHTML = "";
    $("heaptable").hidden = false;
    heapPoll = setTimeout(() => { if (location.hash === hash) loadHeapAnswer(); }, 300);
    return;
  }
  $("heaptable").hidden = true;
  $("heapstatus").textContent = "";
  if (d.error) { $("heapanswer").innerHTML = `<p class="error">${esc(d.error)}</p>`; return; }
  $("heapanswer").innerHTML = (heapRender[q] || (() => ""))(d, st);
}

// The class filter applies to the analyser's class table too.
$("heapfilter").addEventListener("input", () => {
  const st = heapState();
  if (st && st.get("q") === "classes") location.hash = heapHref("classes", { sort: st.get("sort"), filter: $("heapfilter").value });
});
// The analyser's entry points: each an answer of the selected session.
for (const [id, q] of [["heapanalyse", "classes"], ["heaptop", "dominated"], ["heapsuspects", "suspects"], ["heapsites", "sites"]]) {
  $(id).onclick = () => { location.hash = heapHref(q); };
}
$("heaphisto").onclick = () => { location.hash = ""; };
// Diff: the other dump is any complete dump of any session the UI has
// (files opened, uploads, agents' and launched programs' streams), or a
// file uploaded for it.
let diffChoices = "";
function renderDiffChoices() {
  const box = $("heapother");
  const want = box.value;
  const opts = [];
  for (const s of sessions.values()) {
    for (let n = s.heapDumpsRead; n >= 1 && n > s.heapDumpsRead - 8; n--) {
      opts.push(`<option value="${s.id}:${n}">#${s.id} ${esc(s.source)} · dump ${n}</option>`);
    }
  }
  const html = `<option value="">compare with…</option>` + opts.join("") + `<option value="upload">a dump file (upload)…</option>`;
  // Redrawn only when the choices change: a live session's events come
  // often, and a redraw would close the list while it is open.
  if (html === diffChoices) return;
  diffChoices = html;
  box.innerHTML = html;
  box.value = [...box.options].some((o) => o.value === want) ? want : "";
}
$("heapother").addEventListener("change", async () => {
  const v = $("heapother").value;
  if (!v) return;
  if (v === "upload") { $("diffupload").click(); return; }
  const [other, other_dump] = v.split(":");
  location.hash = heapHref("diff", { other, other_dump });
});
$("diffupload").onchange = async () => {
  const f = $("diffupload").files[0];
  if (!f) return;
  $("heapstatus").textContent = `uploading ${f.name} (${fmt(f.size)} bytes)…`;
  const d = await post("/api/upload", f, { name: f.name });
  $("diffupload").value = "";
  if (d.error) { $("heapstatus").textContent = "✗ " + d.error; return; }
  location.hash = heapHref("diff", { other: d.session, other_dump: 1 });
};
$("heapback").onclick = () => history.back();
$("heapfwd").onclick = () => history.forward();
window.addEventListener("hashchange", () => {
  const st = heapState();
  if (!st) { if (tab === "heap") loadHeapAnswer(); return; }
  const s = Number(st.get("s"));
  if (s !== current && sessions.has(s)) select(s);
  if (tab !== "heap") showTab("heap"); else loadHeapAnswer();
});

function renderThreads(d) {
  const s = sel();
  $("threadnote").textContent = d.perThreadSamples ? "" : "What each thread was doing needs per-thread samples: run the agent with cpu=samples,thread=y.";
  $("threads").tBodies[0].innerHTML = d.threads.map((t) => {
    const doing = t.top.map((x) => `${esc(x.method)} (${fmt(x.samples)})`).join("<br>");
    const can = s && s.commands && t.objectId > 0 && t.objectId <= 0xffffffff && !t.ended;
    const id = "0x" + Number(t.objectId).toString(16);
    const buttons = can ? `<button data-cmd="sampling-off ${id}">off</button><button data-cmd="sampling-on ${id}">on</button>` : "";
    // Text streams have no times: their cells stay empty ("ended" when a
    // THREAD END was seen).
    const time = (v) => v === null || v === undefined ? "" : v.toFixed(1);
    const end = t.ended === null ? "" : t.endMs !== null ? time(t.endMs) : t.ended ? "ended" : "running";
    return `<tr><td>${t.serial}</td><td>${esc(t.name)}</td><td>${esc(t.group)}</td><td>${time(t.startMs)}</td><td>${end}</td><td>${fmt(t.samples)}</td><td class="name">${doing}</td><td>${buttons}</td></tr>`;
  }).join("");
}
$("threads").addEventListener("click", (e) => { if (e.target.dataset.cmd) send(e.target.dataset.cmd); });

function renderConsole(d) {
  if (consoleOf !== current) return;
  const pre = $("console");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.textContent += d.lines.map((l) => l[1] + "\n").join("");
  consoleSince = d.last;
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

// ---- source view ----------------------------------------------------------

async function openSource(cls, file, line) {
  const d = await api("/api/source", { class: cls, file });
  $("sourcepanel").hidden = false;
  if (d.error) { $("sourcepath").textContent = d.error; $("sourcetext").textContent = ""; return; }
  $("sourcepath").textContent = `${d.path}:${line}`;
  $("sourcetext").innerHTML = d.lines.map((l, i) => {
    const n = String(i + 1).padStart(5, " ");
    return i + 1 === line ? `<span class="at" id="srcline">${n}  ${esc(l)}</span>` : `${n}  ${esc(l)}`;
  }).join("\n");
  const at = $("srcline");
  if (at) at.scrollIntoView({ block: "center" });
}
$("sourceclose").onclick = () => { $("sourcepanel").hidden = true; };
document.addEventListener("click", (e) => {
  const el = e.target.closest("[data-src]");
  if (el) { const [c, f, l] = JSON.parse(el.dataset.src); openSource(c, f, l); }
});

// ---- commands and session actions -----------------------------------------

async function send(cmd) {
  if (current === null) return;
  const d = await post(`/api/session/${current}/command`, cmd);
  $("cmdresult").textContent = d.error ? "✗ " + d.error : "✓ sent " + d.sent;
}
for (const b of document.querySelectorAll("#commands button[data-cmd]")) b.onclick = () => send(b.dataset.cmd);
$("setdepth").onclick = () => send("depth " + parseInt($("depth").value, 10));
$("exitvm").onclick = () => { if (confirm("Exit the profiled JVM? Its process ends now.")) send("exit"); };
setInterval(() => { const s = sel(); if ($("autocpu").checked && s && s.commands) send("cpu 0"); }, 2000);

async function mark(which) {
  const d = await post(`/api/session/${current}/mark`, which);
  $("markinfo").textContent = d.error ? "✗ " + d.error : "";
  if (!d.error && which === "begin") $("between").checked = true;
  refreshView();
}
$("markbegin").onclick = () => mark("begin");
$("markend").onclick = () => mark("end");
$("markclear").onclick = () => { $("between").checked = false; mark("clear"); };

$("stop").onclick = async () => {
  const d = await post(`/api/session/${current}/stop`, "");
  $("sessresult").textContent = d.error ? "✗ " + d.error : "✓ " + d.stopped;
};
$("close").onclick = async () => {
  const d = await post(`/api/session/${current}/close`, "");
  if (d.error) { $("sessresult").textContent = "✗ " + d.error; return; }
  current = null; shownKey = null; $("sessresult").textContent = "";
  $("title").textContent = "Session closed."; $("sessionbar").hidden = true; $("sessionview").hidden = true;
  refreshSessions();
};

$("openbtn").onclick = () => $("upload").click();
$("upload").onchange = async () => {
  const f = $("upload").files[0];
  if (!f) return;
  $("uploadresult").textContent = `uploading ${f.name} (${fmt(f.size)} bytes)…`;
  const d = await post("/api/upload", f, { name: f.name });
  $("uploadresult").textContent = d.error ? "✗ " + d.error : `✓ ${f.name}: session #${d.session}`;
  $("upload").value = "";
  if (d.session) select(d.session);
};

$("launchbtn").onclick = async () => {
  $("attachpanel").hidden = true;
  $("launchpanel").hidden = false;
  const d = await api("/api/launch");
  $("launchagent").textContent = d.available ? "agent: " + d.agent : "✗ " + d.message;
  $("launchagent").className = d.available ? "note" : "error";
  $("launchgo").disabled = !d.available;
};
$("launchcancel").onclick = () => { $("launchpanel").hidden = true; };
$("launchgo").onclick = async () => {
  $("launchresult").textContent = "starting…";
  const d = await post("/api/launch", JSON.stringify({ command: $("launchcmd").value, options: $("launchopts").value, cwd: $("launchcwd").value }));
  if (d.error) { $("launchresult").textContent = "✗ " + d.error; $("launchresult").className = "error"; return; }
  $("launchresult").textContent = ""; $("launchresult").className = "";
  select(d.session);
};

async function listJvms() {
  const d = await api("/api/attach");
  $("attachagent").textContent = d.available ? "agent: " + d.agent : "✗ " + d.message;
  $("attachagent").className = d.available ? "note" : "error";
  const box = $("attachpid");
  box.textContent = "";
  for (const j of d.jvms || []) {
    const o = document.createElement("option");
    o.value = j.pid;
    o.textContent = `${j.pid} ${j.command || "?"}` + (j.java_version ? ` (Java ${j.java_version})` : "") +
      (j.agent_loaded ? " — agent loaded" : "") + (j.attachable === false ? " — attach disabled" : "");
    box.appendChild(o);
  }
  $("attachgo").disabled = !d.available || !box.options.length;
  if (!box.options.length) $("attachresult").textContent = "no JVM of this user found";
}
$("attachbtn").onclick = () => { $("launchpanel").hidden = true; $("attachpanel").hidden = false; $("attachresult").textContent = ""; listJvms(); };
$("attachrefresh").onclick = listJvms;
$("attachcancel").onclick = () => { $("attachpanel").hidden = true; };
$("attachgo").onclick = async () => {
  $("attachresult").textContent = "attaching…";
  const d = await post("/api/attach", JSON.stringify({ pid: $("attachpid").value, options: $("attachopts").value }));
  if (d.error) { $("attachresult").textContent = "✗ " + d.error; $("attachresult").className = "error"; return; }
  $("attachresult").textContent = ""; $("attachresult").className = "";
  select(d.session);
};

// ---- tabs and inputs --------------------------------------------------------

function showTab(name) {
  tab = name;
  for (const x of document.querySelectorAll("#tabs button")) x.classList.toggle("active", x.dataset.tab === name);
  for (const t of document.querySelectorAll(".tab")) t.hidden = t.id !== "tab-" + tab;
  refreshView();
}
for (const b of document.querySelectorAll("#tabs button")) b.onclick = () => showTab(b.dataset.tab);
for (const id of ["filter", "threadsel", "gran", "classfilter", "memfilter", "sort", "between", "heapfilter", "heapsort", "heapdump"]) {
  $(id).addEventListener("input", () => {
    sitesOffset = 0; hotOffset = 0; heapOffset = 0;
    cpuOpen = new Map(); memOpen = new Map();
    const s = sel();
    if (s) link("svg", `/api/session/${s.id}/flame.svg?` + query(cpuParams()), s.cpuSections > 0);
    refreshView();
  });
}
for (const r of document.querySelectorAll('input[name="cpuview"], input[name="memview"]')) r.addEventListener("change", refreshView);

// A page opened on an analyser answer's address shows it.
refreshSessions().then(() => {
  const st = heapState();
  if (st && sessions.has(Number(st.get("s")))) { select(Number(st.get("s"))); showTab("heap"); }
}).then(connectEvents);
