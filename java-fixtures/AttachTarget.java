import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.SynchronousQueue;

/**
 * A program to attach a profiler to: it does what its standard input
 * says, one command per line, so a test decides what happens before and
 * after an attach. Prints "ready" once its worker thread runs, and one
 * answer line per command.
 *
 *   alloc N     the worker thread (started before any attach) allocates N
 *               Kept objects and N/2 int[100], all kept, and N Dropped
 *               objects, all garbage; the main thread allocates N/4 Kept
 *               more. Answers "allocated N".
 *   warm MB     the worker and the main thread each allocate MB megabytes of
 *               garbage (byte[1024]). Answers "warm".
 *   fresh N     a new thread allocates N Kept and N/2 int[100], all kept,
 *               and ends. Answers "fresh N".
 *   spin MS     CpuSplit's work split 60/30/10 for MS milliseconds on the
 *               main thread. Answers "spun".
 *   work N      N rounds of that work (a fixed amount, for benchmarks).
 *               Answers "worked NANOSECONDS".
 *   contend MS  the worker holds a lock for MS ms while the main thread
 *               waits to enter it (one contended entry), then the worker
 *               waits on it once with a 10 ms timeout. Answers "contended".
 *   block N     N new threads each wait in ServerSocket.accept() on a
 *               loopback port nobody connects to: blocked in native code,
 *               RUNNABLE to JVMTI, using no CPU. Answers "blocking N" once
 *               all of them wait in accept.
 *   park N      N new threads each park until the program ends (many
 *               threads for an attach to match). Answers "parked N" once
 *               all of them are parked.
 *   hostile MS  threads with names made to confuse a reader of thread
 *               dumps (quotes, '#', line breaks, an imitation of the main
 *               thread's dump header) each spin in spinNamed until "join"
 *               (MS ms of wall time at most). Answers "hostile K ID" (K
 *               threads, ID the main thread's Java ID, which one name
 *               imitates) at once; "join" stops them, waits for them and
 *               answers "joined".
 *   count       answers the number of objects kept so far.
 *   exit        ends (so does the end of standard input). Answers "bye".
 */
public class AttachTarget {
    static class Kept { int x; Kept(int x) { this.x = x; } }
    static class Dropped { long y; Dropped(long y) { this.y = y; } }
    static class Lock { }

    static final List<Object> keep = new ArrayList<>();
    static volatile long sink;
    static final SynchronousQueue<Runnable> work = new SynchronousQueue<>();
    static final SynchronousQueue<String> done = new SynchronousQueue<>();

    static void allocOnWorker(int n) {
        for (int i = 0; i < n; i++) keep.add(new Kept(i));
        for (int i = 0; i < n / 2; i++) keep.add(new int[100]);
        for (int i = 0; i < n; i++) sink += new Dropped(i).y;
    }

    static void allocOnMain(int n) {
        for (int i = 0; i < n / 4; i++) keep.add(new Kept(-i));
    }

    static void warm(int mb) {
        for (int i = 0; i < mb * 1024; i++) sink += new byte[1024].length;
    }

    static void allocOnFreshThread(int n) {
        List<Object> mine = new ArrayList<>(n + n / 2);
        for (int i = 0; i < n; i++) mine.add(new Kept(i));
        for (int i = 0; i < n / 2; i++) mine.add(new int[100]);
        synchronized (keep) {
            keep.addAll(mine);
        }
    }

    static long work60(long x) {
        for (int i = 0; i < 6 * 200_000; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static long work30(long x) {
        for (int i = 0; i < 3 * 200_000; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static long work10(long x) {
        for (int i = 0; i < 200_000; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static void spin(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        long x = 42;
        while (System.nanoTime() < end) {
            x = work60(x);
            x = work30(x);
            x = work10(x);
        }
        sink = x;
    }

    static void work(long rounds) {
        long x = 42;
        for (long i = 0; i < rounds; i++) {
            x = work60(x);
            x = work30(x);
            x = work10(x);
        }
        sink = x;
    }

    static final Lock lock = new Lock();

    static final String[] HOSTILE_NAMES = {
        "say \"hi\" #7 ",
        "#3 ",
        "",
        "two\nlines",
        // The main thread's dump entry, imitated (its ID: 1 up to JDK 24,
        // 3 on JDK 25; filled in by "hostile").
        "x\n\"main\" #%d prio=5 os_prio=0 tid=0x1 nid=0x1 ",
    };
    static final List<Thread> hostile = new ArrayList<>();
    /** Set by "join": the hostile threads stop spinning. */
    static volatile boolean stopHostile;

    static void spinNamed(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        long x = 7;
        while (!stopHostile && System.nanoTime() < end) {
            x = work10(x);
        }
        sink = x;
    }

    /** spinNamed, renaming the thread all the time (as servers name
     *  worker threads after the request they serve). */
    static void spinRenaming(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        long x = 7;
        for (long k = 0; !stopHostile && System.nanoTime() < end; k++) {
            Thread.currentThread().setName("renamed-" + k);
            x = work10(x);
        }
        sink = x;
    }

    static void block(int n) throws Exception {
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(n);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            java.net.ServerSocket server = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
            Thread t = new Thread(() -> {
                try {
                    started.countDown();
                    server.accept();
                } catch (java.io.IOException e) {
                    // end
                }
            }, "attach-target-blocked-" + i);
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        started.await();
        // Inside accept: the thread's stack shows the accept frame.
        for (Thread t : threads) {
            while (!inAccept(t)) Thread.sleep(5);
        }
    }

    static void park(int n) throws Exception {
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            Thread t = new Thread(() -> {
                started.countDown();
                while (true) java.util.concurrent.locks.LockSupport.park();
            }, "attach-target-parked-" + i);
            t.setDaemon(true);
            t.start();
        }
        started.await();
    }

    static boolean inAccept(Thread t) {
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getMethodName().toLowerCase().contains("accept") && e.isNativeMethod()) return true;
        }
        return false;
    }

    public static void main(String[] args) throws Exception {
        Thread worker = new Thread(() -> {
            try {
                while (true) {
                    work.take().run();
                    done.put("ok");
                }
            } catch (InterruptedException e) {
                // end
            }
        }, "attach-target-worker");
        worker.setDaemon(true);
        worker.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "alloc": {
                    int n = Integer.parseInt(w[1]);
                    work.put(() -> allocOnWorker(n));
                    done.take();
                    allocOnMain(n);
                    System.out.println("allocated " + n);
                    break;
                }
                case "warm": {
                    int mb = Integer.parseInt(w[1]);
                    work.put(() -> warm(mb));
                    done.take();
                    warm(mb);
                    System.out.println("warm");
                    break;
                }
                case "fresh": {
                    int n = Integer.parseInt(w[1]);
                    Thread t = new Thread(() -> allocOnFreshThread(n), "attach-target-fresh");
                    t.start();
                    t.join();
                    System.out.println("fresh " + n);
                    break;
                }
                case "spin":
                    spin(Long.parseLong(w[1]));
                    System.out.println("spun");
                    break;
                case "work": {
                    long rounds = Long.parseLong(w[1]);
                    long t0 = System.nanoTime();
                    work(rounds);
                    System.out.println("worked " + (System.nanoTime() - t0));
                    break;
                }
                case "contend": {
                    long ms = Long.parseLong(w[1]);
                    SynchronousQueue<String> holding = new SynchronousQueue<>();
                    work.put(() -> {
                        synchronized (lock) {
                            try {
                                holding.put("held");
                                Thread.sleep(ms);
                                lock.wait(10);
                            } catch (InterruptedException e) {
                                throw new RuntimeException(e);
                            }
                        }
                    });
                    holding.take();
                    synchronized (lock) {
                        sink++;
                    }
                    done.take();
                    System.out.println("contended");
                    break;
                }
                case "block": {
                    int n = Integer.parseInt(w[1]);
                    block(n);
                    System.out.println("blocking " + n);
                    break;
                }
                case "park": {
                    int n = Integer.parseInt(w[1]);
                    park(n);
                    System.out.println("parked " + n);
                    break;
                }
                case "hostile": {
                    long ms = Long.parseLong(w[1]);
                    stopHostile = false;
                    long mainId = Thread.currentThread().getId();
                    for (String name : HOSTILE_NAMES) {
                        Thread t = new Thread(() -> spinNamed(ms), name.replace("%d", Long.toString(mainId)));
                        t.start();
                        hostile.add(t);
                    }
                    Thread r = new Thread(() -> spinRenaming(ms), "renamed-start");
                    r.start();
                    hostile.add(r);
                    System.out.println("hostile " + (HOSTILE_NAMES.length + 1) + " " + mainId);
                    break;
                }
                case "join":
                    stopHostile = true;
                    for (Thread t : hostile) t.join();
                    hostile.clear();
                    System.out.println("joined");
                    break;
                case "count":
                    System.out.println(keep.size());
                    break;
                case "exit":
                    System.out.println("bye");
                    return;
                default:
                    System.out.println("unknown " + line);
            }
            System.out.flush();
        }
        System.out.println("bye");
    }
}
