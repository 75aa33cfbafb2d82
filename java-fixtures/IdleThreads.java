import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

/**
 * Many idle threads beside one CPU-bound worker doing a fixed amount of
 * work (bench/cpu_samples.py): READERS threads blocked in a native socket
 * read that never gets data (RUNNABLE to the JVM), PARKED threads parked,
 * then a worker running ROUNDS rounds of CpuSplit.work60, work30 and
 * work10 (60/30/10 of its CPU time). A profiler whose per-tick cost
 * grows with the threads that exist shows up in the process's CPU time.
 * Usage: IdleThreads READERS PARKED ROUNDS [hold]. Prints "rounds=N
 * threads=M". With "hold" (for a test that looks at the process between
 * the phases): prints "started M" once the idle threads run and waits for
 * a line on standard input before the worker starts, then prints "ended"
 * once the idle threads have ended and waits for the end of standard input
 * before it exits.
 */
public class IdleThreads {
    static volatile long sink;
    static volatile boolean done;

    public static void main(String[] args) throws Exception {
        int readers = Integer.parseInt(args[0]);
        int parked = Integer.parseInt(args[1]);
        long rounds = Long.parseLong(args[2]);
        boolean hold = args.length > 3 && args[3].equals("hold");
        BufferedReader stdin = hold ? new BufferedReader(new InputStreamReader(System.in)) : null;
        InetAddress lo = InetAddress.getLoopbackAddress();
        List<Thread> idle = new ArrayList<>();
        List<AutoCloseable> closeAtEnd = new ArrayList<>();
        CountDownLatch started = new CountDownLatch(readers + parked);
        try (ServerSocket server = new ServerSocket(0, readers + 1, lo)) {
            for (int i = 0; i < readers; i++) {
                Socket c = new Socket(lo, server.getLocalPort());
                closeAtEnd.add(c);
                closeAtEnd.add(server.accept());
                Thread t = new Thread(() -> {
                    started.countDown();
                    try (InputStream in = c.getInputStream()) {
                        in.read();
                    } catch (Exception e) {
                        // closed at the end
                    }
                }, "read-" + i);
                t.setDaemon(true);
                idle.add(t);
            }
        }
        for (int i = 0; i < parked; i++) {
            Thread t = new Thread(() -> {
                started.countDown();
                while (!done) LockSupport.park();
            }, "park-" + i);
            t.setDaemon(true);
            idle.add(t);
        }
        for (Thread t : idle) t.start();
        started.await();
        if (hold) {
            System.out.println("started " + idle.size());
            System.out.flush();
            stdin.readLine();
        }

        long[] n = new long[1];
        Thread worker = new Thread(() -> {
            long x = 42;
            while (n[0] < rounds) {
                x = CpuSplit.work60(x);
                x = CpuSplit.work30(x);
                x = CpuSplit.work10(x);
                n[0]++;
            }
            sink = x;
        }, "worker");
        worker.start();
        worker.join();

        done = true;
        for (AutoCloseable c : closeAtEnd) c.close();
        for (Thread t : idle) LockSupport.unpark(t);
        for (Thread t : idle) t.join();
        if (hold) {
            System.out.println("ended");
            System.out.flush();
            while (stdin.readLine() != null) {
                // until the test closes it
            }
        }
        System.out.println("rounds=" + n[0] + " threads=" + idle.size());
    }
}
