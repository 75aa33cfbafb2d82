//! A front-end that accepts the connection and then reads nothing: the
//! program must go on (its threads may not wait behind a full output
//! queue) and the VM must exit, with one message saying the stream was cut
//! (docs/socket-protocol.md, "A front-end that stops reading").

use crate::common;

use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Accepts connections and keeps them open without reading a byte.
struct DeafPeer {
    port: u16,
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl DeafPeer {
    fn start() -> DeafPeer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let h = held.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                h.lock().unwrap().push(s);
            }
        });
        DeafPeer { port, held }
    }

    fn connections(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

const CUT_MESSAGE: &str = "the front-end accepted no output for 5 s";

fn cut_messages(err: &str) -> usize {
    err.matches(CUT_MESSAGE).count()
}

/// monitor=y writes two records per Object.wait: 400 000 of them are far
/// more than the socket buffers hold. The program used to stop until the
/// peer went away; now it takes its own time plus the stall limit.
#[test]
fn a_peer_that_never_reads_does_not_hold_up_the_program() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("net_stall_monitor");
    let limit = Duration::from_secs(120);
    let args = ["200000"];
    let alone = common::run_with_agent_bounded(
        &dir,
        "monitor=y,file=out.txt",
        "WaitPingPong",
        &args,
        limit,
    );
    assert!(alone.output.status.success() && !alone.timed_out);
    let size = std::fs::metadata(dir.join("out.txt")).unwrap().len();
    assert!(
        size > 20 << 20,
        "the run must write much more than socket buffers hold: {size} bytes"
    );

    let peer = DeafPeer::start();
    let r = common::run_with_agent_bounded(
        &dir,
        &format!("monitor=y,net=127.0.0.1:{}", peer.port),
        "WaitPingPong",
        &args,
        limit,
    );
    assert!(
        !r.timed_out,
        "the program waited for a peer that never reads"
    );
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    assert_eq!(common::stdout(&r.output).trim(), "turns 200000");
    assert_eq!(cut_messages(&err), 1, "one message:\n{err}");
    assert_eq!(peer.connections(), 1);
    assert!(
        r.elapsed < alone.elapsed + Duration::from_secs(20),
        "{:?} against {:?} alone",
        r.elapsed,
        alone.elapsed
    );
}

/// The exit heap dump to a peer that reads nothing used to keep the VM
/// from exiting for as long as the peer kept the connection.
#[test]
fn an_exit_heap_dump_to_a_peer_that_never_reads_gives_up() {
    let _only_jvm = common::exclusive();
    let dir = common::scratch("net_stall_dump");
    let marker = dir.join("go");
    std::fs::write(&marker, b"").unwrap(); // HeapBench exits once built
    let peer = DeafPeer::start();
    let r = common::run_with_agent_bounded(
        &dir,
        &format!("heap=dump,format=b,net=127.0.0.1:{}", peer.port),
        "HeapBench",
        &["64", marker.to_str().unwrap()],
        Duration::from_secs(120),
    );
    assert!(!r.timed_out, "the VM did not exit");
    let err = common::stderr(&r.output);
    assert!(r.output.status.success(), "{err}");
    assert_eq!(cut_messages(&err), 1, "one message:\n{err}");
    assert!(r.elapsed < Duration::from_secs(60), "{:?}", r.elapsed);
}
