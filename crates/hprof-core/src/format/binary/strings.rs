//! UTF8 records: written lazily, once per distinct string, IDs in order of
//! first use starting at 0xA0000001.

use std::collections::HashMap;

use super::enc::{self, tag, IdSize};

/// First string ID handed out.
pub const FIRST_STRING_ID: u64 = 0xA000_0001;

#[derive(Debug)]
pub struct StringTable {
    ids: HashMap<String, u64>,
    next: u64,
}

impl Default for StringTable {
    fn default() -> Self {
        StringTable {
            ids: HashMap::new(),
            next: FIRST_STRING_ID,
        }
    }
}

impl StringTable {
    /// ID of `s`, writing its UTF8 record to `out` first if it is new.
    /// `None` (a missing string) is ID 0 and writes nothing.
    pub fn id(&mut self, out: &mut Vec<u8>, time: u32, size: IdSize, s: Option<&str>) -> u64 {
        let Some(s) = s else { return 0 };
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.next;
        self.next += 1;
        self.ids.insert(s.to_owned(), id);
        enc::record(out, tag::UTF8, time, |b| {
            enc::id(b, size, id);
            b.extend_from_slice(s.as_bytes());
        });
        id
    }

    /// A UTF8 record of `s` under a new ID, even if `s` was written before
    /// (a note that must follow the record it is about; nothing refers to
    /// it by ID).
    pub fn fresh(&mut self, out: &mut Vec<u8>, time: u32, size: IdSize, s: &str) -> u64 {
        let id = self.next;
        self.next += 1;
        enc::record(out, tag::UTF8, time, |b| {
            enc::id(b, size, id);
            b.extend_from_slice(s.as_bytes());
        });
        id
    }
}
