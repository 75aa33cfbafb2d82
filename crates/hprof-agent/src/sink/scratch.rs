//! The file a 1.0.1 heap dump's sub-records wait in until the HEAP DUMP
//! record's length is known (the format's `Scratch`; docs/options.md,
//! "Heap dump scratch file"). The format only reads and writes it; creating it
//! safely, naming it in messages and removing it are done here.

use hprof_core::format::binary::{Scratch, ScratchSource};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Makes a new scratch file per dump at one name (or beside it).
#[derive(Debug)]
pub struct ScratchFiles {
    path: PathBuf,
}

impl ScratchFiles {
    pub fn at(path: PathBuf) -> ScratchFiles {
        ScratchFiles { path }
    }
}

impl ScratchSource for ScratchFiles {
    fn create(&mut self) -> io::Result<Box<dyn Scratch>> {
        let (file, path) = create_private(&self.path)?;
        Ok(Box::new(ScratchFile { file, path }))
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn report(&self, what: &str) {
        hprof_core::diag::error(what);
    }
}

/// One dump's scratch file, removed when dropped.
#[derive(Debug)]
struct ScratchFile {
    file: File,
    path: PathBuf,
}

/// Create the file at `path`, or beside it when that name is taken
/// (`path.PID.N`). Always a new file (O_EXCL), never through a symlink
/// (O_NOFOLLOW), mode 0600: another local user can neither redirect it nor
/// read the dump in it.
fn create_private(path: &Path) -> io::Result<(File, PathBuf)> {
    let name = |attempt: u32| {
        if attempt == 0 {
            return Ok(path.to_path_buf());
        }
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{}.{attempt}", std::process::id()));
        Ok(PathBuf::from(name))
    };
    hprof_core::fs::create_unique(16, name, hprof_core::fs::create_private_file)
}

impl Scratch for ScratchFile {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn report(&self, what: &str) {
        hprof_core::diag::error(what);
    }
}

impl Read for ScratchFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

impl Write for ScratchFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for ScratchFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.file.seek(pos)
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hprof-scratch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_planted_symlink_or_file_is_left_alone_and_the_area_goes_beside_it() {
        use std::os::unix::fs::MetadataExt;
        let d = dir("planted");
        let target = d.join("victim");
        std::fs::write(&target, b"keep").unwrap();
        let name = d.join("java.hprof.TMP");
        std::os::unix::fs::symlink(&target, &name).unwrap();
        let mut src = ScratchFiles::at(name.clone());
        let mut area = src.create().unwrap();
        area.write_all(b"sub-records").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        let made: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p != &target && p != &name)
            .collect();
        assert_eq!(made.len(), 1, "{made:?}");
        assert_eq!(std::fs::metadata(&made[0]).unwrap().mode() & 0o777, 0o600);
        area.seek(SeekFrom::Start(0)).unwrap();
        let mut back = String::new();
        area.read_to_string(&mut back).unwrap();
        assert_eq!(back, "sub-records");
        drop(area);
        assert!(!made[0].exists(), "removed when dropped");
        let _ = std::fs::remove_dir_all(&d);
    }
}
