import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * Calls through an interface with four receiver classes (megamorphic: the
 * JIT calls them through the itable stub and inlines none) to methods so
 * small that most of their code is the frame's set-up and take-down. Most
 * CPU samples therefore land where HotSpot's AsyncGetCallTrace cannot walk
 * the stack: in the stub, which has no frame of its own, or in a callee
 * before its frame is built or after it is taken down.
 *
 * The work is bounded by the thread's CPU time; short random pauses keep
 * the samples from locking to the loop's period. Usage: StubCalls
 * [cpu-seconds] (default 3).
 */
public class StubCalls {
    interface Step {
        long apply(long x);
    }

    static final class Mul implements Step {
        public long apply(long x) {
            return x * 0x9E3779B97F4A7C15L + 1;
        }
    }

    static final class MixA implements Step {
        public long apply(long x) {
            return (x ^ (x >>> 31)) * 0xBF58476D1CE4E5B9L;
        }
    }

    static final class MixB implements Step {
        public long apply(long x) {
            return (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        }
    }

    static final class Add implements Step {
        public long apply(long x) {
            return x + 0x632BE59BD9B4E019L;
        }
    }

    static volatile long sink;

    static long loop(Step[] steps, long x, int rounds) {
        for (int r = 0; r < rounds; r++) {
            for (Step s : steps) {
                x = s.apply(x);
            }
        }
        return x;
    }

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3.0;
        Step[] steps = {new Mul(), new MixA(), new MixB(), new Add()};
        SplittableRandom rnd = new SplittableRandom(42);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long end = mx.getCurrentThreadCpuTime() + (long) (seconds * 1e9);
        long x = 1;
        while (mx.getCurrentThreadCpuTime() < end) {
            x = loop(steps, x, 20_000);
            LockSupport.parkNanos(rnd.nextInt(50_000));
        }
        sink = x;
        System.out.println("done");
    }
}
