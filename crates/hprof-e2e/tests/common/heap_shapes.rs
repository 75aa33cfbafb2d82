//! What the fixture `HeapShapes` (java-fixtures) makes knowable of its
//! heap, shared by the heap analyser's tests and the UI's Heap tab tests.

/// Instances of each of its classes in any dump taken once it is ready
/// (a class without instances included: its statics hold the graphs).
pub const INSTANCES: [(&str, u64); 9] = [
    ("HeapShapes$Owner", 1),
    ("HeapShapes$Leaf", 10),
    ("HeapShapes$Leaf[]", 1),
    ("HeapShapes$Holder", 2),
    ("HeapShapes$Shared", 1),
    ("HeapShapes$Node", 200_000),
    ("HeapShapes$Cyc", 3),
    ("HeapShapes$Kept", 2),
    ("HeapShapes$Statics", 0),
];
