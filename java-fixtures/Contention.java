import java.nio.file.*;
import java.util.concurrent.CountDownLatch;

/**
 * Monitor fixture with contention and waits whose amounts it measures itself.
 *
 * Usage: Contention measure <workers> <rounds> <holdMs>
 *   1. The main thread locks QuietLock 100000 times: never contended.
 *   2. Each round the "holder" thread takes HotLock, releases the workers,
 *      waits until every worker is BLOCKED on HotLock, keeps it holdMs more
 *      and lets go; the workers then get it one after the other. So every
 *      worker entry is contended (workers * rounds contended entries) and
 *      each worker times its own blocked span with System.nanoTime around
 *      the synchronized entry. Prints "contended_entries N" and
 *      "blocked_ns_total N".
 *   3. The "waiter" thread waits on a WaitBox with a 300 ms timeout nobody
 *      notifies, then untimed until main notifies it ~200 ms later. Prints
 *      "timed_wait_ms N" and "notified_wait_ms N" as measured by the waiter.
 *
 * Usage: Contention hammer <threads> <iterations>
 *   Benchmark load: each thread takes HotLock <iterations> times around a
 *   short computation, so entries are often contended.
 *
 * Usage: Contention hold <marker-file> [<second-marker>]
 *   "waiter" waits on HotLock (untimed), then "holder" owns HotLock and
 *   "blocked" is blocked entering it; prints "ready" and keeps that state
 *   until the marker file exists (for a SIGQUIT monitor dump). Then all
 *   finish; prints "released <ms blocked measured by 'blocked'>" and, with
 *   a second marker, waits for that file too (for a second dump).
 */
public class Contention {
    static final class HotLock {}
    static final class QuietLock {}
    static final class WaitBox {}

    static final HotLock hot = new HotLock();
    static final QuietLock quiet = new QuietLock();
    static final WaitBox box = new WaitBox();
    static volatile long sink;

    /** One contended entry; returns the nanoseconds spent getting in. */
    static long blockOnHot() {
        long t0 = System.nanoTime();
        long t1;
        synchronized (hot) {
            t1 = System.nanoTime();
            sink++;
        }
        return t1 - t0;
    }

    static void awaitState(Thread t, Thread.State s) throws InterruptedException {
        while (t.getState() != s) {
            Thread.sleep(1);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("hammer")) {
            hammer(Integer.parseInt(args[1]), Long.parseLong(args[2]));
        } else if (args[0].equals("hold")) {
            hold(Paths.get(args[1]), args.length > 2 ? Paths.get(args[2]) : null);
        } else {
            measure(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Long.parseLong(args[3]));
        }
    }

    /**
     * Run the JDK code the measured phase uses (latch parking and wake-up,
     * thread states) once in two threads first, so the JDK's own lazy set-up
     * (e.g. VarHandle linkage behind the latches) cannot contend on JDK
     * internal monitors during the measurement. The first call of
     * System.nanoTime from this class also resolves java.lang.System through
     * the application class loader, which locks a per-name lock: workers
     * doing that first together contend on it.
     */
    static void warmUp() throws Exception {
        sink += System.nanoTime() & 1;
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(2);
        Runnable r = () -> {
            try {
                go.await();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            done.countDown();
        };
        Thread a = new Thread(r, "warm-a");
        Thread b = new Thread(r, "warm-b");
        a.start();
        b.start();
        awaitState(a, Thread.State.WAITING);
        awaitState(b, Thread.State.WAITING);
        go.countDown();
        done.await();
        awaitEnd(a);
        awaitEnd(b);
    }

    static void measure(int workers, int rounds, long holdMs) throws Exception {
        warmUp();
        for (int i = 0; i < 100_000; i++) {
            synchronized (quiet) {
                sink++;
            }
        }

        CountDownLatch[] start = new CountDownLatch[rounds];
        CountDownLatch[] done = new CountDownLatch[rounds];
        for (int r = 0; r < rounds; r++) {
            start[r] = new CountDownLatch(1);
            done[r] = new CountDownLatch(workers);
        }
        long[] blocked = new long[workers];
        Thread[] ws = new Thread[workers];
        for (int w = 0; w < workers; w++) {
            final int id = w;
            ws[w] = new Thread(() -> {
                try {
                    for (int r = 0; r < rounds; r++) {
                        start[r].await();
                        blocked[id] += blockOnHot();
                        done[r].countDown();
                    }
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "worker-" + w);
            ws[w].start();
        }
        Thread holder = new Thread(() -> {
            try {
                for (int r = 0; r < rounds; r++) {
                    synchronized (hot) {
                        start[r].countDown();
                        for (Thread t : ws) {
                            awaitState(t, Thread.State.BLOCKED);
                        }
                        Thread.sleep(holdMs);
                    }
                    done[r].await();
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "holder");
        holder.start();
        awaitEnd(holder);
        long total = 0;
        for (int w = 0; w < workers; w++) {
            awaitEnd(ws[w]);
            total += blocked[w];
        }
        System.out.println("contended_entries " + (workers * rounds));
        System.out.println("blocked_ns_total " + total);

        long[] waits = new long[2];
        Thread waiter = new Thread(() -> {
            try {
                synchronized (box) {
                    long t0 = System.nanoTime();
                    box.wait(300);
                    waits[0] = System.nanoTime() - t0;
                    t0 = System.nanoTime();
                    box.wait();
                    waits[1] = System.nanoTime() - t0;
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "waiter");
        waiter.start();
        awaitState(waiter, Thread.State.TIMED_WAITING);
        awaitState(waiter, Thread.State.WAITING);
        Thread.sleep(200);
        synchronized (box) {
            box.notifyAll();
        }
        awaitEnd(waiter);
        System.out.println("timed_wait_ms " + waits[0] / 1_000_000);
        System.out.println("notified_wait_ms " + waits[1] / 1_000_000);
    }

    /** Benchmark load: threads fight over HotLock with short critical sections. */
    static void hammer(int threads, long iterations) throws Exception {
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                long x = 1;
                for (long i = 0; i < iterations; i++) {
                    synchronized (hot) {
                        for (int k = 0; k < 50; k++) {
                            x = x * 6364136223846793005L + 1442695040888963407L;
                        }
                        sink += x;
                    }
                }
            }, "hammer-" + t);
            ts[t].start();
        }
        for (Thread t : ts) {
            awaitEnd(t);
        }
        System.out.println("sink " + sink);
    }

    static void hold(Path marker, Path then) throws Exception {
        Thread waiter = new Thread(() -> {
            try {
                synchronized (hot) {
                    hot.wait();
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "waiter");
        waiter.start();
        awaitState(waiter, Thread.State.WAITING);
        CountDownLatch owned = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
            try {
                synchronized (hot) {
                    owned.countDown();
                    while (!Files.exists(marker)) {
                        Thread.sleep(20);
                    }
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }, "holder");
        holder.start();
        owned.await();
        long[] blockedNs = new long[1];
        Thread blocked = new Thread(() -> blockedNs[0] = blockOnHot(), "blocked");
        blocked.start();
        awaitState(blocked, Thread.State.BLOCKED);
        System.out.println("ready");
        System.out.flush();
        awaitEnd(holder);
        awaitEnd(blocked);
        synchronized (hot) {
            hot.notifyAll();
        }
        awaitEnd(waiter);
        System.out.println("released " + blockedNs[0] / 1_000_000);
        System.out.flush();
        if (then != null) {
            while (!Files.exists(then)) {
                Thread.sleep(20);
            }
        }
        System.out.println("done");
    }

    /**
     * Wait for a thread to end without Thread.join(): join() holds the
     * Thread object's monitor, which the ending thread must enter too, so it
     * would add a (real, but unwanted here) contended java.lang.Thread entry
     * to MONITOR TIME. isAlive() takes no lock.
     */
    static void awaitEnd(Thread t) throws InterruptedException {
        while (t.isAlive()) {
            Thread.sleep(1);
        }
    }
}
