//! Names of the output file and the heap-dump temporary file.
//!
//! Only names are computed here; creating, deleting and opening files is the
//! agent's job. Existence checks are passed in as a closure so the rules can
//! be tested without touching the file system.

use super::{Format, Options};

/// Output name used for `format=a` when no `file=` is given.
pub const DEFAULT_TEXT_FILE: &str = "java.hprof.txt";

/// Output name used for `format=b` when no `file=` is given.
pub const DEFAULT_BINARY_FILE: &str = "java.hprof";

/// Appended to the output name to form the heap-dump temporary file name.
pub const HEAP_TEMP_SUFFIX: &str = ".TMP";

impl Options {
    /// `java.hprof.txt` for text output, `java.hprof` for binary output.
    pub fn default_file_name(&self) -> &'static str {
        match self.format {
            Format::Ascii => DEFAULT_TEXT_FILE,
            Format::Binary => DEFAULT_BINARY_FILE,
        }
    }

    /// The `file=` name if one was given, else [`Self::default_file_name`].
    /// This is the name before any `force=n` renaming.
    pub fn file_name(&self) -> &str {
        self.file
            .as_deref()
            .unwrap_or_else(|| self.default_file_name())
    }

    /// The name of the output file to create (meaningful only when `net` is
    /// not in effect).
    ///
    /// With `force=y` this is [`Self::file_name`] (the caller deletes any
    /// existing file first). With `force=n`, if `exists(file_name)` is true,
    /// it is the PID-derived unique name (see [`unique_file_name`]); that
    /// name is not checked again.
    pub fn output_file_name(&self, pid: u32, exists: impl Fn(&str) -> bool) -> String {
        let name = self.file_name();
        if !self.force && exists(name) {
            unique_file_name(name, self.format, pid)
        } else {
            name.to_string()
        }
    }

    /// The name of the temporary file heap-dump records are collected in.
    ///
    /// It is the output name plus `.TMP` (with `net` output: the default
    /// name plus `.TMP`; the agent puts `net` scratch files in the system's
    /// temporary directory instead). If that file already exists it is made
    /// unique with the PID rule, whatever `force` says; the file itself is
    /// always created new, never through a symlink.
    pub fn heap_temp_file_name(&self, pid: u32, exists: impl Fn(&str) -> bool) -> String {
        let base = if self.net.is_some() {
            self.default_file_name()
        } else {
            self.file_name()
        };
        let name = format!("{base}{HEAP_TEMP_SUFFIX}");
        if exists(&name) {
            unique_file_name(&name, self.format, pid)
        } else {
            name
        }
    }
}

/// Byte offset where the last path component of `name` starts.
fn last_component_start(name: &str) -> usize {
    let is_separator = |c: char| c == '/' || (cfg!(windows) && c == '\\');
    name.rfind(is_separator).map_or(0, |i| i + 1)
}

/// The PID-derived name used when `force=n` finds an existing file.
///
/// * binary: `NAME.PID`;
/// * text: always ends in `.txt`. If the last `.`-suffix of the file name
///   starts with `.txt` in any letter case, it is moved behind the PID with
///   its spelling kept (`out.txt` -> `out.PID.txt`, `OUT.TXT` ->
///   `OUT.PID.TXT`); otherwise `.PID.txt` is appended (`out.log` ->
///   `out.log.PID.txt`).
///
/// Unlike the original, a `.` in a directory name is never taken as the
/// suffix (`run.txt/out` -> `run.txt/out.PID.txt`).
pub fn unique_file_name(name: &str, format: Format, pid: u32) -> String {
    if format == Format::Binary {
        return format!("{name}.{pid}");
    }
    let component = last_component_start(name);
    let suffix_at = name[component..].rfind('.').map(|i| component + i);
    match suffix_at {
        Some(dot)
            if name.as_bytes()[dot..].len() >= 4
                && name.as_bytes()[dot..dot + 4].eq_ignore_ascii_case(b".txt") =>
        {
            format!("{}.{pid}{}", &name[..dot], &name[dot..])
        }
        _ => format!("{name}.{pid}.txt"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::parse;

    fn opts(text: &str) -> Options {
        parse(text).expect("valid options")
    }

    const NONE: fn(&str) -> bool = |_| false;
    const ALL: fn(&str) -> bool = |_| true;

    #[test]
    fn unique_names_text() {
        let u = |n| unique_file_name(n, Format::Ascii, 1234);
        assert_eq!(u("out.txt"), "out.1234.txt");
        assert_eq!(u("OUT.TXT"), "OUT.1234.TXT");
        assert_eq!(u("out.Txt"), "out.1234.Txt");
        assert_eq!(u("out.log"), "out.log.1234.txt");
        assert_eq!(u("out"), "out.1234.txt");
        assert_eq!(u("a.b.txt"), "a.b.1234.txt");
        assert_eq!(u("out.txtx"), "out.1234.txtx");
        assert_eq!(u("out.tx"), "out.tx.1234.txt");
        assert_eq!(u("out."), "out..1234.txt");
        assert_eq!(u(".txt"), ".1234.txt");
        assert_eq!(u("java.hprof.txt"), "java.hprof.1234.txt");
        assert_eq!(u("java.hprof.txt.TMP"), "java.hprof.txt.TMP.1234.txt");
        assert_eq!(u("dir/out.txt"), "dir/out.1234.txt");
        assert_eq!(u("run.txt/out"), "run.txt/out.1234.txt");
        assert_eq!(u("résumé.txt"), "résumé.1234.txt");
        assert_eq!(u("x.é"), "x.é.1234.txt");
    }

    #[test]
    fn unique_names_binary() {
        let u = |n| unique_file_name(n, Format::Binary, 77);
        assert_eq!(u("java.hprof"), "java.hprof.77");
        assert_eq!(u("out.txt"), "out.txt.77");
        assert_eq!(u("java.hprof.TMP"), "java.hprof.TMP.77");
    }

    #[test]
    fn default_names_follow_format() {
        assert_eq!(opts("").default_file_name(), "java.hprof.txt");
        assert_eq!(opts("format=a").default_file_name(), "java.hprof.txt");
        assert_eq!(opts("format=b").default_file_name(), "java.hprof");
        assert_eq!(opts("format=b").file_name(), "java.hprof");
        assert_eq!(opts("file=x.txt").file_name(), "x.txt");
        // The user's name is kept verbatim, even for the other format.
        assert_eq!(opts("format=b,file=x.txt").file_name(), "x.txt");
    }

    #[test]
    fn force_y_always_uses_the_plain_name() {
        assert_eq!(opts("").output_file_name(9, ALL), "java.hprof.txt");
        assert_eq!(opts("file=a.txt,force=y").output_file_name(9, ALL), "a.txt");
        assert_eq!(opts("format=b").output_file_name(9, ALL), "java.hprof");
    }

    #[test]
    fn force_n_renames_only_existing_files() {
        assert_eq!(opts("force=n").output_file_name(9, NONE), "java.hprof.txt");
        assert_eq!(opts("force=n").output_file_name(9, ALL), "java.hprof.9.txt");
        assert_eq!(
            opts("force=n,format=b").output_file_name(9, ALL),
            "java.hprof.9"
        );
        assert_eq!(
            opts("force=n,file=OUT.TXT").output_file_name(42, ALL),
            "OUT.42.TXT"
        );
        assert_eq!(
            opts("force=n,file=out.log").output_file_name(42, ALL),
            "out.log.42.txt"
        );
        let only_plain = |n: &str| n == "r.txt";
        assert_eq!(
            opts("force=n,file=r.txt").output_file_name(5, only_plain),
            "r.5.txt"
        );
        // The derived name is not checked again.
        assert_eq!(
            opts("force=n,file=r.txt").output_file_name(5, ALL),
            "r.5.txt"
        );
    }

    #[test]
    fn existence_is_checked_on_the_plain_name() {
        use std::cell::RefCell;
        let asked = RefCell::new(Vec::new());
        let exists = |n: &str| {
            asked.borrow_mut().push(n.to_string());
            true
        };
        opts("force=n,file=p.txt").output_file_name(1, exists);
        assert_eq!(*asked.borrow(), vec!["p.txt".to_string()]);
    }

    #[test]
    fn heap_temp_names() {
        assert_eq!(opts("").heap_temp_file_name(3, NONE), "java.hprof.txt.TMP");
        assert_eq!(
            opts("").heap_temp_file_name(3, ALL),
            "java.hprof.txt.TMP.3.txt"
        );
        assert_eq!(
            opts("format=b").heap_temp_file_name(3, NONE),
            "java.hprof.TMP"
        );
        assert_eq!(
            opts("format=b").heap_temp_file_name(3, ALL),
            "java.hprof.TMP.3"
        );
        assert_eq!(
            opts("file=d/o.txt").heap_temp_file_name(3, NONE),
            "d/o.txt.TMP"
        );
        // force=y does not matter for the temporary file.
        assert_eq!(
            opts("force=y,file=o").heap_temp_file_name(3, ALL),
            "o.TMP.3.txt"
        );
        // With net output the temporary file uses the default name.
        assert_eq!(
            opts("net=h:1").heap_temp_file_name(3, NONE),
            "java.hprof.txt.TMP"
        );
        assert_eq!(
            opts("net=h:1,format=b").heap_temp_file_name(3, ALL),
            "java.hprof.TMP.3"
        );
    }
}
