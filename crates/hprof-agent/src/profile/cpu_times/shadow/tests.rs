use super::*;

/// A scripted JVM: methods are numbered, site (cnum, mnum) maps to method
/// cnum * 100 + mnum, frame id = method + 0x7000_0000, traces interned in a
/// local table.
#[derive(Default)]
struct Fake {
    clock: u64,
    traces: Vec<Vec<u32>>,
    real: Option<Vec<MethodKey>>, // top first
    real_fetches: usize,
}

impl TimingEnv for Fake {
    fn now(&mut self) -> u64 {
        self.clock
    }
    fn site_method(&mut self, cnum: u32, mnum: u32) -> Option<MethodKey> {
        Some((cnum * 100 + mnum) as usize)
    }
    fn frame_of(&mut self, method: MethodKey) -> Option<u32> {
        Some(0x7000_0000 + method as u32)
    }
    fn intern(&mut self, key: &[u32]) -> u32 {
        if let Some(i) = self.traces.iter().position(|t| t == key) {
            return 300_000 + i as u32;
        }
        self.traces.push(key.to_vec());
        300_000 + self.traces.len() as u32 - 1
    }
    fn real_stack(&mut self, out: &mut Vec<MethodKey>) -> bool {
        self.real_fetches += 1;
        match &self.real {
            Some(r) => {
                out.clear();
                out.extend(r);
                true
            }
            None => false,
        }
    }
}

fn f(m: usize) -> u32 {
    0x7000_0000 + m as u32
}

/// (hits, self, total) per trace key, summed over cells.
fn totals(fake: &Fake, list: &CellList) -> Vec<Row> {
    let mut out: Vec<(Vec<u32>, (u64, u64, u64))> = Vec::new();
    list.for_each(|c| {
        let key = fake.traces[(c.trace_serial - 300_000) as usize].clone();
        let v = (
            c.hits.load(Ordering::Relaxed),
            c.self_ns.load(Ordering::Relaxed),
            c.total_ns.load(Ordering::Relaxed),
        );
        out.push((key, v));
    });
    out.sort();
    out
}

/// A stack (method ids) and its (calls, total, self) times.
type Row = (Vec<u32>, (u64, u64, u64));

fn get(t: &[Row], key: &[u32]) -> (u64, u64, u64) {
    t.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no trace {key:x?} in {t:x?}"))
}

#[test]
fn nested_calls_charge_self_and_total_time() {
    let list = Arc::new(CellList::default());
    let mut s = ShadowStack::new(4, 0, list.clone());
    let mut e = Fake::default();
    // main(1,0) -> a(1,1) -> b(1,2)
    s.call(&mut e, 1, 0);
    e.clock = 10;
    s.call(&mut e, 1, 1);
    e.clock = 15;
    s.call(&mut e, 1, 2);
    e.clock = 45;
    s.ret(&mut e, 1, 2);
    e.clock = 50;
    s.ret(&mut e, 1, 1);
    e.clock = 100;
    s.ret(&mut e, 1, 0);
    assert_eq!(s.depth_now(), 0);
    let t = totals(&e, &list);
    assert_eq!(get(&t, &[0, f(102), f(101), f(100)]), (1, 30, 30));
    assert_eq!(get(&t, &[0, f(101), f(100)]), (1, 10, 40));
    assert_eq!(get(&t, &[0, f(100)]), (1, 60, 100));
    assert_eq!(
        e.real_fetches, 0,
        "the common path never walks the real stack"
    );
}

#[test]
fn exact_counts_for_loops_and_recursion_and_depth_cut() {
    fn fib(s: &mut ShadowStack, e: &mut Fake, n: u32) -> u32 {
        s.call(e, 2, 7);
        e.clock += 1;
        let r = if n < 2 {
            n
        } else {
            fib(s, e, n - 1) + fib(s, e, n - 2)
        };
        s.ret(e, 2, 7);
        r
    }
    let list = Arc::new(CellList::default());
    let mut s = ShadowStack::new(1, 0, list.clone());
    let mut e = Fake::default();
    s.call(&mut e, 2, 0);
    for _ in 0..5 {
        fib(&mut s, &mut e, 10);
    }
    s.ret(&mut e, 2, 0);
    let t = totals(&e, &list);
    // depth=1: one trace per method, all call paths merged.
    assert_eq!(t.len(), 2);
    assert_eq!(get(&t, &[0, f(207)]).0, 5 * 177);
    assert_eq!(get(&t, &[0, f(200)]).0, 1);
    // Self times add up to the root's total.
    let root_total = get(&t, &[0, f(200)]).2;
    let self_sum: u64 = t.iter().map(|(_, v)| v.1).sum();
    assert_eq!(self_sum, root_total);
}

#[test]
fn entries_without_a_return_are_charged_when_their_caller_returns() {
    let list = Arc::new(CellList::default());
    let mut s = ShadowStack::new(2, 0, list.clone());
    let mut e = Fake::default();
    s.call(&mut e, 1, 0);
    e.clock = 5;
    s.call(&mut e, 1, 1); // never returns normally
    e.clock = 20;
    s.ret(&mut e, 1, 0);
    let t = totals(&e, &list);
    assert_eq!(get(&t, &[0, f(101), f(100)]), (1, 15, 15));
    assert_eq!(get(&t, &[0, f(100)]), (1, 5, 20));
}

#[test]
fn exception_catch_pops_frames_the_exception_left_even_in_recursion() {
    let list = Arc::new(CellList::default());
    let mut s = ShadowStack::new(1, 0, list.clone());
    let mut e = Fake::default();
    // main -> r -> r -> r -> r ; exception caught in the second r.
    s.call(&mut e, 1, 0);
    for _ in 0..4 {
        s.call(&mut e, 1, 5);
    }
    e.clock = 7;
    // Real stack (top first): r, r, <lambda not instrumented 999>, main
    e.real = Some(vec![105, 105, 999, 100]);
    s.exception_caught(&mut e, 105);
    assert_eq!(s.methods(), vec![100, 105, 105]);
    s.ret(&mut e, 1, 5);
    s.ret(&mut e, 1, 5);
    s.ret(&mut e, 1, 0);
    let t = totals(&e, &list);
    assert_eq!(
        get(&t, &[0, f(105)]).0,
        4,
        "two exceptional exits + two returns"
    );
    assert_eq!(get(&t, &[0, f(100)]).0, 1);
    assert_eq!(s.depth_now(), 0);
}

#[test]
fn return_of_a_method_entered_before_tracking_rebuilds_from_the_real_stack() {
    let list = Arc::new(CellList::default());
    let mut s = ShadowStack::new(3, 0, list.clone());
    let mut e = Fake {
        clock: 100,
        ..Fake::default()
    };
    // Thread was running x -> y -> m before tracking; m calls k (tracked), then m returns.
    s.call(&mut e, 1, 9); // k = 109
    e.clock = 110;
    s.ret(&mut e, 1, 9);
    e.real = Some(vec![103, 102, 101]); // m, y, x (top first)
    e.clock = 120;
    s.ret(&mut e, 1, 3); // m returns: not on the shadow stack
    assert_eq!(e.real_fetches, 1);
    assert_eq!(s.methods(), vec![101, 102], "x and y now tracked, m popped");
    e.clock = 130;
    s.ret(&mut e, 1, 2);
    s.ret(&mut e, 1, 1);
    let t = totals(&e, &list);
    assert_eq!(get(&t, &[0, f(109)]), (1, 10, 10));
    assert_eq!(get(&t, &[0, f(103), f(102), f(101)]), (1, 0, 0));
    assert_eq!(get(&t, &[0, f(102), f(101)]), (1, 10, 10));
    assert_eq!(get(&t, &[0, f(101)]), (1, 0, 10));
    assert_eq!(s.depth_now(), 0);
}

#[test]
fn thread_key_is_part_of_every_trace_and_depth_zero_gives_the_empty_trace() {
    let list = Arc::new(CellList::default());
    let mut s = ShadowStack::new(2, 200_003, list.clone());
    let mut e = Fake::default();
    s.call(&mut e, 1, 0);
    s.ret(&mut e, 1, 0);
    assert_eq!(e.traces, vec![vec![200_003, f(100)]]);

    let list0 = Arc::new(CellList::default());
    let mut s0 = ShadowStack::new(0, 0, list0.clone());
    let mut e0 = Fake::default();
    s0.call(&mut e0, 1, 0);
    s0.call(&mut e0, 1, 1);
    s0.ret(&mut e0, 1, 1);
    s0.ret(&mut e0, 1, 0);
    assert_eq!(e0.traces, vec![vec![0]]);
    assert_eq!(totals(&e0, &list0)[0].1 .0, 2);
}

#[test]
fn deltas_cover_the_time_since_the_previous_dump() {
    let list = Arc::new(CellList::default());
    let mut s = ShadowStack::new(1, 0, list.clone());
    let mut e = Fake::default();
    for _ in 0..3 {
        s.call(&mut e, 1, 0);
        e.clock += 4;
        s.ret(&mut e, 1, 0);
    }
    let mut d = Vec::new();
    list.for_each(|c| d.push(c.take_delta()));
    assert_eq!(d, vec![(3, 12, 12)]);
    s.call(&mut e, 1, 0);
    e.clock += 1;
    s.ret(&mut e, 1, 0);
    d.clear();
    list.for_each(|c| d.push(c.take_delta()));
    assert_eq!(d, vec![(1, 1, 1)]);
}
