// A small ray tracer: spheres on a plane, two lights, shadows, one reflection bounce.
// Usage: rhino raytrace.js [frames]   (default 4 frames of 160x120)
function Vec(x, y, z) { this.x = x; this.y = y; this.z = z; }
Vec.prototype.add = function (o) { return new Vec(this.x + o.x, this.y + o.y, this.z + o.z); };
Vec.prototype.sub = function (o) { return new Vec(this.x - o.x, this.y - o.y, this.z - o.z); };
Vec.prototype.mul = function (k) { return new Vec(this.x * k, this.y * k, this.z * k); };
Vec.prototype.dot = function (o) { return this.x * o.x + this.y * o.y + this.z * o.z; };
Vec.prototype.norm = function () { var l = Math.sqrt(this.dot(this)); return this.mul(1 / l); };

function Sphere(c, r, color, refl) { this.c = c; this.r = r; this.color = color; this.refl = refl; }
Sphere.prototype.hit = function (o, d) {
  var oc = o.sub(this.c);
  var b = oc.dot(d), c = oc.dot(oc) - this.r * this.r;
  var disc = b * b - c;
  if (disc < 0) return -1;
  var s = Math.sqrt(disc), t = -b - s;
  if (t > 1e-4) return t;
  t = -b + s;
  return t > 1e-4 ? t : -1;
};
Sphere.prototype.normal = function (p) { return p.sub(this.c).norm(); };

function Plane(y, color) { this.y = y; this.color = color; this.refl = 0.2; }
Plane.prototype.hit = function (o, d) {
  if (Math.abs(d.y) < 1e-6) return -1;
  var t = (this.y - o.y) / d.y;
  return t > 1e-4 ? t : -1;
};
Plane.prototype.normal = function (p) { return new Vec(0, 1, 0); };

var scene = [
  new Sphere(new Vec(0, 1, 5), 1, new Vec(0.9, 0.2, 0.2), 0.3),
  new Sphere(new Vec(-2, 0.7, 6), 0.7, new Vec(0.2, 0.9, 0.2), 0.1),
  new Sphere(new Vec(2, 1.2, 7), 1.2, new Vec(0.2, 0.3, 0.9), 0.5),
  new Sphere(new Vec(0.5, 0.3, 3.5), 0.3, new Vec(0.9, 0.9, 0.2), 0.0),
  new Plane(0, new Vec(0.8, 0.8, 0.8))
];
var lights = [new Vec(-5, 8, 0), new Vec(6, 5, 2)];

function closest(o, d) {
  var best = null, bt = Infinity;
  for (var i = 0; i < scene.length; i++) {
    var t = scene[i].hit(o, d);
    if (t > 0 && t < bt) { bt = t; best = scene[i]; }
  }
  return best === null ? null : { obj: best, t: bt };
}

function shadowed(p, l) {
  var d = l.sub(p), dist = Math.sqrt(d.dot(d));
  d = d.mul(1 / dist);
  for (var i = 0; i < scene.length; i++) {
    var t = scene[i].hit(p, d);
    if (t > 0 && t < dist) return true;
  }
  return false;
}

function trace(o, d, depth) {
  var h = closest(o, d);
  if (h === null) return new Vec(0.1, 0.1, 0.2);
  var p = o.add(d.mul(h.t)), n = h.obj.normal(p);
  var col = h.obj.color.mul(0.1);
  for (var i = 0; i < lights.length; i++) {
    if (shadowed(p, lights[i])) continue;
    var ld = lights[i].sub(p).norm();
    var diff = Math.max(0, n.dot(ld));
    col = col.add(h.obj.color.mul(0.8 * diff));
  }
  if (depth > 0 && h.obj.refl > 0) {
    var r = d.sub(n.mul(2 * d.dot(n)));
    col = col.mul(1 - h.obj.refl).add(trace(p, r, depth - 1).mul(h.obj.refl));
  }
  return col;
}

function render(w, h) {
  var sum = 0, eye = new Vec(0, 1.5, -1);
  for (var y = 0; y < h; y++) {
    for (var x = 0; x < w; x++) {
      var d = new Vec((x - w / 2) / w, (h / 2 - y) / h, 1).norm();
      var c = trace(eye, d, 2);
      sum += c.x + c.y + c.z;
    }
  }
  return sum;
}

var frames = arguments.length > 0 ? parseInt(arguments[0], 10) : 4, total = 0;
for (var f = 0; f < frames; f++) total += render(160, 120);
print("frames=" + frames + " checksum=" + total.toFixed(3));
