/**
 * CPU-bound fixture with a known split of time between three methods:
 * work60, work30 and work10 run the same loop body 6, 3 and 1 times as
 * often, so a sampling profiler should attribute about 60%, 30% and 10%
 * of the samples to them. A round takes a few milliseconds of CPU, always
 * the same: work that repeats with a fixed period, which a sampler with a
 * fixed period (or one bound to the kernel's tick) sees at the same few
 * places only. Usage: CpuSplit [seconds] [rounds] (default 3 seconds; with
 * rounds, that many rounds whatever the time).
 */
public class CpuSplit {
    static final int UNIT = 200_000;
    static volatile long sink;

    static long work60(long x) {
        for (int i = 0; i < 6 * UNIT; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static long work30(long x) {
        for (int i = 0; i < 3 * UNIT; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static long work10(long x) {
        for (int i = 0; i < UNIT; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3.0;
        long rounds = args.length > 1 ? Long.parseLong(args[1]) : -1;
        long x = 42;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long done = 0;
        while (rounds < 0 ? System.nanoTime() < end : done < rounds) {
            x = work60(x);
            x = work30(x);
            x = work10(x);
            done++;
        }
        sink = x;
        System.out.println("rounds=" + done);
    }
}
