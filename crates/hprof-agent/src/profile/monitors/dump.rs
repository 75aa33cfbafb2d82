//! What a full dump's MONITOR DUMP shows: every known live thread with its
//! state and a fresh trace, and every monitor one of them owns, with the
//! threads waiting for it.

use super::{object_class, thread_serial};
use crate::format::{MonitorThread, ThreadStatus};
use crate::jvmti::sys::thread_state;
use crate::jvmti::{Jni, Obj};
use crate::report::monitor::OwnedMonitor;
use crate::vm::{stacks, threads, Context};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// Threads in thread-table order, then the monitors each owns.
pub(super) fn collect(ctx: &Context, jni: Jni<'_>) -> (Vec<MonitorThread>, Vec<OwnedMonitor>) {
    let j = ctx.jvmti;
    let Ok(all) = j.all_threads(jni) else {
        return Default::default();
    };
    let mut known: Vec<(u32, Obj<'_>)> = all
        .iter()
        .filter_map(|t| threads::known_serial(ctx, t).map(|s| (s, t)))
        .collect();
    known.sort_by_key(|&(s, _)| s);
    let handles: Vec<Obj<'_>> = known.iter().map(|&(_, t)| t).collect();

    // States and stacks of all of them in one safepoint.
    let mut states: HashMap<u32, i32> = HashMap::new();
    let mut lines = Vec::with_capacity(known.len());
    let stacks = j
        .thread_list_stack_traces(&handles, ctx.depth() as usize + ctx.hidden.extra_depth())
        .ok();
    let mut key = Vec::new();
    for (i, &(serial, t)) in known.iter().enumerate() {
        let (state, trace) = match &stacks {
            Some(s) if i < s.len() => {
                let (state, frames) = s.get(i);
                let frames = ctx.hidden.strip(frames);
                (
                    state,
                    stacks::trace_of(ctx, jni, serial, frames, &mut key).map(|t| t.serial),
                )
            }
            _ => (j.thread_state(t).unwrap_or(0), None),
        };
        let trace = trace.unwrap_or_else(|| ctx.system_trace());
        if let Some(rec) = ctx.tables.threads.get(serial) {
            rec.last_trace.store(trace, Ordering::Relaxed);
        }
        states.insert(serial, state);
        lines.push(MonitorThread {
            thread_serial: serial,
            trace_serial: trace,
            status: ThreadStatus::from_jvmti_state(state as u32),
        });
    }

    let mut owned = Vec::new();
    for &(_, t) in &known {
        let Ok(objs) = j.owned_monitors(jni, t) else {
            continue;
        };
        for obj in objs.iter() {
            let Ok(usage) = j.monitor_usage(jni, obj) else {
                continue;
            };
            let Some(class) = object_class(ctx, jni, obj) else {
                continue;
            };
            let owner = usage
                .owner
                .as_ref()
                .map_or(0, |o| thread_serial(ctx, jni, o.obj()));
            let listed = usage
                .waiters
                .iter()
                .chain(usage.notify_waiters.iter())
                .map(|w| {
                    let s = thread_serial(ctx, jni, w);
                    let state = states
                        .get(&s)
                        .copied()
                        .unwrap_or_else(|| j.thread_state(w).unwrap_or(0));
                    (s, state)
                })
                .collect::<Vec<_>>();
            let (enter, notify) = classify_waiters(listed);
            owned.push(OwnedMonitor {
                class,
                owner,
                entry_count: usage.entry_count,
                waiting_to_enter: enter,
                waiting_to_be_notified: notify,
            });
        }
    }
    (lines, owned)
}

/// Split the threads GetObjectMonitorUsage lists (both lists, as (serial,
/// JVMTI state)) into "waiting to enter" and "waiting to be notified".
/// HotSpot before JDK 23 mixes the lists (its waiters also hold threads in
/// Object.wait()), so each thread is filed by its own state, once, and all
/// JDKs print the same thing.
fn classify_waiters(listed: impl IntoIterator<Item = (u32, i32)>) -> (Vec<u32>, Vec<u32>) {
    let mut enter = Vec::new();
    let mut notify = Vec::new();
    for (s, state) in listed {
        if enter.contains(&s) || notify.contains(&s) {
            continue;
        }
        if state & thread_state::BLOCKED_ON_MONITOR_ENTER != 0 {
            enter.push(s);
        } else {
            notify.push(s);
        }
    }
    (enter, notify)
}

#[cfg(test)]
mod tests {
    use super::classify_waiters;

    #[test]
    fn waiters_are_filed_by_state_once() {
        const BLOCKED: i32 = 0x0401; // alive + blocked on monitor enter
        const WAITING: i32 = 0x0191; // alive + waiting indefinitely + in Object.wait
                                     // Pre-JDK-23 shape: the waiter in Object.wait() is in both lists.
        let listed = [
            (200_006, BLOCKED),
            (200_004, WAITING),
            (200_004, WAITING),
            (200_007, BLOCKED),
        ];
        assert_eq!(
            classify_waiters(listed),
            (vec![200_006, 200_007], vec![200_004])
        );
        assert_eq!(classify_waiters([]), (vec![], vec![]));
    }
}
