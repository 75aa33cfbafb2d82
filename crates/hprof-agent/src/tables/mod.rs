//! Interned, numbered entities shared by all profiles: classes, methods and
//! frames, traces, threads, and the object-ID allocator.
//!
//! Many event threads insert, the writer and dump code read. Lookups on hot
//! paths (a sampled stack → frame ids → trace) go through sharded concurrent
//! maps (`DashMap`): no global lock, no allocation when the entry exists.
//! Serial numbers follow the original: classes from 100000, threads from
//! 200000 (200000 = "unknown thread"), traces from 300000.

pub mod classes;
pub mod frames;
pub mod ids;
pub mod objects;
pub mod sites;
pub mod threads;
pub mod traces;

pub use classes::{ClassEntry, ClassTable};
pub use frames::{FrameEntry, FrameTable, MethodEntry};
pub use ids::TagKind;
pub use objects::{ObjectInfo, ObjectTable};
pub use sites::{SiteTable, SiteTotals};
pub use threads::{ThreadRecord, ThreadTable};
pub use traces::{Trace, TraceTable};

/// All tables of one agent.
#[derive(Default)]
pub struct Tables {
    pub classes: ClassTable,
    pub frames: FrameTable,
    pub traces: TraceTable,
    pub threads: ThreadTable,
    /// Object IDs of every object the agent names: class mirrors, Thread
    /// objects, tracked heap objects. One table, so IDs never collide.
    pub objects: ObjectTable,
    /// Allocation sites (class x trace) with their counters.
    pub sites: SiteTable,
}
