import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * One CPU-bound worker with a known split of its CPU time (CpuSplit.work60,
 * work30, work10: the same loop 6, 3 and 1 times per round)
 * among threads that use no CPU: two blocked in ServerSocket.accept, two
 * blocked in a socket read that never gets data (native calls: RUNNABLE to
 * the JVM), three parked, one in Object.wait, one sleeping. A sampler that
 * charges CPU gives the worker's methods nearly every sample.
 * Usage: OnCpuAmongBlocked [seconds] [rounds] (default 3 seconds; with
 * rounds, the worker runs that many rounds whatever the time). Prints
 * "rounds=N".
 */
public class OnCpuAmongBlocked {
    static volatile long sink;
    static volatile boolean done;
    static final Object lock = new Object();

    static void acceptForever(ServerSocket s) {
        try {
            s.accept();
        } catch (Exception e) {
            // closed at the end
        }
    }

    static void readForever(Socket s) {
        try (InputStream in = s.getInputStream()) {
            in.read();
        } catch (Exception e) {
            // closed at the end
        }
    }

    static void parkForever() {
        while (!done) LockSupport.park();
    }

    static void waitForever() {
        synchronized (lock) {
            while (!done) {
                try { lock.wait(); } catch (InterruptedException e) { return; }
            }
        }
    }

    static void sleepForever() {
        while (!done) {
            try { Thread.sleep(50); } catch (InterruptedException e) { return; }
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3.0;
        long fixedRounds = args.length > 1 ? Long.parseLong(args[1]) : -1;
        InetAddress lo = InetAddress.getLoopbackAddress();
        List<Thread> idle = new ArrayList<>();
        List<AutoCloseable> closeAtEnd = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            ServerSocket s = new ServerSocket(0, 50, lo);
            closeAtEnd.add(s);
            idle.add(new Thread(() -> acceptForever(s), "accept-" + i));
        }
        ServerSocket peerServer = new ServerSocket(0, 50, lo);
        closeAtEnd.add(peerServer);
        for (int i = 0; i < 2; i++) {
            Socket c = new Socket(lo, peerServer.getLocalPort());
            Socket peer = peerServer.accept();
            closeAtEnd.add(c);
            closeAtEnd.add(peer);
            idle.add(new Thread(() -> readForever(c), "read-" + i));
        }
        for (int i = 0; i < 3; i++) idle.add(new Thread(OnCpuAmongBlocked::parkForever, "park-" + i));
        idle.add(new Thread(OnCpuAmongBlocked::waitForever, "wait-0"));
        idle.add(new Thread(OnCpuAmongBlocked::sleepForever, "sleep-0"));
        for (Thread t : idle) t.start();

        long[] rounds = new long[1];
        Thread worker = new Thread(() -> {
            long x = 42;
            // Rounds of fixed work (a few ms each): a sampler whose period
            // is fixed, or bound to the kernel's tick, sees such a loop at
            // the same few places of its round (docs/cpu-samples.md).
            long end = System.nanoTime() + (long) (seconds * 1e9);
            while (fixedRounds < 0 ? System.nanoTime() < end : rounds[0] < fixedRounds) {
                x = CpuSplit.work60(x);
                x = CpuSplit.work30(x);
                x = CpuSplit.work10(x);
                rounds[0]++;
            }
            sink = x;
        }, "worker");
        worker.start();
        worker.join();

        done = true;
        for (AutoCloseable c : closeAtEnd) c.close();
        for (Thread t : idle) LockSupport.unpark(t);
        synchronized (lock) { lock.notifyAll(); }
        for (Thread t : idle) t.join();
        System.out.println("rounds=" + rounds[0]);
    }
}
