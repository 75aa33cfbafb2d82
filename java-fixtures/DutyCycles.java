import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Two CPU-bound threads with different duty cycles: "duty-high" spins 7 ms
 * then sleeps 3 ms, "duty-low" spins 2 ms then sleeps 8 ms, for the given
 * time. Each measures its own CPU time with ThreadMXBean at its end; main
 * prints "cpu duty-high=<ns> duty-low=<ns>". A CPU sampler's shares of the
 * two threads should follow these CPU times, not their wall time (both run
 * as long). Usage: DutyCycles [seconds] (default 3).
 */
public class DutyCycles {
    static volatile long sink;

    static long spinHigh(long ns) {
        long end = System.nanoTime() + ns;
        long x = 1;
        while (System.nanoTime() < end) { for (int i = 0; i < 1000; i++) { x = x * 31 + i; } }
        return x;
    }

    static long spinLow(long ns) {
        long end = System.nanoTime() + ns;
        long x = 2;
        while (System.nanoTime() < end) { for (int i = 0; i < 1000; i++) { x = x * 37 + i; } }
        return x;
    }

    interface Spin { long run(long ns); }

    static Thread cycle(String name, Spin spin, long busyMs, long idleMs, double seconds, long[] cpu, int slot) {
        return new Thread(() -> {
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            long start = mx.getCurrentThreadCpuTime();
            long end = System.nanoTime() + (long) (seconds * 1e9);
            long x = 0;
            while (System.nanoTime() < end) {
                x += spin.run(busyMs * 1_000_000L);
                try { Thread.sleep(idleMs); } catch (InterruptedException e) { return; }
            }
            sink = x;
            cpu[slot] = mx.getCurrentThreadCpuTime() - start;
        }, name);
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3.0;
        ManagementFactory.getThreadMXBean(); // loaded before the threads start
        long[] cpu = new long[2];
        Thread high = cycle("duty-high", DutyCycles::spinHigh, 7, 3, seconds, cpu, 0);
        Thread low = cycle("duty-low", DutyCycles::spinLow, 2, 8, seconds, cpu, 1);
        high.start();
        low.start();
        high.join();
        low.join();
        System.out.println("cpu duty-high=" + cpu[0] + " duty-low=" + cpu[1]);
    }
}
