/**
 * A hot loop calling two small methods the JIT inlines into it: heavy runs
 * the same step three times as often as light, and the loop itself does
 * almost nothing else. A sampler that walks the stack where the thread
 * runs (with the JIT's debug information at every instruction) puts most
 * samples in heavy and light, about 3:1; one that waits for a safepoint
 * puts them on the loop. Usage: InlinedWork [seconds] (default 3).
 */
public class InlinedWork {
    static volatile long sink;

    static long light(long x) {
        for (int i = 0; i < 64; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static long heavy(long x) {
        for (int i = 0; i < 192; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static long loop(long x, long rounds) {
        for (long r = 0; r < rounds; r++) {
            x = light(x);
            x = heavy(x);
        }
        return x;
    }

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3.0;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long x = 7;
        long calls = 0;
        while (System.nanoTime() < end) {
            x = loop(x, 10_000);
            calls++;
        }
        sink = x;
        System.out.println("loops=" + calls);
    }
}
