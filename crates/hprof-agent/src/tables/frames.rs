//! Methods and frames.
//!
//! A frame is what a reader sees of it: with line numbers (`lineno=y`, the
//! default) a (method, line) pair, so every byte-code location of one line
//! (a loop written on one line: its body and its back branch) is one frame
//! and one stack is one trace; with `lineno=n`, the original's rule, a
//! (method, byte-code location) pair, so two call sites in one method stay
//! two frames although they print alike. Frame IDs are `0x70000000 + slot`. Method facts are fetched from JVMTI
//! once per jmethodID by a resolver the caller passes in, which keeps this
//! table free of JVM calls and testable on its own.

use super::ids::FRAME_ID_BASE;
use dashmap::DashMap;
use parking_lot::RwLock;
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct MethodEntry {
    pub class_serial: u32,
    /// JVM signature of the declaring class (`Ljava/lang/String;`).
    pub class_signature: String,
    pub name: String,
    /// Method descriptor, e.g. `(I)C`.
    pub signature: String,
    pub source_file: Option<String>,
    /// (start location, line number), as GetLineNumberTable returns them.
    pub lines: Vec<(i64, i32)>,
}

impl MethodEntry {
    /// Line of a byte-code location: the entry with the greatest start not
    /// after it; -1 when the method has no line table (native, synthetic).
    pub fn line_at(&self, location: i64) -> i32 {
        let mut best: Option<(i64, i32)> = None;
        for &(start, line) in &self.lines {
            if start <= location && best.is_none_or(|(s, _)| start >= s) {
                best = Some((start, line));
            }
        }
        // 0 and negative lines are not real lines; readers treat 0 as invalid.
        best.map_or(-1, |(_, l)| if l > 0 { l } else { -1 })
    }

    /// First byte-code location of the line `location` is on (the start of
    /// the line-table entry that covers it), or `location` itself when the
    /// method has no line for it. Frames sampled anywhere on a line then
    /// share one frame.
    pub fn line_start(&self, location: i64) -> i64 {
        let line = self.line_at(location);
        if line < 0 {
            return location;
        }
        // The covering entry's start; other entries of the same line (a
        // loop's condition compiled after its body) stay apart.
        self.lines
            .iter()
            .filter(|&&(start, _)| start <= location)
            .map(|&(start, _)| start)
            .max()
            .unwrap_or(location)
    }
}

#[derive(Debug)]
pub struct FrameEntry {
    pub id: u32,
    pub method: Arc<MethodEntry>,
    pub location: i64,
    /// Line to print: -1 = unknown (no table, native, or `lineno=n`).
    pub line: i32,
}

#[derive(Default)]
pub struct FrameTable {
    methods: DashMap<usize, Arc<MethodEntry>>,
    /// (method, location) -> frame: the lookup of every capture.
    by_key: DashMap<(usize, i64), u32>,
    /// (method, line) -> frame, with line numbers on: where locations of
    /// one line meet.
    by_line: DashMap<(usize, i32), u32>,
    entries: RwLock<Vec<Arc<FrameEntry>>>,
}

impl FrameTable {
    /// Frame id of (method, location), creating the frame on first sight.
    /// `resolve` is called at most once per method id to describe it; None
    /// (method unloaded, JVMTI error) makes the frame unknown → None.
    pub fn frame_id(
        &self,
        method: usize,
        location: i64,
        lineno: bool,
        resolve: impl FnOnce() -> Option<MethodEntry>,
    ) -> Option<u32> {
        if let Some(id) = self.by_key.get(&(method, location)) {
            return Some(*id);
        }
        let entry = self.method(method, resolve)?;
        let new_frame = |line: i32| {
            let mut v = self.entries.write();
            let id = FRAME_ID_BASE + v.len() as u32 + 1;
            v.push(Arc::new(FrameEntry {
                id,
                method: entry.clone(),
                location,
                line,
            }));
            id
        };
        // entry() holds the shard lock, so a racing thread cannot create a
        // second frame for the same key.
        let id = if lineno {
            let line = entry.line_at(location);
            let id = *self
                .by_line
                .entry((method, line))
                .or_insert_with(|| new_frame(line));
            self.by_key.insert((method, location), id);
            id
        } else {
            *self
                .by_key
                .entry((method, location))
                .or_insert_with(|| new_frame(-1))
        };
        Some(id)
    }

    /// Cached method description, resolving it on first use.
    pub fn method(
        &self,
        method: usize,
        resolve: impl FnOnce() -> Option<MethodEntry>,
    ) -> Option<Arc<MethodEntry>> {
        if let Some(m) = self.methods.get(&method) {
            return Some(m.clone());
        }
        let m = Arc::new(resolve()?);
        Some(self.methods.entry(method).or_insert(m).clone())
    }

    pub fn get(&self, id: u32) -> Option<Arc<FrameEntry>> {
        let idx = id.checked_sub(FRAME_ID_BASE + 1)? as usize;
        self.entries.read().get(idx).cloned()
    }

    pub fn len(&self) -> usize {
        self.entries.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method() -> MethodEntry {
        MethodEntry {
            class_serial: 100_001,
            class_signature: "LHello;".into(),
            name: "main".into(),
            signature: "([Ljava/lang/String;)V".into(),
            source_file: Some("Hello.java".into()),
            lines: vec![(0, 5), (4, 6), (9, 8)],
        }
    }

    #[test]
    fn line_start_is_the_covering_entry() {
        let m = MethodEntry {
            lines: vec![(0, 10), (4, 11), (9, 10), (15, 0)],
            ..Default::default()
        };
        assert_eq!(m.line_start(0), 0);
        assert_eq!(m.line_start(3), 0);
        assert_eq!(m.line_start(4), 4);
        assert_eq!(m.line_start(8), 4);
        assert_eq!(m.line_start(12), 9);
        // Line 0 is no line: the location stays.
        assert_eq!(m.line_start(16), 16);
        assert_eq!(MethodEntry::default().line_start(7), 7);
    }

    #[test]
    fn line_lookup_uses_greatest_start_not_after_location() {
        let m = method();
        assert_eq!(m.line_at(0), 5);
        assert_eq!(m.line_at(3), 5);
        assert_eq!(m.line_at(4), 6);
        assert_eq!(m.line_at(100), 8);
        assert_eq!(MethodEntry::default().line_at(3), -1);
    }

    #[test]
    fn frames_are_interned_per_method_and_location() {
        let t = FrameTable::default();
        let mut resolves = 0;
        let a = t
            .frame_id(0x10, 0, true, || {
                resolves += 1;
                Some(method())
            })
            .unwrap();
        let b = t
            .frame_id(0x10, 0, true, || {
                resolves += 1;
                Some(method())
            })
            .unwrap();
        let c = t
            .frame_id(0x10, 4, true, || {
                resolves += 1;
                Some(method())
            })
            .unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(resolves, 1, "method resolved once");
        assert_eq!(a, 0x7000_0001);
        assert_eq!(t.get(c).unwrap().line, 6);
        // Another location of line 6 (a loop's back branch on the line of
        // its body) is the same frame: one stack, one trace.
        let d = t.frame_id(0x10, 7, true, || Some(method())).unwrap();
        assert_eq!(d, c);
        // A method without line numbers prints `Unknown line` everywhere:
        // one frame.
        let bare = || {
            Some(MethodEntry {
                lines: Vec::new(),
                ..method()
            })
        };
        let e = t.frame_id(0x20, 3, true, bare).unwrap();
        assert_eq!(t.frame_id(0x20, 9, true, bare).unwrap(), e);
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn lineno_n_hides_lines_but_keeps_frames_apart() {
        let t = FrameTable::default();
        let a = t.frame_id(1, 0, false, || Some(method())).unwrap();
        let b = t.frame_id(1, 4, false, || Some(method())).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.get(a).unwrap().line, -1);
    }

    #[test]
    fn unresolvable_method_gives_no_frame() {
        let t = FrameTable::default();
        assert!(t.frame_id(7, 0, true, || None).is_none());
    }
}
