//! Choosing and creating the output format from the options.

use crate::format::{
    AsciiFormat, AsciiOptions, BinaryFormat, BinaryOptions, HprofVersion, IdSize, ProfileFormat,
};
use crate::options::{Format, Options};

/// The format the writer thread owns.
pub type BoxedFormat = Box<dyn ProfileFormat + Send>;

/// 1.0.2 heap dumps are cut into HEAP DUMP SEGMENTs of about this size
/// (the original used ~2 GB segments; the writer buffers one segment).
pub const HEAP_SEGMENT_LIMIT: u64 = 16 << 20;

/// The format for this run. `segmented` (binary 1.0.2) is only known at VM
/// init, so the writer starts with a provisional format that VM init
/// replaces before anything is written.
pub fn new_format(opts: &Options, segmented: bool) -> BoxedFormat {
    match opts.format {
        Format::Ascii => Box::new(AsciiFormat::new(AsciiOptions::default())),
        Format::Binary => {
            let mut f = BinaryFormat::new(BinaryOptions {
                version: if segmented {
                    HprofVersion::V1_0_2
                } else {
                    HprofVersion::V1_0_1
                },
                id_size: if opts.id_size == 8 {
                    IdSize::Eight
                } else {
                    IdSize::Four
                },
                object_array_full_length: opts.true_array_len,
                // Small segments keep the heap dump's buffering bounded.
                segment_limit: HEAP_SEGMENT_LIMIT,
                ..Default::default()
            });
            if !segmented && opts.heap_dump {
                // 1.0.1: one HEAP DUMP record per dump, staged in a file:
                // beside the output file, or with `net=` or `listen=`
                // without `file=` (no output directory of the user's) in
                // the system's temporary directory rather than wherever the
                // JVM was started.
                let pid = std::process::id();
                let stage = if !opts.writes_user_file() {
                    std::env::temp_dir().join(format!("hprof-rs-{pid}.hprof.TMP"))
                } else {
                    let exists = |n: &str| std::path::Path::new(n).exists();
                    opts.heap_temp_file_name(pid, exists).into()
                };
                f.stage_heap_dumps_in(Box::new(crate::sink::scratch::ScratchFiles::at(stage)));
            }
            Box::new(f)
        }
    }
}
