//! Names a binary HPROF file defines before it uses them: UTF8 strings,
//! LOAD CLASS, FRAME and TRACE records. Shared by the text transcoder (the
//! tool's `print`, the agent's text heap dumps from the VM's dumper) and
//! `flame`.

use crate::reader::{java_class_name, Frame, LoadClass, RecordBody, Trace};
use rustc_hash::FxHashMap as HashMap;

#[derive(Default)]
pub struct Symbols {
    pub strings: HashMap<u64, String>,
    /// class serial -> LOAD CLASS
    pub classes: HashMap<u32, LoadClass>,
    /// class object ID -> class serial
    pub class_ids: HashMap<u64, u32>,
    pub frames: HashMap<u64, Frame>,
    pub traces: HashMap<u32, Trace>,
}

impl Symbols {
    /// Remember what `body` defines; true if it was a definition.
    pub fn learn(&mut self, body: &RecordBody) -> bool {
        match body {
            RecordBody::Utf8 { id, text } => {
                self.strings.insert(*id, text.clone());
            }
            RecordBody::LoadClass(lc) => {
                self.classes.insert(lc.class_serial, *lc);
                self.class_ids.insert(lc.class_id, lc.class_serial);
            }
            RecordBody::Frame(f) => {
                self.frames.insert(f.id, *f);
            }
            RecordBody::Trace(t) => {
                self.traces.insert(t.serial, t.clone());
            }
            _ => return false,
        }
        true
    }

    pub fn string(&self, id: u64) -> Option<&str> {
        self.strings.get(&id).map(String::as_str)
    }

    /// Class name as written in the file (Java style for our agent, internal
    /// form for HotSpot), by serial.
    pub fn class_name(&self, serial: u32) -> Option<&str> {
        self.classes
            .get(&serial)
            .and_then(|c| self.string(c.name_id))
    }

    pub fn class_name_by_id(&self, class_id: u64) -> Option<&str> {
        self.class_ids
            .get(&class_id)
            .and_then(|s| self.class_name(*s))
    }

    /// `pkg.Class.method` of a frame, Java style.
    pub fn frame_label(&self, frame_id: u64) -> String {
        match self.frames.get(&frame_id) {
            None => format!("<unknown frame 0x{frame_id:x}>"),
            Some(f) => {
                let class = self
                    .class_name(f.class_serial)
                    .map(java_class_name)
                    .unwrap_or_else(|| "<Unknown Class>".into());
                let method = self.string(f.method_name_id).unwrap_or("<Unknown Method>");
                format!("{class}.{method}")
            }
        }
    }
}

/// A class name in any of the spellings HPROF files use (`java.lang.String`,
/// `java/lang/String`, `int[]`, `[I`, `[Ljava/lang/String;`) as a JVM type
/// signature (`Ljava/lang/String;`, `[I`), which the text serializer renders.
pub fn class_signature(name: &str) -> String {
    if name.starts_with('[') {
        return name.replace('.', "/");
    }
    let mut base = name;
    let mut dims = 0;
    while let Some(b) = base.strip_suffix("[]") {
        base = b;
        dims += 1;
    }
    let prim = match base {
        "boolean" => Some('Z'),
        "char" => Some('C'),
        "float" => Some('F'),
        "double" => Some('D'),
        "byte" => Some('B'),
        "short" => Some('S'),
        "int" => Some('I'),
        "long" => Some('J'),
        _ => None,
    };
    let elem = match prim {
        Some(c) if dims > 0 => c.to_string(),
        _ => format!("L{};", base.replace('.', "/")),
    };
    format!("{}{elem}", "[".repeat(dims))
}

#[cfg(test)]
mod tests {
    use super::class_signature;

    #[test]
    fn every_spelling_becomes_a_signature() {
        assert_eq!(class_signature("java.lang.String"), "Ljava/lang/String;");
        assert_eq!(class_signature("java/lang/String"), "Ljava/lang/String;");
        assert_eq!(class_signature("int[]"), "[I");
        assert_eq!(
            class_signature("java.lang.Object[][]"),
            "[[Ljava/lang/Object;"
        );
        assert_eq!(
            class_signature("[Ljava/lang/String;"),
            "[Ljava/lang/String;"
        );
        assert_eq!(class_signature("[[J"), "[[J");
    }
}
