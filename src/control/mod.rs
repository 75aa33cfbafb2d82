//! Control: the dump sequence (at VM death, on SIGQUIT / `jcmd
//! JVMTI.data_dump`) and the report builders that turn tables into the
//! format's plain data.
pub mod commands;
pub mod cpu_report;
pub mod cpu_times_report;
pub mod dump;
pub mod heap_commands;
pub mod heap_dump;
pub mod monitor_report;
pub mod sites_report;
pub mod trace_info;
