//! Reader of HotSpot's performance data files (`/tmp/hsperfdata_USER/PID`),
//! the memory-mapped counters `jps` and `jstat` read. `hprof-rs jvms` takes
//! a JVM's command and Java version from them, and `attach` whether the
//! JVM accepts attach at all (`-XX:+DisableAttachMechanism`).
//!
//! Layout (HotSpot's runtime/perfMemory.hpp, format major version 2): a
//! 32-byte prologue
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic, the bytes CA FE C0 C0 |
//! | 4 | 1 | byte order of what follows: 0 big-endian, 1 little-endian |
//! | 5, 6 | 1, 1 | major and minor version |
//! | 7 | 1 | accessible: 1 once the JVM has filled it in |
//! | 8 | 4 | bytes used |
//! | 12 | 4 | overflow |
//! | 16 | 8 | time stamp of the last change of structure |
//! | 24 | 4 | offset of the first entry |
//! | 28 | 4 | number of entries |
//!
//! then entries, each a 20-byte header (entry length, name offset, vector
//! length, data type, flags, units, variability, data offset; offsets from
//! the entry's start) followed by a NUL-terminated name and the data.
//! Strings are byte vectors (`B`) holding NUL-terminated text; counters are
//! scalar longs (`J`).
//!
//! The files can be written by anyone who can create a directory in /tmp,
//! so nothing in them is trusted: every offset and length is checked
//! against the bytes read, the number of entries and the bytes read are
//! capped, and a damaged entry ends the walk with what was read before it.

use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const MAGIC: [u8; 4] = [0xca, 0xfe, 0xc0, 0xc0];
const PROLOGUE_LEN: usize = 32;
const ENTRY_HEADER_LEN: usize = 20;
/// The only layout described above.
const MAJOR_VERSION: u8 = 2;
/// Most bytes read from one file (HotSpot's default is 32 KiB; the
/// `PerfDataMemorySize` flag can make it larger).
pub const FILE_MAX: u64 = 8 << 20;
/// Most entries walked (a JVM has a few hundred).
const ENTRIES_MAX: usize = 1 << 16;
/// Most hsperfdata directories, and files in one, looked at.
const DIR_ENTRIES_MAX: usize = 100_000;

/// The value of one entry.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Text(String),
    Long(i64),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PerfData {
    /// Whether the JVM had marked the data complete (the prologue's
    /// `accessible` byte); a JVM still starting up may have fewer entries.
    pub accessible: bool,
    /// Entries in file order (other types than text and long are skipped).
    pub entries: Vec<(String, Value)>,
}

impl PerfData {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Value::Text(t)) => Some(t),
            _ => None,
        }
    }

    pub fn long(&self, name: &str) -> Option<i64> {
        match self.get(name) {
            Some(Value::Long(v)) => Some(*v),
            _ => None,
        }
    }

    /// The main class (or `-jar` file, or module/class) and its
    /// arguments, as the launcher recorded them.
    pub fn java_command(&self) -> Option<&str> {
        self.text("sun.rt.javaCommand")
    }

    /// The `java.version` system property of the JVM.
    pub fn java_version(&self) -> Option<&str> {
        self.text("java.property.java.version")
    }

    /// Whether the JVM supports attach: the first of the flags in
    /// `sun.rt.jvmCapabilities` ('0' under -XX:+DisableAttachMechanism).
    pub fn attachable(&self) -> Option<bool> {
        match self.text("sun.rt.jvmCapabilities")?.as_bytes().first()? {
            b'1' => Some(true),
            b'0' => Some(false),
            _ => None,
        }
    }
}

#[derive(Clone, Copy)]
enum Order {
    Big,
    Little,
}

struct Bytes<'a> {
    b: &'a [u8],
    order: Order,
}

impl Bytes<'_> {
    fn array<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.b.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    fn u32(&self, at: usize) -> Option<u32> {
        let a = self.array::<4>(at)?;
        Some(match self.order {
            Order::Big => u32::from_be_bytes(a),
            Order::Little => u32::from_le_bytes(a),
        })
    }

    /// A length or offset: a non-negative jint.
    fn index(&self, at: usize) -> Option<usize> {
        let v = self.u32(at)?;
        if v > i32::MAX as u32 {
            return None;
        }
        usize::try_from(v).ok()
    }

    fn i64(&self, at: usize) -> Option<i64> {
        let a = self.array::<8>(at)?;
        Some(match self.order {
            Order::Big => i64::from_be_bytes(a),
            Order::Little => i64::from_le_bytes(a),
        })
    }
}

/// Text up to the first NUL of `b` (all of `b` without one).
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Parses the bytes of a perfdata file. Refuses what is not one; a
/// damaged entry ends the list of entries.
pub fn parse(bytes: &[u8]) -> Result<PerfData, String> {
    if bytes.len() < PROLOGUE_LEN {
        return Err(format!(
            "{} bytes are too few for a perfdata prologue",
            bytes.len()
        ));
    }
    if bytes[..4] != MAGIC {
        return Err("not a perfdata file (no magic number)".into());
    }
    let order = match bytes[4] {
        0 => Order::Big,
        1 => Order::Little,
        o => return Err(format!("unknown byte order {o}")),
    };
    if bytes[5] != MAJOR_VERSION {
        return Err(format!(
            "unsupported perfdata version {}.{}",
            bytes[5], bytes[6]
        ));
    }
    let b = Bytes { b: bytes, order };
    // Entries lie within the bytes the JVM says it used, when it says so.
    let end = match b.index(8) {
        Some(used) if used >= PROLOGUE_LEN => used.min(bytes.len()),
        _ => bytes.len(),
    };
    let mut data = PerfData {
        accessible: bytes[7] != 0,
        entries: Vec::new(),
    };
    let (Some(mut at), Some(count)) = (b.index(24), b.index(28)) else {
        return Ok(data);
    };
    for _ in 0..count.min(ENTRIES_MAX) {
        match entry(&b, at, end) {
            Some((len, e)) => {
                if let Some(e) = e {
                    data.entries.push(e);
                }
                at += len;
            }
            None => break,
        }
    }
    Ok(data)
}

/// The entry at `at` (ending before `end`): its length and, for text and
/// long entries, its name and value. None when the entry is damaged.
fn entry(b: &Bytes, at: usize, end: usize) -> Option<(usize, Option<(String, Value)>)> {
    let len = b.index(at)?;
    if len < ENTRY_HEADER_LEN || at.checked_add(len)? > end {
        return None;
    }
    let body = b.b.get(at..at + len)?;
    let name_offset = b.index(at + 4)?;
    let vector_length = b.index(at + 8)?;
    let data_type = *body.get(12)?;
    let data_offset = b.index(at + 16)?;
    if name_offset < ENTRY_HEADER_LEN || name_offset >= len || data_offset > len {
        return None;
    }
    let name = c_string(body.get(name_offset..)?);
    let value = match (data_type, vector_length) {
        (b'B', n) if n > 0 => {
            let text = body.get(data_offset..data_offset.checked_add(n)?)?;
            Some(Value::Text(c_string(text)))
        }
        (b'J', 0) => {
            if data_offset.checked_add(8)? > len {
                return None;
            }
            Some(Value::Long(b.i64(at + data_offset)?))
        }
        _ => None,
    };
    Some((len, value.map(|v| (name, v))))
}

/// Reads a perfdata file without following a symbolic link or blocking on
/// a FIFO someone put in its place, and at most `FILE_MAX` bytes of it;
/// with `owner`, only a file of that uid (checked on the opened file).
pub fn read_file_of(path: &Path, owner: Option<u32>) -> io::Result<Vec<u8>> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    if owner.is_some_and(|o| o != m.uid()) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not the process owner's file",
        ));
    }
    let mut v = Vec::new();
    f.take(FILE_MAX).read_to_end(&mut v)?;
    Ok(v)
}

pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    read_file_of(path, None)
}

/// Parsed perfdata of the JVM whose pid in its own namespace is `ns_pid`,
/// found in `tmp` (its /tmp as seen from here). Only a file of `owner`,
/// the JVM's effective uid, is taken: HotSpot creates it as that user, and
/// a file of another user with the same pid is stale or planted (anyone
/// may create an `hsperfdata_NAME` directory in /tmp).
pub fn for_process(tmp: &Path, ns_pid: u32, owner: u32) -> Option<PerfData> {
    hsperfdata_dirs(tmp)
        .into_iter()
        .map(|d| d.join(ns_pid.to_string()))
        .find_map(|p| parse(&read_file_of(&p, Some(owner)).ok()?).ok())
}

/// The `hsperfdata_USER` directories in `tmp` (not symbolic links).
pub fn hsperfdata_dirs(tmp: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd
        .take(DIR_ENTRIES_MAX)
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hsperfdata_"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

/// The pids named by the files of the `hsperfdata_USER` directories in
/// `tmp`, with their files.
pub fn files_in(tmp: &Path) -> Vec<(u32, PathBuf)> {
    let mut out = Vec::new();
    for dir in hsperfdata_dirs(tmp) {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.take(DIR_ENTRIES_MAX).flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
                if e.file_type().is_ok_and(|t| t.is_file()) {
                    out.push((pid, e.path()));
                }
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One entry as HotSpot lays it out: header, name, padding to 8, data.
    fn entry(little: bool, name: &str, ty: u8, vector: u32, data: &[u8]) -> Vec<u8> {
        let put = |v: u32| {
            if little {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let name_offset = ENTRY_HEADER_LEN as u32;
        let data_offset = (name_offset + name.len() as u32 + 1).next_multiple_of(8);
        let len = (data_offset + data.len() as u32).next_multiple_of(8);
        let mut e = Vec::new();
        e.extend(put(len));
        e.extend(put(name_offset));
        e.extend(put(vector));
        e.extend([ty, 0, 5, 1]);
        e.extend(put(data_offset));
        e.extend(name.as_bytes());
        e.resize(data_offset as usize, 0);
        e.extend(data);
        e.resize(len as usize, 0);
        e
    }

    /// A small perfdata file: a command, a version, capabilities, a long.
    pub fn sample(little: bool) -> Vec<u8> {
        let text = |s: &str, n: usize| {
            let mut v = s.as_bytes().to_vec();
            v.resize(n, 0);
            v
        };
        let long = if little {
            1234567i64.to_le_bytes()
        } else {
            1234567i64.to_be_bytes()
        };
        let entries = [
            entry(
                little,
                "sun.rt.javaCommand",
                b'B',
                32,
                &text("Main a b", 32),
            ),
            entry(
                little,
                "java.property.java.version",
                b'B',
                16,
                &text("17.0.15", 16),
            ),
            entry(little, "sun.rt.createVmBeginTime", b'J', 0, &long),
            entry(little, "sun.rt.jvmCapabilities", b'B', 64, &text("10", 64)),
        ];
        let body: Vec<u8> = entries.concat();
        let put = |v: u32| {
            if little {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let mut f = MAGIC.to_vec();
        f.extend([u8::from(little), 2, 0, 1]);
        f.extend(put((PROLOGUE_LEN + body.len()) as u32));
        f.extend(put(0));
        f.extend([0; 8]);
        f.extend(put(PROLOGUE_LEN as u32));
        f.extend(put(entries.len() as u32));
        f.extend(body);
        f.resize(4096, 0);
        f
    }

    #[test]
    fn reads_both_byte_orders() {
        for little in [true, false] {
            let d = parse(&sample(little)).unwrap();
            assert!(d.accessible);
            assert_eq!(d.java_command(), Some("Main a b"));
            assert_eq!(d.java_version(), Some("17.0.15"));
            assert_eq!(d.long("sun.rt.createVmBeginTime"), Some(1234567));
            assert_eq!(d.attachable(), Some(true));
            assert_eq!(d.entries.len(), 4);
        }
    }

    #[test]
    fn refuses_what_is_not_perfdata() {
        assert!(parse(b"short").is_err());
        assert!(parse(&[0u8; 64]).is_err());
        let mut f = sample(true);
        f[4] = 7;
        assert_eq!(parse(&f).unwrap_err(), "unknown byte order 7");
        let mut f = sample(true);
        f[5] = 1;
        assert_eq!(parse(&f).unwrap_err(), "unsupported perfdata version 1.0");
    }

    #[test]
    fn a_damaged_entry_ends_the_walk() {
        let f = sample(true);
        let first_len = u32::from_le_bytes(f[32..36].try_into().unwrap()) as usize;
        // The second entry's length set past the end of the file.
        let mut g = f.clone();
        g[32 + first_len..32 + first_len + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let d = parse(&g).unwrap();
        assert_eq!(d.entries.len(), 1);
        assert_eq!(d.java_command(), Some("Main a b"));
        // A count of 2^31 entries walks only those present.
        let mut g = f.clone();
        g[28..32].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
        assert_eq!(parse(&g).unwrap().entries.len(), 4);
        // A name offset inside the header.
        let mut g = f;
        g[36..40].copy_from_slice(&3u32.to_le_bytes());
        assert!(parse(&g).unwrap().entries.is_empty());
    }

    #[test]
    fn disabled_attach_reads_as_not_attachable() {
        let mut f = sample(true);
        let name = b"sun.rt.jvmCapabilities";
        let after = f.windows(name.len()).position(|w| w == name).unwrap() + name.len();
        let at = after + f[after..].windows(2).position(|w| w == b"10").unwrap();
        f[at] = b'0';
        assert_eq!(parse(&f).unwrap().attachable(), Some(false));
    }
}
