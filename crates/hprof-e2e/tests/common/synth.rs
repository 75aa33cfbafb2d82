//! Heap dumps written by hand, HotSpot style (1.0.2, 8-byte IDs that are
//! 8-aligned "addresses", classes before instances): object graphs whose
//! every edge the test chose, for the heap analyser's tests and fuzzing.

/// An object graph: `refs[i]` are the objects object `i` refers to, in
/// field order; `roots` are GC roots (JNI globals).
pub struct Graph {
    pub refs: Vec<Vec<usize>>,
    pub roots: Vec<usize>,
}

/// A linked list of `n` objects from a root: `n - 1` `Node1`, then a `Node0`.
pub fn list(n: usize) -> Graph {
    Graph {
        refs: (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
            .collect(),
        roots: vec![0],
    }
}

/// [`list`]`(n)`'s dump written at `path`; returns the path.
pub fn write_list(path: &std::path::Path, n: usize) -> std::path::PathBuf {
    std::fs::write(path, dump(&list(n))).unwrap();
    path.to_path_buf()
}

/// ID of object `i` (instances sit 32 bytes apart from 0x7_0000_0000).
pub fn object_id(i: usize) -> u64 {
    0x7_0000_0000 + 32 * i as u64
}

/// ID of the class object of the class with `fields` reference fields.
pub fn class_id(fields: usize) -> u64 {
    0x6_0000_0000 + 0x100 * fields as u64
}

pub const OBJECT_CLASS: u64 = 0x6_0000_0008;

struct W(Vec<u8>);

impl W {
    fn u1(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u2(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn u4(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn id(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn record(&mut self, tag: u8, body: &[u8]) {
        self.u1(tag);
        self.u4(0);
        self.u4(body.len() as u32);
        self.0.extend_from_slice(body);
    }
}

/// The dump of `g`: class `Node<k>` (k reference fields named `f0`..) for
/// every field count used, all under `java.lang.Object`; both class
/// objects are sticky-class roots.
pub fn dump(g: &Graph) -> Vec<u8> {
    let mut w = W(Vec::new());
    w.0.extend_from_slice(b"JAVA PROFILE 1.0.2\0");
    w.u4(8);
    w.id(0);
    let mut counts: Vec<usize> = g.refs.iter().map(Vec::len).collect();
    counts.sort_unstable();
    counts.dedup();
    let max_fields = counts.last().copied().unwrap_or(0);
    // Strings: 1 = java/lang/Object, 2 + k = Node<k>, 1000 + f = f<f>.
    let utf8 = |w: &mut W, id: u64, s: &str| {
        let mut b = W(Vec::new());
        b.id(id);
        b.0.extend_from_slice(s.as_bytes());
        w.record(0x01, &b.0);
    };
    utf8(&mut w, 1, "java/lang/Object");
    for &k in &counts {
        utf8(&mut w, 2 + k as u64, &format!("Node{k}"));
    }
    for f in 0..max_fields {
        utf8(&mut w, 1000 + f as u64, &format!("f{f}"));
    }
    let mut serial = 1u32;
    let mut load = |w: &mut W, class: u64, name: u64| {
        let mut b = W(Vec::new());
        b.u4(serial);
        b.id(class);
        b.u4(0);
        b.id(name);
        w.record(0x02, &b.0);
        serial += 1;
    };
    load(&mut w, OBJECT_CLASS, 1);
    for &k in &counts {
        load(&mut w, class_id(k), 2 + k as u64);
    }
    let mut heap = W(Vec::new());
    let class_dump = |h: &mut W, id: u64, sup: u64, fields: usize| {
        h.u1(0x20);
        h.id(id);
        h.u4(0);
        h.id(sup);
        for _ in 0..5 {
            h.id(0);
        }
        h.u4((8 * fields) as u32);
        h.u2(0);
        h.u2(0);
        h.u2(fields as u16);
        for f in 0..fields {
            h.id(1000 + f as u64);
            h.u1(2);
        }
    };
    class_dump(&mut heap, OBJECT_CLASS, 0, 0);
    heap.u1(0x05);
    heap.id(OBJECT_CLASS);
    for &k in &counts {
        class_dump(&mut heap, class_id(k), OBJECT_CLASS, k);
        heap.u1(0x05);
        heap.id(class_id(k));
    }
    for &r in &g.roots {
        heap.u1(0x01);
        heap.id(object_id(r));
        heap.id(0x1234);
    }
    for (i, refs) in g.refs.iter().enumerate() {
        heap.u1(0x21);
        heap.id(object_id(i));
        heap.u4(1);
        heap.id(class_id(refs.len()));
        heap.u4((8 * refs.len()) as u32);
        for &t in refs {
            heap.id(object_id(t));
        }
    }
    w.record(0x1C, &heap.0);
    w.record(0x2C, &[]);
    w.0
}
