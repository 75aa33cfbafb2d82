//! The native (Linux) thread ID of a Java thread, read from the VM's own
//! thread dump (`Thread.print`, asked in-process by `jni::thread_dump`).
//! JVMTI has no call for it, and an attach needs it to give the threads
//! that already run a CPU-time timer (docs/cpu-samples.md, "After an
//! attach").
//!
//! Each Java thread's entry starts with a header line such as
//!
//! ```text
//! "main" #1 prio=5 os_prio=0 cpu=52.13ms elapsed=0.40s tid=0x00007f3c8c016800 nid=0x5e3f waiting on condition
//! "main" #1 [24110] prio=5 os_prio=0 cpu=52.13ms elapsed=0.40s tid=0x00007f3c8c016800 nid=24110 waiting on condition
//! ```
//!
//! (JDK 11 and 17 print `nid` in hexadecimal; JDK 19 and later in decimal,
//! with the same number in brackets after the ID). The name is the
//! program's own text, printed as it is: it may contain quotes, `#`,
//! and line breaks, so it can imitate another thread's header. A thread is
//! therefore found by the exact `"NAME" #ID ` of that thread (its name as
//! JVMTI gives it, its Java ID), at the start of a line, and only if that
//! text occurs exactly once; its `nid=` is the first on the rest of that
//! line, which the VM writes (no program text follows the ID there).
//! Before the name, the agent tries the thread's VM address (`tid=0x...`,
//! from `java.lang.Thread.eetop`), which the program cannot change: a
//! thread that renames itself between the dump and the lookup is found
//! by it. A carrier thread with a virtual thread mounted has no `nid=` in
//! its header on JDK 19 and later; its `[N]` after the ID is used.

use std::collections::HashMap;

/// Why a thread's native ID was not found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unmapped {
    /// No header with the thread's name and ID (a thread that started or
    /// was renamed after the dump, or a name the dump writes differently).
    NotFound,
    /// More than one line starts like the thread's header (a name made to
    /// look like another header).
    Ambiguous,
    /// The header has no readable `nid=`.
    NoNativeId,
}

/// The headers of a thread dump, by Java ID and by VM address: built in
/// one pass over the dump, so finding every thread of a dump is linear in
/// its size (an attach to a JVM with thousands of threads looks each one
/// up).
pub struct Headers<'d> {
    dump: &'d str,
    /// Java ID -> byte offsets of `" #ID ` (of its quote).
    by_id: HashMap<i64, Vec<usize>>,
    /// VM address -> byte offsets of ` tid=0x<16 hex digits> ` (of its
    /// space).
    by_address: HashMap<u64, Vec<usize>>,
}

/// ` tid=0x` and the 16 hexadecimal digits HotSpot prints an address with.
const TID_KEY: &str = " tid=0x";
const ADDRESS_DIGITS: usize = 16;

impl<'d> Headers<'d> {
    pub fn new(dump: &'d str) -> Headers<'d> {
        let mut by_id: HashMap<i64, Vec<usize>> = HashMap::new();
        let bytes = dump.as_bytes();
        let mut from = 0;
        while let Some(k) = dump[from..].find("\" #") {
            let quote = from + k;
            from = quote + 1;
            let digits_start = quote + 3;
            let digits = bytes[digits_start..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            let end = digits_start + digits;
            if digits == 0 || bytes.get(end) != Some(&b' ') {
                continue;
            }
            if let Ok(id) = dump[digits_start..end].parse::<i64>() {
                by_id.entry(id).or_default().push(quote);
            }
        }
        let mut by_address: HashMap<u64, Vec<usize>> = HashMap::new();
        for (at, _) in dump.match_indices(TID_KEY) {
            let digits = at + TID_KEY.len();
            let Some(hex) = dump.get(digits..digits + ADDRESS_DIGITS) else {
                continue;
            };
            if bytes.get(digits + ADDRESS_DIGITS) != Some(&b' ') {
                continue;
            }
            if let Ok(address) = u64::from_str_radix(hex, 16) {
                by_address.entry(address).or_default().push(at);
            }
        }
        Headers {
            dump,
            by_id,
            by_address,
        }
    }

    /// The native thread ID of the Java thread `name` with Java ID `id`.
    pub fn native_id(&self, name: &str, id: i64) -> Result<i32, Unmapped> {
        let bytes = self.dump.as_bytes();
        let mut found = None;
        for &quote in self.by_id.get(&id).map(Vec::as_slice).unwrap_or(&[]) {
            // `"NAME` just before the closing quote, at a line start.
            let Some(open) = quote.checked_sub(name.len() + 1) else {
                continue;
            };
            if bytes[open] != b'"'
                || &bytes[open + 1..quote] != name.as_bytes()
                || (open > 0 && bytes[open - 1] != b'\n')
            {
                continue;
            }
            if found.is_some() {
                return Err(Unmapped::Ambiguous);
            }
            found = Some(quote);
        }
        let quote = found.ok_or(Unmapped::NotFound)?;
        let rest = &self.dump[quote..];
        let line = rest.split('\n').next().unwrap_or(rest);
        header_native_id(line, id)
    }

    /// The native thread ID of the Java thread whose VM structure is at
    /// `address` (`tid=0x...` in its header, `jni::thread_keys`)
    /// and whose Java ID is `id`. The address is the VM's, not the
    /// program's: a thread that renames itself all the time is still
    /// found. It must occur exactly once in the dump.
    pub fn native_id_at(&self, address: u64, id: i64) -> Result<i32, Unmapped> {
        let at = match self.by_address.get(&address).map(Vec::as_slice) {
            Some([at]) => *at,
            Some([]) | None => return Err(Unmapped::NotFound),
            Some(_) => return Err(Unmapped::Ambiguous),
        };
        let start = self.dump[..at].rfind('\n').map_or(0, |n| n + 1);
        let end = self.dump[at..]
            .find('\n')
            .map_or(self.dump.len(), |n| at + n);
        let line = &self.dump[start..end];
        // The header's own `" #ID ` is the last one before `tid=` (the
        // name, which comes first, may imitate one).
        let own = format!("\" #{id} ");
        let from = line[..at - start].rfind(&own).ok_or(Unmapped::NotFound)?;
        header_native_id(&line[from..], id)
    }
}

/// The native ID in a header line from its `" #ID ` on: `nid=`, or, when a
/// JDK 19+ carrier thread has a virtual thread mounted and the VM prints
/// no `nid=`, the `[N]` right after the ID (the same number).
fn header_native_id(line: &str, id: i64) -> Result<i32, Unmapped> {
    if let Some(at) = line.find(" nid=") {
        return parse_native_id(&line[at + 5..]).ok_or(Unmapped::NoNativeId);
    }
    let after = line
        .strip_prefix(&format!("\" #{id} ["))
        .ok_or(Unmapped::NoNativeId)?;
    let digits = after.split(']').next().ok_or(Unmapped::NoNativeId)?;
    parse_native_id(digits).ok_or(Unmapped::NoNativeId)
}

/// `0x5e3f` (hexadecimal, JDK 11-18) or `24110` (decimal, JDK 19+), up
/// to the next space; a Linux thread ID is positive.
fn parse_native_id(s: &str) -> Option<i32> {
    let word = s.split([' ', '\t', '\r']).next()?;
    let n = match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        Some(hex) => i32::from_str_radix(hex, 16).ok()?,
        None => word.parse::<i32>().ok()?,
    };
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JDK17: &str = "2026-11-25 10:00:00\nFull thread dump OpenJDK 64-Bit Server VM (17.0.15+6 mixed mode, sharing):\n\n\
Threads class SMR info:\n_java_thread_list=0x00007f0c, length=12, elements={\n0x00007f0c\n}\n\n\
\"main\" #1 prio=5 os_prio=0 cpu=52.13ms elapsed=0.40s tid=0x00007f3c8c016800 nid=0x5e3f runnable  [0x00007f3c92bfe000]\n\
   java.lang.Thread.State: RUNNABLE\n\
\tat java.io.FileInputStream.readBytes(java.base@17.0.15/Native Method)\n\n\
\"Reference Handler\" #2 daemon prio=10 os_prio=0 cpu=0.12ms elapsed=0.39s tid=0x00007f3c8c0b2000 nid=0x5e46 waiting on condition  [0x00007f3c60fee000]\n\
   java.lang.Thread.State: RUNNABLE\n\n\
\"VM Thread\" os_prio=0 cpu=1.02ms elapsed=0.39s tid=0x00007f3c8c0a0000 nid=0x5e45 runnable  \n\n\
\"GC Thread#0\" os_prio=0 cpu=0.10ms elapsed=0.40s tid=0x00007f3c8c04c000 nid=0x5e41 runnable  \n";

    const JDK21: &str = "Full thread dump OpenJDK 64-Bit Server VM (21.0.8+9-LTS mixed mode):\n\n\
\"main\" #1 [24110] prio=5 os_prio=0 cpu=60.50ms elapsed=0.51s tid=0x00007f1d3c02a000 nid=24110 runnable  [0x00007f1d42dfe000]\n\
   java.lang.Thread.State: RUNNABLE\n\n\
\"Reference Handler\" #9 [24117] daemon prio=10 os_prio=0 cpu=0.10ms elapsed=0.50s tid=0x00007f1d3c138000 nid=24117 waiting on condition  [0x00007f1d1cf4e000]\n\n\
\"GC Thread#0\" os_prio=0 cpu=0.10ms elapsed=0.40s tid=0x00007f3c8c04c000 nid=24112 runnable  \n";

    #[test]
    fn hexadecimal_and_decimal_native_ids() {
        let h = Headers::new(JDK17);
        assert_eq!(h.native_id("main", 1), Ok(0x5e3f));
        assert_eq!(h.native_id("Reference Handler", 2), Ok(0x5e46));
        let h = Headers::new(JDK21);
        assert_eq!(h.native_id("main", 1), Ok(24110));
        assert_eq!(h.native_id("Reference Handler", 9), Ok(24117));
    }

    #[test]
    fn name_and_id_must_both_match() {
        let h = Headers::new(JDK17);
        assert_eq!(h.native_id("main", 2), Err(Unmapped::NotFound));
        assert_eq!(h.native_id("mai", 1), Err(Unmapped::NotFound));
        assert_eq!(h.native_id("ain", 1), Err(Unmapped::NotFound));
        // Not Java threads: no `#ID ` after the name.
        assert_eq!(h.native_id("GC Thread", 0), Err(Unmapped::NotFound));
        assert_eq!(h.native_id("VM Thread", 0), Err(Unmapped::NotFound));
    }

    #[test]
    fn names_with_quotes_hashes_and_line_breaks() {
        let dump = "\"say \"hi\" #7 \" #12 prio=5 os_prio=0 tid=0x1 nid=0x10 runnable\n\n\
\"#3 \" #13 daemon prio=5 os_prio=0 tid=0x2 nid=0x11 runnable\n\n\
\"two\nlines\" #14 prio=5 os_prio=0 tid=0x3 nid=0x12 runnable\n\n\
\"\" #15 prio=5 os_prio=0 tid=0x4 nid=0x13 runnable\n";
        let h = Headers::new(dump);
        assert_eq!(h.native_id("say \"hi\" #7 ", 12), Ok(0x10));
        assert_eq!(h.native_id("#3 ", 13), Ok(0x11));
        assert_eq!(h.native_id("two\nlines", 14), Ok(0x12));
        assert_eq!(h.native_id("", 15), Ok(0x13));
        // The name of 12 starts like a header of a thread `say "hi` with
        // ID 7: if that thread exists, its own header makes two.
        let both = format!("{dump}\n\"say \"hi\" #7 prio=5 tid=0x5 nid=0x14 runnable\n");
        let h = Headers::new(&both);
        assert_eq!(h.native_id("say \"hi", 7), Err(Unmapped::Ambiguous));
        assert_eq!(h.native_id("say \"hi\" #7 ", 12), Ok(0x10));
    }

    #[test]
    fn a_name_that_imitates_a_header_makes_both_ambiguous() {
        // A thread named `x\n"main" #1 nid=0x666 ` writes a second line
        // that starts like main's header.
        let dump = "\"main\" #1 prio=5 os_prio=0 tid=0x1 nid=0x10 runnable\n\n\
\"x\n\"main\" #1 nid=0x666 \" #20 prio=5 os_prio=0 tid=0x2 nid=0x20 runnable\n";
        let h = Headers::new(dump);
        assert_eq!(h.native_id("main", 1), Err(Unmapped::Ambiguous));
        // The imitating thread itself is found by its own header.
        assert_eq!(h.native_id("x\n\"main\" #1 nid=0x666 ", 20), Ok(0x20));
    }

    #[test]
    fn the_native_id_is_taken_from_the_header_line_only() {
        let dump = "\"a\" #3 prio=5 os_prio=0 tid=0x1 runnable\n   nid=0x99\n\
\"b\" #4 prio=5 nid=zz runnable\n\"c\" #5 prio=5 nid=-4 runnable\n\"d\" #6 prio=5 nid=0x7fffffff\n\
\"e\" #7 prio=5 nid=99999999999 runnable\n";
        let h = Headers::new(dump);
        assert_eq!(h.native_id("a", 3), Err(Unmapped::NoNativeId));
        assert_eq!(h.native_id("b", 4), Err(Unmapped::NoNativeId));
        assert_eq!(h.native_id("c", 5), Err(Unmapped::NoNativeId));
        assert_eq!(h.native_id("d", 6), Ok(i32::MAX));
        assert_eq!(h.native_id("e", 7), Err(Unmapped::NoNativeId));
    }

    #[test]
    fn a_carrier_with_a_virtual_thread_mounted_has_its_id_in_brackets() {
        let dump = "\"ForkJoinPool-1-worker-1\" #19 [15619] daemon prio=5 os_prio=0 cpu=1.00ms elapsed=1.00s tid=0x00007fcd1424af40  [0x00007fcd0a1fe000]\n   Carrying virtual thread #21\n";
        let h = Headers::new(dump);
        assert_eq!(h.native_id("ForkJoinPool-1-worker-1", 19), Ok(15619));
        assert_eq!(h.native_id_at(0x7fcd1424af40, 19), Ok(15619));
    }

    #[test]
    fn by_address_a_renamed_thread_is_found_and_imitations_do_not_count() {
        let dump =
            "\"req-17\" #12 [300] prio=5 os_prio=0 tid=0x00007f0000001000 nid=300 runnable\n\n\
\"x\" #12 [666] \" #13 [301] prio=5 os_prio=0 tid=0x00007f0000002000 nid=301 runnable\n";
        let h = Headers::new(dump);
        // Its name in the dump is no longer the one JVMTI gave: by address.
        assert_eq!(h.native_id("req-16", 12), Err(Unmapped::NotFound));
        assert_eq!(h.native_id_at(0x7f0000001000, 12), Ok(300));
        // A name imitating `" #12 [666] ` before the real `" #13 `.
        assert_eq!(h.native_id_at(0x7f0000002000, 13), Ok(301));
        assert_eq!(h.native_id_at(0x7f0000003000, 14), Err(Unmapped::NotFound));
        let twice = format!("{dump}\"y tid=0x00007f0000001000 \" #14 tid=0x1 nid=5\n");
        assert_eq!(
            Headers::new(&twice).native_id_at(0x7f0000001000, 12),
            Err(Unmapped::Ambiguous)
        );
    }

    #[test]
    fn every_thread_of_a_dump_of_50000_is_found_in_linear_time() {
        // The dump of a JVM with 50 000 threads, looked up thread by thread
        // as an attach does: a search of the whole dump per thread would
        // take minutes (about 2.5e9 bytes scanned per 10 000 threads).
        let n = 50_000u64;
        let mut dump = String::from(
            "Full thread dump OpenJDK 64-Bit Server VM (21.0.8+9-LTS mixed mode):\n\n",
        );
        for i in 0..n {
            dump.push_str(&format!(
                "\"worker-{i}\" #{} [{}] prio=5 os_prio=0 cpu=0.10ms elapsed=1.00s tid=0x{:016x} nid={} waiting on condition  [0x00007f1d1cf4e000]\n   java.lang.Thread.State: WAITING (parking)\n\tat jdk.internal.misc.Unsafe.park(java.base@21.0.8/Native Method)\n\n",
                i + 30,
                100_000 + i,
                0x7f00_0000_0000 + i * 0x1000,
                100_000 + i
            ));
        }
        let t0 = std::time::Instant::now();
        let h = Headers::new(&dump);
        for i in 0..n {
            let id = (i + 30) as i64;
            assert_eq!(
                h.native_id_at(0x7f00_0000_0000 + i * 0x1000, id),
                Ok(100_000 + i as i32)
            );
            assert_eq!(
                h.native_id(&format!("worker-{i}"), id),
                Ok(100_000 + i as i32)
            );
        }
        let took = t0.elapsed();
        assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn garbage_is_no_header() {
        for dump in [
            "",
            "\"",
            "\" #",
            "\" #1",
            "\" #x ",
            "\"\" #99999999999999999999 nid=1",
        ] {
            let h = Headers::new(dump);
            assert_eq!(h.native_id("", 1), Err(Unmapped::NotFound), "{dump:?}");
        }
        let h = Headers::new("\"\" #1 nid=0x");
        assert_eq!(h.native_id("", 1), Err(Unmapped::NoNativeId));
    }
}
