import sun.misc.Signal;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A program that takes SIGPROF for itself while it runs (as a profiler
 * loaded later, or JFR's CPU-time sampler, would): CPU-bound work, then
 * its own SIGPROF handler (sun.misc.Signal), then more work. Prints how
 * many SIGPROFs its handler got shortly after installing it ("early=") and
 * at the end ("late="): once an agent that used SIGPROF has let go, the
 * count stops growing. Usage: SigprofTaker [seconds per phase] (default 1).
 */
public class SigprofTaker {
    static volatile long sink;

    static long spin(double seconds) {
        long x = 42;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < end) {
            for (int i = 0; i < 100_000; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 1.0;
        sink = spin(seconds);
        AtomicLong got = new AtomicLong();
        try {
            Signal.handle(new Signal("PROF"), s -> got.incrementAndGet());
        } catch (IllegalArgumentException e) {
            System.out.println("refused: " + e.getMessage());
            return;
        }
        sink = spin(0.5);
        long early = got.get();
        sink = spin(seconds);
        Thread.sleep(200);
        System.out.println("early=" + early + " late=" + got.get());
    }
}
