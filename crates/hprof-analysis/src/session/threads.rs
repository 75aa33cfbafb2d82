//! The Threads view: every thread with its start and end and, where CPU
//! samples name threads (`thread=y`), its samples and the methods on top
//! of them.

use super::{Session, ThreadInfo};
use std::collections::HashMap;

/// Methods shown per thread.
const TOP_METHODS: usize = 3;

/// One thread of the view.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadRow {
    pub thread: ThreadInfo,
    /// It has a START THREAD record; else it is known only from samples
    /// (and whether it ended is unknown).
    pub started: bool,
    pub samples: u64,
    /// The methods on top of its samples, most samples first.
    pub top: Vec<(String, u64)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ThreadsView {
    pub threads: Vec<ThreadRow>,
    /// The CPU samples name threads.
    pub per_thread_samples: bool,
}

impl Session {
    pub fn threads_view(&self) -> ThreadsView {
        let mut per_thread: HashMap<u32, (u64, HashMap<String, u64>)> = HashMap::new();
        if let Some(cpu) = &self.cpu {
            for e in &cpu.entries {
                let thread = self.trace_thread(e.trace_serial);
                if thread == 0 {
                    continue;
                }
                let top = self
                    .trace_frames(e.trace_serial)
                    .and_then(|f| f.first())
                    .map_or_else(|| "<no frames>".to_string(), |&f| self.frame_label(f));
                let entry = per_thread.entry(thread).or_default();
                entry.0 += u64::from(e.count);
                *entry.1.entry(top).or_insert(0) += u64::from(e.count);
            }
        }
        let doing = |serial: u32| -> (u64, Vec<(String, u64)>) {
            per_thread
                .get(&serial)
                .map_or((0, Vec::new()), |(n, tops)| {
                    let mut v: Vec<(&String, &u64)> = tops.iter().collect();
                    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                    (
                        *n,
                        v.into_iter()
                            .take(TOP_METHODS)
                            .map(|(m, c)| (m.clone(), *c))
                            .collect(),
                    )
                })
        };
        let mut threads: Vec<ThreadRow> = self
            .threads
            .iter()
            .map(|t| {
                let (samples, top) = doing(t.serial);
                ThreadRow {
                    thread: t.clone(),
                    started: true,
                    samples,
                    top,
                }
            })
            .collect();
        // Threads that only appear in samples (`main` starts before the
        // agent's VM init and has no START THREAD record).
        let mut unlisted: Vec<&u32> = per_thread
            .keys()
            .filter(|s| !self.thread_index.contains_key(s))
            .collect();
        unlisted.sort();
        for &serial in unlisted {
            let (samples, top) = doing(serial);
            threads.push(ThreadRow {
                thread: ThreadInfo {
                    serial,
                    object_id: 0,
                    name: format!("thread {serial}"),
                    group: String::new(),
                    start_ms: None,
                    end_ms: None,
                    ended: false,
                },
                started: false,
                samples,
                top,
            });
        }
        ThreadsView {
            threads,
            per_thread_samples: !per_thread.is_empty(),
        }
    }
}
