import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * Threads that mostly wait beside one that computes, for cpu=times: four
 * threads spend the run in timed waits, each in its own method, called
 * again and again (waitOnce: Object.wait; parkOnce: LockSupport.parkNanos;
 * sleepOnce: Thread.sleep; readOnce: a socket read that times out), while
 * "compute" calls compute() (about 1 ms of CPU per call) with short sleeps
 * between calls. Charged with CPU time, compute() dominates; with wall
 * time the waiting methods do. Usage: MostlyWaiting [seconds] (default 2):
 * 330 calls per second asked, about that long on an idle machine.
 */
public class MostlyWaiting {
    static volatile long sink;
    static volatile boolean done;
    static final Object lock = new Object();

    static long compute(long x) {
        for (int i = 0; i < 400_000; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static void waitOnce() throws InterruptedException {
        synchronized (lock) { lock.wait(20); }
    }

    static void parkOnce() {
        LockSupport.parkNanos(20_000_000L);
    }

    static void sleepOnce() throws InterruptedException {
        Thread.sleep(20);
    }

    static void readOnce(InputStream in) throws Exception {
        try {
            in.read();
        } catch (SocketTimeoutException e) {
            // expected: nobody writes
        }
    }

    interface Step { void run() throws Exception; }

    static Thread loop(String name, Step step) {
        return new Thread(() -> {
            try {
                while (!done) step.run();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, name);
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 2.0;
        InetAddress lo = InetAddress.getLoopbackAddress();
        ServerSocket server = new ServerSocket(0, 50, lo);
        Socket client = new Socket(lo, server.getLocalPort());
        Socket peer = server.accept();
        client.setSoTimeout(20);
        InputStream in = client.getInputStream();
        Thread[] waiters = {
            loop("waiter", MostlyWaiting::waitOnce),
            loop("parker", MostlyWaiting::parkOnce),
            loop("sleeper", MostlyWaiting::sleepOnce),
            loop("reader", () -> readOnce(in)),
        };
        for (Thread t : waiters) t.start();
        long[] calls = new long[1];
        // A fixed amount of work (about `seconds` of run on an idle machine),
        // not a wall-clock deadline: on a busy machine a deadline gave the
        // thread less CPU while start-up's CPU stayed the same, so its share
        // of CPU time fell below what the test checks (0.38 seen).
        long target = (long) (seconds * 330);
        Thread compute = new Thread(() -> {
            long x = 1;
            while (calls[0] < target) {
                x = compute(x);
                calls[0]++;
                try { Thread.sleep(2); } catch (InterruptedException e) { return; }
            }
            sink = x;
        }, "compute");
        compute.start();
        compute.join();
        done = true;
        for (Thread t : waiters) t.join();
        client.close();
        peer.close();
        server.close();
        System.out.println("compute calls=" + calls[0]);
    }
}
