//! The profiles. Each owns its state and the JVMTI events it needs; a
//! profile that is off enables nothing and costs nothing.
pub mod alloc_sites;
pub mod cpu_samples;
pub mod cpu_times;
pub mod heap_dump;
pub mod monitors;
