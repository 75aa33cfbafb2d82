import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * A hot loop calling two small methods the JIT inlines into it: light
 * follows one link of a random chain through a 32 MiB table, heavy three,
 * so heavy does three times the work of light, and nearly all of it is
 * waiting for loads that miss the caches. The instruction after a load
 * that waited is where the samples land, and after light's load that is
 * the first instruction of heavy's inlined code: a sampler that charges a
 * sample to the scope of the instruction after the program counter gives
 * light's time to heavy, and heavy's last load's time to the loop; one
 * that charges the scope of the instruction that ran gives 3:1.
 *
 * The work is bounded by the thread's CPU time, not wall time, and short
 * random pauses between rounds keep the samples from locking to the
 * loop's period. Usage: InlinedWork [cpu-seconds] (default 3).
 */
public class InlinedWork {
    static volatile long sink;
    static int[] next;

    static int light(int i) {
        return next[i];
    }

    static int heavy(int i) {
        i = next[i];
        i = next[i];
        return next[i];
    }

    static int loop(int i, int rounds) {
        for (int r = 0; r < rounds; r++) {
            i = light(i);
            i = heavy(i);
        }
        return i;
    }

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3.0;
        int n = 1 << 23;
        next = new int[n];
        for (int k = 0; k < n; k++) {
            next[k] = k;
        }
        // Sattolo's shuffle: one cycle through the whole table.
        SplittableRandom rnd = new SplittableRandom(42);
        for (int k = n - 1; k > 0; k--) {
            int j = rnd.nextInt(k);
            int t = next[k];
            next[k] = next[j];
            next[j] = t;
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long end = mx.getCurrentThreadCpuTime() + (long) (seconds * 1e9);
        int i = 0;
        long rounds = 0;
        while (mx.getCurrentThreadCpuTime() < end) {
            i = loop(i, 20_000);
            rounds++;
            LockSupport.parkNanos(rnd.nextInt(50_000));
        }
        sink = i;
        System.out.println("loops=" + rounds);
    }
}
