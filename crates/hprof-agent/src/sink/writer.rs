//! The writer thread: owns the format state and the sink.
//!
//! Event and dump code hand it jobs — closures that serialize plain data
//! through the format into the output buffer — over a bounded channel, so
//! no profiler thread ever blocks on IO (only on back-pressure when the
//! writer is far behind). A failed write is reported once; from then on
//! output is dropped, and the JVM keeps running. Records nobody waits for
//! are queued without waking the writer each time (`super::wake`).

use super::wake::{Rest, Urgency, Wake};
use super::Sink;
use crossbeam_channel::{bounded, Receiver, Sender, TryRecvError, TrySendError};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Serialize something with the format `F` into the output buffer.
pub type WriterJob<F> = Box<dyn FnOnce(&mut F, &mut Vec<u8>) + Send>;

enum Msg<F> {
    Job(WriterJob<F>),
    /// Write everything buffered to the sink, then acknowledge.
    Flush(Sender<()>),
    /// Output produced piece by piece by the writer thread itself.
    Stream(Box<dyn Stream<F>>),
}

/// What a [`Stream`] did in one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It appended output (possibly none) and has more to come at once.
    More,
    /// Nothing more can come yet (its input is still being produced): the
    /// writer serves other jobs and asks again shortly. A stream returns
    /// this only between complete records, where other records may go.
    Wait,
    /// Finished; it is dropped.
    Done,
}

/// What a stream asks of the sink after a step, beyond the bytes the step
/// appended (which go first).
pub enum SinkRequest<'a> {
    /// Copy a range of a file (`Sink::copy_range`); a failure stops the
    /// output, as a failed write does.
    Copy(super::FileRange<'a>),
    /// Take a file as the output (`Sink::adopt`); the stream is told how
    /// it went ([`Stream::answer`]).
    Adopt(super::Adoption<'a>),
    /// Could a file made in this directory become the output
    /// (`Sink::may_adopt`)? The stream is told.
    MayAdopt(&'a std::path::Path),
}

/// The sink's answer to a [`SinkRequest`] that asks one.
#[derive(Debug)]
pub enum SinkAnswer {
    /// Ok: bytes the stream must write next (moved out of the head); Err:
    /// why not (nothing changed: the stream can still copy the file).
    Adopted(Result<Vec<u8>, String>),
    MayAdopt(Result<(), String>),
}

/// Output that the writer thread produces itself, a piece per step, until
/// it is done: a large record copied from elsewhere (the VM's own heap
/// dump) goes straight from its source to the sink without being queued
/// whole, and no other job's output lands inside one of its records.
/// `step` must return within a short time (it is never waited for by
/// anything but the writer), and `abandon` is called instead of further
/// steps when output has stopped or the writer is ending.
pub trait Stream<F>: Send {
    fn step(&mut self, format: &mut F, out: &mut Vec<u8>) -> Step;
    /// Asked after every step: what the sink must do once that step's
    /// bytes are written (bytes of a file to follow them, a file to take
    /// over the output).
    fn sink_request(&mut self) -> Option<SinkRequest<'_>> {
        None
    }
    /// The answer to a [`SinkRequest::Adopt`] or [`SinkRequest::MayAdopt`].
    fn answer(&mut self, _answer: SinkAnswer) {}
    fn abandon(&mut self) {}
}

/// How long the writer waits for a job before asking a waiting stream again.
const STREAM_POLL: Duration = Duration::from_millis(2);

/// How long jobs submitted with [`Writer::submit_batched`] may wait in the
/// queue after the writer's last piece of work.
const NAP: Duration = Duration::from_millis(20);

/// Longest rest of an idle writer with nothing buffered (any message
/// wakes it before).
const IDLE_SLEEP: Duration = Duration::from_secs(1);

/// Jobs queued that wake a napping writer whatever their urgency (the
/// channel holds 8192).
const BACKLOG: usize = 1024;

/// Output a job left pending, piece by piece (see
/// `ProfileFormat::drain_staged`): append the next piece and return true,
/// or return false when there is none.
pub trait Pending {
    fn next_piece(&mut self, _out: &mut Vec<u8>) -> bool {
        false
    }
}

impl Pending for Box<dyn crate::format::ProfileFormat + Send> {
    fn next_piece(&mut self, out: &mut Vec<u8>) -> bool {
        self.drain_staged(out)
    }
}

impl Pending for () {}
impl Pending for u32 {}

/// Buffered bytes are pushed to the sink once they pass this size (the
/// original buffered in 64 KiB chunks too).
const FLUSH_THRESHOLD: usize = 64 * 1024;

/// When no job has come for this long, what is buffered is pushed out: the
/// header and the records of a quiet program reach the file even if the
/// process then dies without VM death (killed, or an OutOfMemoryError at
/// exit). Only an idle writer does it, so busy output stays batched.
const IDLE_FLUSH: Duration = Duration::from_millis(200);

pub struct Writer<F> {
    tx: parking_lot::Mutex<Option<Sender<Msg<F>>>>,
    failed: Arc<AtomicBool>,
    thread: parking_lot::Mutex<Option<JoinHandle<()>>>,
    wake: Arc<Wake>,
}

impl<F: Pending + Send + 'static> Writer<F> {
    pub fn spawn(sink: Sink, format: F) -> std::io::Result<Self> {
        let (tx, rx) = bounded::<Msg<F>>(8192);
        let failed = Arc::new(AtomicBool::new(false));
        let f2 = failed.clone();
        let wake = Arc::new(Wake::default());
        let w2 = wake.clone();
        let thread = std::thread::Builder::new()
            .name("hprof-writer".into())
            .spawn(move || run(rx, sink, format, f2, &w2))?;
        wake.set_thread(thread.thread().clone());
        Ok(Writer {
            tx: parking_lot::Mutex::new(Some(tx)),
            failed,
            thread: parking_lot::Mutex::new(Some(thread)),
            wake,
        })
    }

    /// Queue a job; dropped silently once output has failed or stopped.
    pub fn submit(&self, job: impl FnOnce(&mut F, &mut Vec<u8>) + Send + 'static) {
        self.queue(Box::new(job), Urgency::Now);
    }

    /// Queue a job that nobody waits for (a record of an event, written in
    /// its turn): it may wait for the writer's next batch, up to [`NAP`]
    /// after the writer last worked, so that a burst of such jobs (a
    /// thousand threads starting) does not wake the writer for each one.
    pub fn submit_batched(&self, job: impl FnOnce(&mut F, &mut Vec<u8>) + Send + 'static) {
        self.queue(Box::new(job), Urgency::Later);
    }

    fn queue(&self, job: WriterJob<F>, urgency: Urgency) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        let tx = self.tx.lock().clone();
        let Some(tx) = tx else { return };
        let urgency = match tx.try_send(Msg::Job(job)) {
            Ok(()) if tx.len() < BACKLOG => urgency,
            Ok(()) => Urgency::Now,
            Err(TrySendError::Full(msg)) => {
                // Back-pressure: the writer must run for room to come.
                self.wake.queued(Urgency::Now);
                if tx.send(msg).is_err() {
                    return;
                }
                Urgency::Now
            }
            Err(TrySendError::Disconnected(_)) => return,
        };
        self.wake.queued(urgency);
    }

    /// Hand the writer a stream to drain (see [`Stream`]); jobs queued
    /// after it are served between its records. Dropped (abandoned) when
    /// output has failed or stopped.
    pub fn stream(&self, mut s: Box<dyn Stream<F>>) {
        if self.failed.load(Ordering::Relaxed) {
            s.abandon();
            return;
        }
        let tx = self.tx.lock().clone();
        match tx {
            Some(tx) => {
                if let Err(e) = self.send_now(&tx, Msg::Stream(s)) {
                    if let Msg::Stream(mut s) = e.into_inner() {
                        s.abandon();
                    }
                }
            }
            None => s.abandon(),
        }
    }

    /// Send a message someone waits for, waking the writer (first, in case
    /// the queue is full).
    fn send_now(
        &self,
        tx: &Sender<Msg<F>>,
        msg: Msg<F>,
    ) -> Result<(), crossbeam_channel::SendError<Msg<F>>> {
        let msg = match tx.try_send(msg) {
            Ok(()) => {
                self.wake.queued(Urgency::Now);
                return Ok(());
            }
            Err(TrySendError::Full(msg)) => msg,
            Err(TrySendError::Disconnected(msg)) => return Err(crossbeam_channel::SendError(msg)),
        };
        self.wake.queued(Urgency::Now);
        tx.send(msg)?;
        self.wake.queued(Urgency::Now);
        Ok(())
    }

    /// Block until everything queued so far is written to the sink.
    pub fn flush(&self) {
        let tx = self.tx.lock().clone();
        if let Some(tx) = tx {
            let (ack_tx, ack_rx) = bounded(1);
            if self.send_now(&tx, Msg::Flush(ack_tx)).is_ok() {
                let _ = ack_rx.recv();
            }
        }
    }

    /// Like `flush`, but waits at most `limit` for the writer.
    pub fn flush_within(&self, limit: Duration) {
        let tx = self.tx.lock().clone();
        if let Some(tx) = tx {
            let (ack_tx, ack_rx) = bounded(1);
            self.wake.queued(Urgency::Now);
            if tx.send_timeout(Msg::Flush(ack_tx), limit).is_ok() {
                self.wake.queued(Urgency::Now);
                let _ = ack_rx.recv_timeout(limit);
            }
        }
    }

    /// Flush, close the channel and wait for the thread to finish.
    pub fn stop(&self) {
        self.flush();
        drop(self.tx.lock().take());
        // It sees the channel closed once it looks.
        self.wake.queued(Urgency::Now);
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }

    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Times a submitter woke the writer thread so far.
    pub fn wakeups(&self) -> u64 {
        self.wake.wakeups()
    }
}

fn run<F: Pending>(
    rx: Receiver<Msg<F>>,
    mut sink: Sink,
    mut format: F,
    failed: Arc<AtomicBool>,
    wake: &Wake,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(FLUSH_THRESHOLD * 2);
    let target = sink.describe();
    let stop_output = |sink: &mut Sink, e: std::io::Error| {
        failed.store(true, Ordering::Relaxed);
        sink.abandon();
        let kept = match sink.salvage() {
            Some(n) => {
                format!(" (the file keeps its first {n} bytes, up to its last whole record)")
            }
            None => String::new(),
        };
        crate::diag::error(&format!(
            "write to {target} failed: {e}; profile output stopped{kept}"
        ));
    };
    let push = |sink: &mut Sink, buf: &mut Vec<u8>, force: bool| {
        if failed.load(Ordering::Relaxed) {
            buf.clear();
            return;
        }
        let r = sink
            .write_all_bounded(buf)
            .and_then(|_| if force { sink.flush() } else { Ok(()) });
        buf.clear();
        if let Err(e) = r {
            stop_output(sink, e);
        }
    };
    // Streams being drained, oldest first: only the first one runs.
    let mut streams: std::collections::VecDeque<Box<dyn Stream<F>>> = Default::default();
    // When the writer last took a message; whether it took one since it
    // last rested.
    let mut last_msg = Instant::now();
    let mut worked = false;
    loop {
        // A stream that has output to give runs before any queued job.
        while let Some(s) = streams.front_mut() {
            if failed.load(Ordering::Relaxed) {
                s.abandon();
                streams.pop_front();
                continue;
            }
            let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                s.step(&mut format, &mut buf)
            }))
            .unwrap_or_else(|_| {
                crate::diag::error("internal error while streaming output; stream dropped");
                Step::Done
            });
            // What the step asks of the sink, after its bytes.
            let asked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let request = s.sink_request()?;
                push(&mut sink, &mut buf, false);
                if failed.load(Ordering::Relaxed) {
                    return None;
                }
                match request {
                    SinkRequest::Copy(r) => {
                        if let Err(e) = sink.copy_range(&r) {
                            stop_output(&mut sink, e);
                        }
                        None
                    }
                    SinkRequest::Adopt(a) => Some(SinkAnswer::Adopted(sink.adopt(&a))),
                    SinkRequest::MayAdopt(dir) => Some(SinkAnswer::MayAdopt(sink.may_adopt(dir))),
                }
            }));
            let answered = asked.and_then(|a| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    if let Some(answer) = a {
                        s.answer(answer);
                    }
                }))
            });
            match answered {
                Ok(()) => {}
                Err(_) => {
                    crate::diag::error("internal error while copying output; output stopped");
                    failed.store(true, Ordering::Relaxed);
                }
            }
            if buf.len() >= FLUSH_THRESHOLD {
                push(&mut sink, &mut buf, false);
            }
            match step {
                Step::More => {}
                Step::Wait => break,
                Step::Done => {
                    streams.pop_front();
                }
            }
        }
        let msg = match rx.try_recv() {
            Ok(m) => m,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                // Rest: a nap right after work (jobs nobody waits for
                // gather meanwhile), then sleep; what is buffered is pushed
                // once no message came for IDLE_FLUSH.
                let idle = last_msg.elapsed();
                let (how, limit) = if !streams.is_empty() {
                    (Rest::Sleep, STREAM_POLL)
                } else if std::mem::take(&mut worked) {
                    (Rest::Nap, NAP)
                } else if idle < IDLE_FLUSH && !buf.is_empty() {
                    (Rest::Sleep, IDLE_FLUSH - idle)
                } else {
                    if !buf.is_empty() {
                        push(&mut sink, &mut buf, true);
                    }
                    // Nothing to do until a message comes.
                    (Rest::Sleep, IDLE_SLEEP)
                };
                wake.rest(how, limit, || !rx.is_empty());
                continue;
            }
        };
        last_msg = Instant::now();
        worked = true;
        match msg {
            Msg::Stream(s) => streams.push_back(s),
            Msg::Job(job) => {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    job(&mut format, &mut buf)
                }));
                if r.is_err() {
                    crate::diag::error("internal error while formatting output; record dropped");
                }
                if buf.len() >= FLUSH_THRESHOLD {
                    push(&mut sink, &mut buf, false);
                }
                while format.next_piece(&mut buf) {
                    push(&mut sink, &mut buf, false);
                }
            }
            Msg::Flush(ack) => {
                push(&mut sink, &mut buf, true);
                let _ = ack.send(());
            }
        }
    }
    for mut s in streams {
        s.abandon();
    }
    push(&mut sink, &mut buf, true);
    if !failed.load(Ordering::Relaxed) {
        if let Err(e) = sink.finish() {
            crate::diag::error(&format!(
                "write to {target} failed: {e}; profile output incomplete"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_order_and_flush_waits() {
        let mem = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let w = Writer::spawn(Sink::Memory(mem.clone()), 0u32).unwrap();
        for i in 0..100u32 {
            w.submit(move |count: &mut u32, out: &mut Vec<u8>| {
                *count += 1;
                out.extend_from_slice(format!("{i};").as_bytes());
            });
        }
        w.flush();
        let text = String::from_utf8(mem.lock().clone()).unwrap();
        assert!(text.starts_with("0;1;2;"));
        assert!(text.ends_with("98;99;"));
        w.submit(|_: &mut u32, out: &mut Vec<u8>| out.extend_from_slice(b"end"));
        w.stop();
        assert!(mem.lock().ends_with(b"end"));
        // After stop, submissions are ignored rather than blocking or panicking.
        w.submit(|_: &mut u32, out: &mut Vec<u8>| out.extend_from_slice(b"late"));
        assert!(!mem.lock().ends_with(b"late"));
    }

    #[test]
    fn a_burst_of_batched_jobs_wakes_the_writer_a_few_times_and_is_all_written() {
        let mem = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let w = Writer::spawn(Sink::Memory(mem.clone()), 0u32).unwrap();
        // Let it fall asleep, idle.
        std::thread::sleep(Duration::from_millis(50));
        let before = w.wakeups();
        let n = 4000usize;
        for _ in 0..n {
            w.submit_batched(|_: &mut u32, out: &mut Vec<u8>| out.push(b'x'));
        }
        // No flush: written in batches, then pushed once the writer idles.
        let t = Instant::now();
        while mem.lock().len() < n && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(mem.lock().len(), n, "every batched job written unasked");
        let woken = w.wakeups() - before;
        // Once for the first job, then after each quiet spell of more than
        // NAP between two submissions (none while it runs undisturbed).
        assert!(
            (1..=20).contains(&woken),
            "woken {woken} times for {n} jobs"
        );
        w.submit(|_: &mut u32, out: &mut Vec<u8>| out.push(b'y'));
        w.flush();
        assert_eq!(mem.lock().last(), Some(&b'y'));
        w.stop();
    }

    #[test]
    fn a_panicking_job_does_not_kill_the_writer() {
        crate::diag::captured::enable();
        let mem = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let w = Writer::spawn(Sink::Memory(mem.clone()), ()).unwrap();
        w.submit(|_: &mut (), _: &mut Vec<u8>| panic!("boom"));
        w.submit(|_: &mut (), out: &mut Vec<u8>| out.extend_from_slice(b"after"));
        w.stop();
        assert_eq!(&*mem.lock(), b"after");
        let said = crate::diag::captured::take_matching("internal error while formatting output");
        assert_eq!(said.len(), 1, "one message for the dropped record");
    }
}
