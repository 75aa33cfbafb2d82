// The flame graph's zoom and search, inside the SVG document itself so the
// file works offline, alone, in any browser (hprof-rs flame --svg, the
// page's download), and in the page, which shows the same document.
// State lives in the document's URL fragment: #zoom=<names from the root,
// joined by \u0001, URI-encoded>&search=<regular expression>; the page
// keeps it across refreshes and drives search through it.
(function () {
  "use strict";
  // The SVG this script is in: the document itself, or an <svg> inside an
  // HTML page (hprof-rs profile -o out.html), where the page is the document.
  var me = document.currentScript;
  var svg = (me && me.ownerSVGElement) || document.documentElement;
  var W = +svg.getAttribute("data-width"), PAD = +svg.getAttribute("data-pad");
  var ROW = +svg.getAttribute("data-row"), BOTTOM = +svg.getAttribute("data-bottom");
  var frames = [].slice.call(svg.querySelectorAll("g.f"));
  // Each frame's drawn geometry, its level and name, read once.
  var F = frames.map(function (g) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    return {
      g: g, r: r, t: t, n: g.getAttribute("data-n"),
      x: +r.getAttribute("x"), w: +r.getAttribute("width"),
      l: Math.round((BOTTOM - +r.getAttribute("y")) / ROW),
      fill: r.getAttribute("fill")
    };
  });
  var EPS = 0.01;
  var reset = svg.querySelector("#reset"), matched = svg.querySelector("#matched");
  var details = svg.querySelector("#details");
  var zoomed = null, term = "";

  function label(f, w) {
    var chars = Math.floor((w - 6) / 7);
    if (chars < 3) return "";
    return f.n.length <= chars ? f.n : f.n.slice(0, chars - 2) + "..";
  }
  function place(f, x, w, shown, parent) {
    // Presentation attributes, not style: a Content-Security-Policy
    // without 'unsafe-inline' (the page's) allows them.
    if (!shown) { f.g.setAttribute("display", "none"); return; }
    f.g.removeAttribute("display");
    f.r.setAttribute("x", x.toFixed(2));
    f.r.setAttribute("width", Math.max(w, 0.1).toFixed(2));
    if (parent) f.g.setAttribute("opacity", "0.5"); else f.g.removeAttribute("opacity");
    if (f.t) {
      f.t.setAttribute("x", (x + 3).toFixed(2));
      f.t.textContent = label(f, w);
    }
  }
  function within(f, z) {
    return f.l >= z.l && f.x >= z.x - EPS && f.x + f.w <= z.x + z.w + EPS;
  }
  function above(f, z) {
    return f.l < z.l && f.x <= z.x + EPS && f.x + f.w >= z.x + z.w - EPS;
  }
  function zoom(z) {
    zoomed = z;
    if (z) reset.removeAttribute("display"); else reset.setAttribute("display", "none");
    for (var i = 0; i < F.length; i++) {
      var f = F[i];
      if (!z) place(f, f.x, f.w, true, false);
      else if (within(f, z)) place(f, PAD + (f.x - z.x) * W / z.w, f.w * W / z.w, true, false);
      else if (above(f, z)) place(f, PAD, W, true, true);
      else place(f, 0, 0, false, false);
    }
    search(term);
  }
  // The names from the root to a frame (its ancestors contain it).
  function path(z) {
    var p = [];
    for (var i = 0; i < F.length; i++) if (above(F[i], z)) p.push(F[i]);
    p.sort(function (a, b) { return a.l - b.l; });
    return p.map(function (f) { return f.n; }).concat([z.n]);
  }
  function find(names) {
    var cur = null;
    for (var d = 0; d < names.length; d++) {
      var next = null;
      for (var i = 0; i < F.length && !next; i++) {
        var f = F[i];
        if (f.l === d && f.n === names[d] && (!cur || within(f, cur))) next = f;
      }
      if (!next) return cur;
      cur = next;
    }
    return cur;
  }
  function search(t) {
    term = t || "";
    var re = null;
    if (term) {
      try { re = new RegExp(term); } catch (e) { re = null; }
    }
    var hits = [];
    for (var i = 0; i < F.length; i++) {
      var f = F[i], hit = !!re && f.g.getAttribute("display") !== "none" && re.test(f.n);
      f.r.setAttribute("fill", hit ? "rgb(230,0,230)" : f.fill);
      if (hit) hits.push(zoomed && !within(f, zoomed) ? null : f);
    }
    // Share of the shown width under a match, overlapping frames counted once.
    var spans = hits.filter(Boolean).map(function (f) {
      return [+f.r.getAttribute("x"), +f.r.getAttribute("x") + +f.r.getAttribute("width")];
    }).sort(function (a, b) { return a[0] - b[0]; });
    var sum = 0, end = -1;
    spans.forEach(function (s) {
      if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }
      else if (s[1] > end) { sum += s[1] - end; end = s[1]; }
    });
    matched.textContent = term ? "matched " + (sum * 100 / W).toFixed(1) + "% (" + term + ")" : "";
    matched.setAttribute("data-share", term ? (sum * 100 / W).toFixed(1) : "");
  }
  function state() {
    var s = [];
    if (zoomed) s.push("zoom=" + encodeURIComponent(path(zoomed).join("\u0001")));
    if (term) s.push("search=" + encodeURIComponent(term));
    return s.join("&");
  }
  function save() {
    var s = state();
    if (location.hash.slice(1) !== s) history.replaceState(null, "", s ? "#" + s : location.pathname + location.search);
  }
  function load() {
    var z = null, t = "";
    location.hash.slice(1).split("&").forEach(function (kv) {
      var i = kv.indexOf("="), k = kv.slice(0, i), v = decodeURIComponent(kv.slice(i + 1));
      if (k === "zoom" && v) z = find(v.split("\u0001"));
      if (k === "search") t = v;
    });
    term = t;
    zoom(z);
  }
  svg.addEventListener("click", function (e) {
    var g = e.target.closest ? e.target.closest("g.f") : null;
    if (g) { zoom(F[frames.indexOf(g)]); save(); return; }
    if (e.target === reset) { zoom(null); save(); return; }
    if (e.target.id === "searchbtn") {
      var t = prompt("Search frames (regular expression)", term);
      if (t !== null) { search(t); save(); }
    }
  });
  var hovered = null;
  svg.addEventListener("mouseover", function (e) {
    var g = e.target.closest ? e.target.closest("g.f") : null;
    if (hovered) hovered.removeAttribute("stroke");
    hovered = g ? g.querySelector("rect") : null;
    if (hovered) hovered.setAttribute("stroke", "black");
    var title = g && g.querySelector("title");
    details.textContent = title ? title.textContent : "";
  });
  document.addEventListener("keydown", function (e) {
    if ((e.ctrlKey && e.key === "f") || e.key === "/") {
      e.preventDefault();
      var t = prompt("Search frames (regular expression)", term);
      if (t !== null) { search(t); save(); }
    } else if (e.key === "Escape") { zoom(null); search(""); save(); }
  });
  window.addEventListener("hashchange", load);
  load();
})();
