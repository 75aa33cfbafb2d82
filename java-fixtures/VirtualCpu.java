import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

/**
 * CPU-bound virtual threads (JDK 21+): N of them (default 8) call hot() in
 * a loop, with Thread.yield() between calls (so they unmount and mount
 * again, on any carrier), for the given time. Virtual threads come from
 * Thread.ofVirtual() through reflection, so the fixture compiles with
 * --release 11; without them it runs the same tasks on platform threads and
 * prints "platform threads N". Usage: VirtualCpu [seconds] [n].
 */
public class VirtualCpu {
    static volatile long sink;

    static long hot(long x, int n) {
        for (int i = 0; i < n; i++) { x = x * 6364136223846793005L + 1442695040888963407L; x ^= (x >>> 29); }
        return x;
    }

    static void task(int id, long until) {
        long x = id;
        while (System.nanoTime() < until) {
            x = hot(x, 100_000);
            Thread.yield();
        }
        sink = x;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 2.0;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        long until = System.nanoTime() + (long) (seconds * 1e9);
        Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
        } catch (NoSuchMethodException e) {
            ofVirtual = null;
        }
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int id = i;
            Runnable r = () -> task(id, until);
            if (ofVirtual != null) {
                Object builder = ofVirtual.invoke(null);
                Method start = Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class);
                threads.add((Thread) start.invoke(builder, r));
            } else {
                Thread t = new Thread(r, "task-" + i);
                t.start();
                threads.add(t);
            }
        }
        for (Thread t : threads) t.join();
        System.out.println((ofVirtual != null ? "virtual threads " : "platform threads ") + n);
    }
}
