//! The end-to-end tests of the workspace, one test binary (`--test e2e`):
//! each file beside this one is a module named after the area it checks, so
//! `cargo test -p hprof-e2e --test e2e -- heap_dump::` runs one area and
//! `scripts/test.sh` picks the smoke set for the other JDKs by module name.
//! One binary instead of one per file: the shared helpers (`common`,
//! `ui_support`, `bci_support`) and the dependencies are compiled and linked
//! once, not thirty-four times (docs/testing.md, "How the tests are laid out").

mod bci_support;
mod common;
mod ui_support;

mod alloc_sites;
mod attach_agent;
mod attach_tool;
mod bci_jdk_roundtrip;
mod bci_verify;
mod binary_output;
mod cpu_samples;
mod cpu_stress;
mod cpu_times;
mod crate_walls;
mod dump_guard;
mod exports;
mod file_faults;
mod fuzz;
mod heap_analyser;
mod heap_analyser_limits;
mod heap_dump;
mod heap_dump_hostile;
mod heap_dump_races;
mod jvmti_abi;
mod kill_during_dump;
mod live_counts;
mod monitors;
mod net;
mod net_stall;
mod oom;
mod option_limits;
mod profile;
mod push;
mod reader_hotspot;
mod startup;
mod tool;
mod tool_limits;
mod tool_real;
mod tool_stdio;
mod ui;
mod ui_browser;
mod ui_export;
mod ui_security;
