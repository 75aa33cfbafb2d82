import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Workloads that stress a sampler that walks stacks asynchronously, for
 * the given time (default 3 s):
 *
 * <ul>
 * <li>{@code classes}: four threads define CpuStress$Payload again and
 * again in fresh class loaders, run its methods (interpreted, then
 * compiled), drop the loaders and ask for GCs, so classes whose methods
 * are on sampled stacks are unloaded all the time;</li>
 * <li>{@code deopt}: 64 threads call Shape.area() at call sites whose
 * receiver types change: every 100 ms a new subclass is loaded and used
 * (class-hierarchy and type-profile deoptimisation of the compiled
 * callers, while they run);</li>
 * </ul>
 * Usage: CpuStress classes|deopt [seconds]. Prints "done MODE".
 */
public class CpuStress {
    static volatile long sink;

    /** Defined again in each round's class loader. */
    public static class Payload {
        public static long spin(long x, int n) {
            for (int i = 0; i < n; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
            return x;
        }

        public static long mix(long x) {
            long s = 0;
            for (int i = 0; i < 50; i++) s += spin(x + i, 200);
            return s;
        }
    }

    static final class OneClassLoader extends ClassLoader {
        OneClassLoader() { super(null); }
        Class<?> define(String name, byte[] b) { return defineClass(name, b, 0, b.length); }
    }

    static byte[] payloadBytes() throws Exception {
        try (InputStream in = CpuStress.class.getResourceAsStream("CpuStress$Payload.class")) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            return out.toByteArray();
        }
    }

    static void classes(long until) throws Exception {
        byte[] bytes = payloadBytes();
        AtomicInteger rounds = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            Thread th = new Thread(() -> {
                try {
                    long x = 1;
                    while (System.nanoTime() < until) {
                        Class<?> c = new OneClassLoader().define("CpuStress$Payload", bytes);
                        Method mix = c.getMethod("mix", long.class);
                        for (int i = 0; i < 20; i++) x += (Long) mix.invoke(null, x);
                        if (rounds.incrementAndGet() % 50 == 0) System.gc();
                    }
                    sink = x;
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "classes-" + t);
            th.start();
            threads.add(th);
        }
        for (Thread th : threads) th.join();
    }

    abstract static class Shape { abstract long area(long x); }
    static final class S0 extends Shape { long area(long x) { return x * 3 + 1; } }
    static final class S1 extends Shape { long area(long x) { return x ^ (x >>> 7); } }
    static final class S2 extends Shape { long area(long x) { return x * 5 - 3; } }
    static final class S3 extends Shape { long area(long x) { return Long.rotateLeft(x, 9); } }
    static final class S4 extends Shape { long area(long x) { return x + (x << 3); } }
    static final class S5 extends Shape { long area(long x) { return ~x * 11; } }
    static final class S6 extends Shape { long area(long x) { return x / 3 + 17; } }
    static final class S7 extends Shape { long area(long x) { return x * x; } }
    static final class S8 extends Shape { long area(long x) { return Long.reverse(x); } }
    static final class S9 extends Shape { long area(long x) { return x - (x >> 2); } }
    static final class S10 extends Shape { long area(long x) { return x | 0x5555; } }
    static final class S11 extends Shape { long area(long x) { return x & 0xFFFFFF; } }

    static volatile int phase;

    static Shape make(int k) {
        switch (k) {
            case 0: return new S0();
            case 1: return new S1();
            case 2: return new S2();
            case 3: return new S3();
            case 4: return new S4();
            case 5: return new S5();
            case 6: return new S6();
            case 7: return new S7();
            case 8: return new S8();
            case 9: return new S9();
            case 10: return new S10();
            default: return new S11();
        }
    }

    static long run(Shape[] shapes, long x, int n) {
        for (int i = 0; i < n; i++) x += shapes[i % shapes.length].area(x + i);
        return x;
    }

    static void deopt(long until) throws Exception {
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 64; t++) {
            final int id = t;
            Thread th = new Thread(() -> {
                long x = id;
                while (System.nanoTime() < until) {
                    int p = phase;
                    // Mostly the newest type, now and then the others: the
                    // call site's profile keeps changing.
                    Shape[] shapes = new Shape[8];
                    for (int i = 0; i < shapes.length; i++) shapes[i] = make(i == 0 ? (id + p) % (p + 1) : p);
                    x = run(shapes, x, 20_000);
                }
                sink = x;
            }, "deopt-" + t);
            th.start();
            threads.add(th);
        }
        while (System.nanoTime() < until) {
            Thread.sleep(100);
            if (phase < 11) phase++;
        }
        for (Thread th : threads) th.join();
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 3.0;
        long until = System.nanoTime() + (long) (seconds * 1e9);
        if (mode.equals("classes")) {
            classes(until);
        } else if (mode.equals("deopt")) {
            deopt(until);
        } else {
            throw new IllegalArgumentException(mode);
        }
        System.out.println("done " + mode);
    }
}
