//! HPROF from one form to another, on the reader's records: binary records
//! as text (`text`, shared by the tool's `print` and the agent's text heap
//! dumps made by the VM's dumper), and HotSpot's own heap dump re-emitted
//! inside the agent's binary stream with its identifiers made unique
//! there (`hotspot`). Plain data in, bytes or serializer calls out: no JVM,
//! no IO of its own.

pub mod hotspot;
pub mod symbols;
pub mod text;
