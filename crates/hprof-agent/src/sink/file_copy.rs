//! Bytes of another file into the output: a range copied by the kernel
//! where it can, or the other file taken as the output itself. Both serve
//! heap dumps by the VM's dumper, whose heap records go to our output
//! unchanged (docs/heap_dump.md, "The VM's dumper").

use super::Sink;
use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// `len` bytes of `file` from `offset`, to follow the output so far.
pub struct FileRange<'a> {
    pub file: &'a File,
    pub offset: u64,
    pub len: u64,
}

/// A file to become the output (see [`Sink::adopt`]).
pub struct Adoption<'a> {
    /// Open for reading and writing.
    pub file: &'a File,
    /// Its name; renamed to the output's.
    pub path: &'a Path,
    /// Its bytes from here to its end stay where they are on the disk.
    pub keep_from: u64,
    /// Bytes to go between the output so far and the kept part.
    pub head: &'a [u8],
    /// Pieces of `head` (start, end; each at least 17 bytes, in order,
    /// not overlapping) that may go after the kept part instead, when the
    /// rest would not fit before it.
    pub movable: &'a [(usize, usize)],
}

/// Copies through the kernel go in pieces of this size.
const KERNEL_PIECE: usize = 8 << 20;
/// Copies through a buffer go in pieces of this size (see
/// `FILE_WRITE_PIECE`).
const BUFFER_PIECE: usize = 1 << 20;

/// The smallest record that can fill a gap: a UTF8 record with its ID.
const FILLER_MIN: u64 = 9 + 8;

/// Errors of copy_file_range(2) and sendfile(2) that mean "not for these
/// two files": the bytes then go through a buffer.
fn unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EXDEV | libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP | libc::EBADF)
    )
}

fn ended_early(r: &FileRange<'_>, at: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "the file to copy ends at byte {at}, before {} (copy of {} bytes from {})",
            r.offset + r.len,
            r.len,
            r.offset
        ),
    )
}

impl Sink {
    /// Write `r` after what was written so far: inside the kernel where it
    /// can (copy_file_range to a file, sendfile to a socket, under the same
    /// stall rule as writes), else through a buffer (gzip, recordings,
    /// another filesystem).
    pub fn copy_range(&mut self, r: &FileRange<'_>) -> io::Result<()> {
        let mut at = r.offset;
        let end = r.offset + r.len;
        match self {
            Sink::File(f, _) => {
                while at < end {
                    let want = (end - at).min(KERNEL_PIECE as u64) as usize;
                    match crate::os::copy_file_range(r.file, &mut at, f, None, want) {
                        Ok(0) => return Err(ended_early(r, at)),
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) if unsupported(&e) => break,
                        Err(e) => return Err(e),
                    }
                }
            }
            Sink::Socket(s) => {
                // Sent before the call that failed, if one fails.
                let before = std::cell::Cell::new(0u64);
                let sent = super::send_bounded(
                    end - at,
                    |done| {
                        before.set(done);
                        let mut off = r.offset + done;
                        let want = (end - off).min(KERNEL_PIECE as u64) as usize;
                        crate::os::sendfile(s, r.file, &mut off, want)
                    },
                    |done| ended_early(r, r.offset + done),
                );
                match sent {
                    Ok(()) => return Ok(()),
                    // Not for this file: the rest through a buffer.
                    Err(e) if unsupported(&e) => at = r.offset + before.get(),
                    Err(e) => return Err(e),
                }
            }
            _ => {}
        }
        let mut buf = vec![0u8; BUFFER_PIECE.min((end - at) as usize)];
        while at < end {
            let n = (end - at).min(buf.len() as u64) as usize;
            match r.file.read_at(&mut buf[..n], at) {
                Ok(0) => return Err(ended_early(r, at)),
                Ok(k) => {
                    self.write_all_bounded(&buf[..k])?;
                    at += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Make `a.file` the output file, its bytes from `a.keep_from` on
    /// staying where they are on the disk: the output so far and `a.head`
    /// are written at its beginning, before the kept part (pieces of the
    /// head marked movable go after the kept part if the rest would not
    /// fit; the few bytes left over become one UTF8 record no record
    /// names), then it is renamed to the output's name, with the output's
    /// mode, and written on from its end. Nothing is copied but the output
    /// so far, so a heap dump of the VM costs the disk and the page cache
    /// nothing more than the VM's own. (Resizing the file's beginning
    /// instead, FALLOC_FL_INSERT_RANGE, was measured: ext4 first writes
    /// every dirty page of the file back and drops it from the page cache,
    /// 0.37 s for a fresh 1.2 GB dump here, more on a slower disk.)
    ///
    /// Returns the moved pieces: the caller writes them next. Only done
    /// for a regular file the agent opened by its name, still there under
    /// that name with one link, owned like `a.file` and on its filesystem,
    /// where the output so far and the head fit; anything else is refused
    /// with the reason, the output as it was and the kept part where it
    /// was (the caller can still copy it).
    pub fn adopt(&mut self, a: &Adoption<'_>) -> Result<Vec<u8>, String> {
        let vm = a.file.metadata().map_err(|e| format!("dump file: {e}"))?;
        let om = self.adoption_target(&vm)?;
        let Sink::File(out, Some(out_path)) = self else {
            return Err("the output is not a file of the agent's".into());
        };
        let io = |what: &str, e: io::Error| format!("{what}: {e}");
        let x = out
            .stream_position()
            .map_err(|e| io("output position", e))?;
        if x != om.len() {
            return Err("the output file is not written to its end".into());
        }
        let kept = vm.len().saturating_sub(a.keep_from);
        if x > kept || a.keep_from > vm.len() {
            return Err(
                "the output so far is larger than the dump (copying the dump costs less)".into(),
            );
        }
        // What goes before the kept part, what after it.
        let (front, after) = fit(x, a.head, a.movable, a.keep_from).ok_or_else(|| {
            format!(
                "the output so far ({x} bytes) and the VM's records before its heap ({} bytes) do not fit before its heap records ({} bytes)",
                a.head.len(),
                a.keep_from
            )
        })?;
        let head_end = x + front.len() as u64;
        // The output so far, read through a handle of its own (ours is
        // write-only), checked to be the same file.
        let src = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&*out_path)
            .map_err(|e| io("cannot read the output", e))?;
        let sm = src.metadata().map_err(|e| io("output", e))?;
        if (sm.dev(), sm.ino()) != (om.dev(), om.ino()) {
            return Err("the output's name changed meanwhile".into());
        }
        copy_at(&src, a.file, x).map_err(|e| io("cannot copy the output so far", e))?;
        let gap = a.keep_from - head_end;
        a.file
            .write_all_at(&front, x)
            .and_then(|()| match gap {
                0 => Ok(()),
                _ => a.file.write_all_at(&filler(gap), head_end),
            })
            .and_then(|()| {
                a.file
                    .set_permissions(std::fs::Permissions::from_mode(om.mode() & 0o7777))
            })
            .map_err(|e| io("cannot write the dump's beginning", e))?;
        let mut new = a.file.try_clone().map_err(|e| io("dump file", e))?;
        new.seek(SeekFrom::End(0)).map_err(|e| io("dump file", e))?;
        // Another agent given the same output name waits for this lock
        // (`Sink::create_file`): it goes with the file that has the name.
        let _ = crate::os::try_lock_exclusive(&new);
        widen_window_if_asked();
        swap_in(a.path, out_path, &om)?;
        let path = out_path.clone();
        *self = Sink::File(new, Some(path));
        Ok(after)
    }
}

/// Give the dump file at `dump` the output's name `out`; the file that had
/// that name must be `output` (the agent's own output file), which is then
/// removed. The names are swapped, then the old output (now under the
/// dump's name, in the dump's private directory) removed: a rename over an
/// existing file makes ext4 start writing the whole renamed file back at
/// once (its auto_da_alloc: 0.31 s for a fresh 1.2 GB dump here), a swap
/// does not. What the swap took from the output's name is checked before
/// anything is removed: a file someone put there after the checks of
/// [`Sink::adopt`] is swapped back, and the adoption refused. Where the
/// filesystem cannot swap, the output's file is moved into the dump's
/// directory first, checked likewise, and the dump renamed to its name.
fn swap_in(dump: &Path, out: &Path, output: &std::fs::Metadata) -> Result<(), String> {
    let is_output = |p: &Path| {
        std::fs::symlink_metadata(p)
            .is_ok_and(|m| (m.dev(), m.ino()) == (output.dev(), output.ino()))
    };
    let refused = || lost_name(out, "names another file now");
    if crate::os::rename_exchange(dump, out).is_ok() {
        if is_output(dump) {
            let _ = std::fs::remove_file(dump);
            return Ok(());
        }
        // Ours is under `out` again afterwards, theirs back at its name.
        return match crate::os::rename_exchange(dump, out) {
            Ok(()) => Err(refused()),
            Err(e) => Err(format!(
                "{}; and it could not be given its name back: {e}",
                refused()
            )),
        };
    }
    let old = dump.with_file_name("output.old");
    std::fs::rename(out, &old).map_err(|e| format!("cannot move the output aside: {e}"))?;
    if !is_output(&old) {
        return Err(match std::fs::rename(&old, out) {
            Ok(()) => refused(),
            Err(e) => format!(
                "{}; and it could not be given its name back: {e}",
                refused()
            ),
        });
    }
    if let Err(e) = std::fs::rename(dump, out) {
        let _ = std::fs::rename(&old, out);
        return Err(format!("cannot rename the dump to the output's name: {e}"));
    }
    let _ = std::fs::remove_file(&old);
    Ok(())
}

/// `HPROF_RS_TEST_FAULT=adopt-window` (docs/design.md, "Fault injection"):
/// the adoption says so and waits 3 s between its checks and the swap, so
/// that a test can put a file at the output's name in between. No option
/// turns it on.
fn widen_window_if_asked() {
    if std::env::var("HPROF_RS_TEST_FAULT").is_ok_and(|v| v == "adopt-window") {
        crate::diag::notice("test fault adopt-window: the adoption waits 3 s");
        std::thread::sleep(std::time::Duration::from_secs(3));
    }
}

/// The reason for a refusal where the output's name no longer leads to the
/// output file; said once as a warning too, since everything written from
/// then on goes to a file no name reaches (as with the original agent,
/// which also wrote on into its open file).
fn lost_name(path: &Path, what: &str) -> String {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let reason = format!("the output's name {what}");
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        crate::diag::warning(&format!(
            "{} {what} while the program ran: the profile goes on into the file that name had, which no name reaches now",
            path.display()
        ));
    }
    reason
}

impl Sink {
    /// Whether a file like `like` (on its filesystem, with its owner)
    /// could become the output: the conditions of [`Sink::adopt`] that do
    /// not depend on the file's content. The output's metadata if so.
    fn adoption_target(&self, like: &std::fs::Metadata) -> Result<std::fs::Metadata, String> {
        let Sink::File(out, Some(out_path)) = self else {
            return Err("the output is not a file of the agent's".into());
        };
        let om = out.metadata().map_err(|e| format!("output: {e}"))?;
        let pm = match std::fs::symlink_metadata(out_path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(lost_name(out_path, "was removed"))
            }
            Err(e) => return Err(format!("output name: {e}")),
        };
        if pm.file_type().is_symlink() {
            return Err("the output's name is a symbolic link".into());
        }
        if (pm.dev(), pm.ino()) != (om.dev(), om.ino()) {
            return Err(lost_name(out_path, "names another file now"));
        }
        if om.nlink() != 1 {
            return Err("the output file has other names (hard links)".into());
        }
        if om.dev() != like.dev() {
            return Err("the dump is on another filesystem".into());
        }
        if (om.uid(), om.gid()) != (like.uid(), like.gid()) {
            return Err("the output file has another owner".into());
        }
        Ok(om)
    }

    /// Asked before a dump: could a file made in `dir` become the output
    /// (see [`Sink::adoption_target`])? If not, the dump is copied as the VM
    /// writes it instead of after.
    pub fn may_adopt(&self, dir: &Path) -> Result<(), String> {
        let d = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        self.adoption_target(&d).map(|_| ())
    }
}

/// Split `head` into what goes between `x` bytes of output and `room`
/// (the kept part's offset) and what goes after the kept part: the movable
/// pieces are moved, last first, until the rest fits with a gap of 0 or of
/// at least [`FILLER_MIN`] bytes (a filler record). `None` if it cannot.
fn fit(x: u64, head: &[u8], movable: &[(usize, usize)], room: u64) -> Option<(Vec<u8>, Vec<u8>)> {
    let fits = |len: u64| x + len == room || x + len + FILLER_MIN <= room;
    let mut front_len = head.len() as u64;
    let mut moved = 0;
    while !fits(front_len) {
        let &(s, e) = movable.get(movable.len().checked_sub(moved + 1)?)?;
        if e <= s || e > head.len() || e - s < FILLER_MIN as usize {
            return None;
        }
        front_len -= (e - s) as u64;
        moved += 1;
    }
    let moved = &movable[movable.len() - moved..];
    let mut front = Vec::with_capacity(front_len as usize);
    let mut after = Vec::new();
    let mut at = 0;
    for &(s, e) in moved {
        if s < at {
            return None;
        }
        front.extend_from_slice(&head[at..s]);
        after.extend_from_slice(&head[s..e]);
        at = e;
    }
    front.extend_from_slice(&head[at..]);
    Some((front, after))
}

/// The first `len` bytes of `src` to the same place of `dst`.
fn copy_at(src: &File, dst: &File, len: u64) -> io::Result<()> {
    let (mut from, mut to) = (0u64, 0u64);
    while from < len {
        let want = (len - from).min(KERNEL_PIECE as u64) as usize;
        match crate::os::copy_file_range(src, &mut from, dst, Some(&mut to), want) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if unsupported(&e) => {
                let mut buf = vec![0u8; BUFFER_PIECE];
                while from < len {
                    let n = (len - from).min(buf.len() as u64) as usize;
                    src.read_exact_at(&mut buf[..n], from)?;
                    dst.write_all_at(&buf[..n], from)?;
                    from += n as u64;
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One UTF8 record of exactly `len` (>= [`FILLER_MIN`]) bytes, under an
/// identifier nothing names (`vocab::id_space::FILLER`).
pub fn filler(len: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(len as usize);
    b.push(crate::vocab::tag::UTF8);
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&((len - 9) as u32).to_be_bytes());
    b.extend_from_slice(&crate::vocab::id_space::FILLER.to_be_bytes());
    let text = b"hprof-rs: room before the VM's heap records";
    let room = (len - FILLER_MIN) as usize;
    b.extend_from_slice(&text[..text.len().min(room)]);
    b.resize(len as usize, b' ');
    b
}

impl Sink {
    /// The output file's name (tests of the adoption).
    #[cfg(test)]
    fn path(&self) -> Option<&Path> {
        match self {
            Sink::File(_, p) => p.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("hprof-rs-filecopy-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn rw(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap()
    }

    #[test]
    fn ranges_reach_every_kind_of_sink() {
        let d = tmpdir("ranges");
        let src_path = d.join("src");
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&src_path, &data).unwrap();
        let src = File::open(&src_path).unwrap();
        let r = FileRange {
            file: &src,
            offset: 1234,
            len: 2_500_000,
        };
        let want = [&b"head"[..], &data[1234..1234 + 2_500_000]].concat();
        // A file: the kernel copies.
        let out = d.join("out");
        let mut s = Sink::create_file(&out, false).unwrap();
        s.write_all_bounded(b"head").unwrap();
        s.copy_range(&r).unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), want);
        // Memory: through a buffer.
        let mem = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let mut s = Sink::Memory(mem.clone());
        s.write_all_bounded(b"head").unwrap();
        s.copy_range(&r).unwrap();
        assert_eq!(*mem.lock(), want);
        // A socket: sendfile.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let reader = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut got = Vec::new();
            std::io::Read::read_to_end(&mut c, &mut got).unwrap();
            got
        });
        let mut s = Sink::connect("127.0.0.1", port).unwrap();
        s.write_all_bounded(b"head").unwrap();
        s.copy_range(&r).unwrap();
        drop(s);
        assert_eq!(reader.join().unwrap(), want);
        // A range past the source's end is an error, not a hang.
        let mut s = Sink::Memory(mem);
        let past = FileRange {
            file: &src,
            offset: 2_999_000,
            len: 5000,
        };
        assert!(s.copy_range(&past).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The output so far, then the head (less what had to move), a filler
    /// record if room is left, the kept part of the dump file, then the
    /// moved pieces; the name and the mode are the output's.
    #[test]
    fn an_adopted_file_holds_the_output_the_head_and_the_kept_part() {
        let d = tmpdir("adopt");
        // (output so far, head length, movable pieces, room before the kept part)
        type Case = (usize, usize, &'static [(usize, usize)], u64);
        let cases: [Case; 5] = [
            (31, 100, &[], 1_900_000),
            (31, 1_000, &[], 1_031),
            (
                5000,
                30_000,
                &[(100, 200), (1000, 21_000), (25_000, 25_020)],
                20_000,
            ),
            (70_000, 100, &[], 70_100),
            (70_000, 100, &[], 70_117),
        ];
        for (so_far, head_len, movable, prefix) in cases {
            let out = d.join("out.hprof");
            let mut s = Sink::create_file(&out, true).unwrap();
            let earlier: Vec<u8> = (0..so_far).map(|i| (i % 200) as u8).collect();
            s.write_all_bounded(&earlier).unwrap();
            let vm_path = d.join("heap.hprof");
            let vm = rw(&vm_path);
            let kept: Vec<u8> = (0..2_000_000u32).map(|i| (i % 241) as u8 + 1).collect();
            vm.write_all_at(&vec![0xEE; prefix as usize], 0).unwrap();
            vm.write_all_at(&kept, prefix).unwrap();
            let head: Vec<u8> = (0..head_len).map(|i| (i % 7) as u8 + 100).collect();
            let after = s
                .adopt(&Adoption {
                    file: &vm,
                    path: &vm_path,
                    keep_from: prefix,
                    head: &head,
                    movable,
                })
                .unwrap_or_else(|e| panic!("{so_far} {head_len}: {e}"));
            s.write_all_bounded(&after).unwrap();
            s.write_all_bounded(b"tail").unwrap();
            s.finish().unwrap();
            assert_eq!(s.path(), Some(out.as_path()));
            assert!(!vm_path.exists(), "renamed");
            let got = std::fs::read(&out).unwrap();
            assert_eq!(&got[..so_far], &earlier[..]);
            // The moved pieces are the last movable ones; the front keeps
            // the rest in order.
            let moved_len = after.len();
            let front_len = head_len - moved_len;
            let mut front = Vec::new();
            let mut moved = Vec::new();
            let mut at = 0;
            let mut left = moved_len;
            let mut pieces: Vec<(usize, usize)> = Vec::new();
            for &(a, b) in movable.iter().rev() {
                if left == 0 {
                    break;
                }
                pieces.insert(0, (a, b));
                left -= b - a;
            }
            for (a, b) in pieces {
                front.extend_from_slice(&head[at..a]);
                moved.extend_from_slice(&head[a..b]);
                at = b;
            }
            front.extend_from_slice(&head[at..]);
            assert_eq!(after, moved);
            assert_eq!(&got[so_far..so_far + front_len], &front[..]);
            let gap = &got[so_far + front_len..prefix as usize];
            assert!(
                gap.is_empty() || gap.len() as u64 >= FILLER_MIN,
                "{}",
                gap.len()
            );
            if !gap.is_empty() {
                assert_eq!(gap, &filler(gap.len() as u64)[..]);
            }
            assert_eq!(
                &got[prefix as usize..prefix as usize + kept.len()],
                &kept[..]
            );
            assert!(got.ends_with(&[&moved[..], b"tail"].concat()));
            let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode & 0o077, 0, "still private: {mode:o}");
        }
        // What cannot fit is refused, and nothing changed.
        let out = d.join("out.hprof");
        let mut s = Sink::create_file(&out, true).unwrap();
        s.write_all_bounded(&[7u8; 500]).unwrap();
        let vm_path = d.join("heap.hprof");
        let vm = rw(&vm_path);
        vm.write_all_at(&[1u8; 5000], 0).unwrap();
        for (head, movable) in [
            (vec![0u8; 4000], vec![]),
            (vec![0u8; 4500], vec![(0usize, 10usize)]),
        ] {
            let e = s
                .adopt(&Adoption {
                    file: &vm,
                    path: &vm_path,
                    keep_from: 4490,
                    head: &head,
                    movable: &movable,
                })
                .unwrap_err();
            assert!(e.contains("do not fit"), "{e}");
            assert_eq!(
                std::fs::read(&vm_path).unwrap(),
                vec![1u8; 5000],
                "nothing moved"
            );
            assert!(vm_path.exists());
            assert_eq!(std::fs::read(&out).unwrap(), vec![7u8; 500]);
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn adoption_is_refused_where_it_would_change_what_the_user_named() {
        let d = tmpdir("refuse");
        let vm_path = d.join("heap.hprof");
        let vm = rw(&vm_path);
        vm.write_all_at(&[1u8; 100_000], 0).unwrap();
        let adoption = Adoption {
            file: &vm,
            path: &vm_path,
            keep_from: 50_000,
            head: b"h",
            movable: &[],
        };
        // The output's name is a symlink to the file written.
        let real = d.join("real.hprof");
        let link = d.join("link.hprof");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut s = Sink::create_file(&link, false).unwrap();
        s.write_all_bounded(b"so far").unwrap();
        let e = s.adopt(&adoption).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(
            std::fs::read(&vm_path).unwrap(),
            vec![1u8; 100_000],
            "nothing moved"
        );
        // A second name.
        let out = d.join("out.hprof");
        let mut s = Sink::create_file(&out, false).unwrap();
        std::fs::hard_link(&out, d.join("other")).unwrap();
        assert!(s.adopt(&adoption).unwrap_err().contains("hard links"));
        // The output's name removed, then given to another file.
        let gone = d.join("gone.hprof");
        let mut s = Sink::create_file(&gone, false).unwrap();
        std::fs::remove_file(&gone).unwrap();
        assert!(s.adopt(&adoption).unwrap_err().contains("was removed"));
        std::fs::write(&gone, b"another").unwrap();
        assert!(s
            .adopt(&adoption)
            .unwrap_err()
            .contains("names another file"));
        assert_eq!(std::fs::read(&gone).unwrap(), b"another");
        // A socket or memory sink.
        let mut s = Sink::Memory(Default::default());
        assert!(s.adopt(&adoption).is_err());
        assert!(vm_path.exists());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let _ = std::fs::remove_dir_all(&d);
    }
}
