/**
 * Starts three named threads in a named thread group, each spinning on a
 * distinct method for a while, and joins them. Tests check THREAD START /
 * END records (names, group, parent group) and per-thread traces.
 */
public class NamedThreads {
    static volatile long sink;

    static void spinAlpha(long ms) { long end = System.currentTimeMillis() + ms; long x = 1; while (System.currentTimeMillis() < end) { x = x * 31 + 7; } sink = x; }
    static void spinBeta(long ms) { long end = System.currentTimeMillis() + ms; long x = 2; while (System.currentTimeMillis() < end) { x = x * 37 + 3; } sink = x; }
    static void spinGamma(long ms) { long end = System.currentTimeMillis() + ms; long x = 3; while (System.currentTimeMillis() < end) { x = x * 41 + 5; } sink = x; }

    public static void main(String[] args) throws Exception {
        long ms = args.length > 0 ? Long.parseLong(args[0]) : 600;
        ThreadGroup g = new ThreadGroup("workers");
        Thread a = new Thread(g, () -> spinAlpha(ms), "worker-alpha");
        Thread b = new Thread(g, () -> spinBeta(ms), "worker-beta");
        Thread c = new Thread(g, () -> spinGamma(ms), "worker-gamma");
        a.start(); b.start(); c.start();
        a.join(); b.join(); c.join();
        System.out.println("joined");
    }
}
