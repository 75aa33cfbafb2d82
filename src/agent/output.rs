//! Choosing and creating the output format from the options.

use super::BoxedFormat;
use crate::format::{AsciiFormat, AsciiOptions, BinaryFormat, BinaryOptions, HprofVersion, IdSize};
use crate::options::{Format, Options};

/// The format for this run. `segmented` (binary 1.0.2) is only known at VM
/// init, so the writer starts with a provisional format that VM init
/// replaces before anything is written.
pub fn new_format(opts: &Options, segmented: bool) -> BoxedFormat {
    match opts.format {
        Format::Ascii => Box::new(AsciiFormat::new(AsciiOptions::default())),
        Format::Binary => Box::new(BinaryFormat::new(BinaryOptions {
            version: if segmented { HprofVersion::V1_0_2 } else { HprofVersion::V1_0_1 },
            id_size: if opts.id_size == 8 { IdSize::Eight } else { IdSize::Four },
            object_array_full_length: opts.true_array_len,
            ..Default::default()
        })),
    }
}
