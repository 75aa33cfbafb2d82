import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs N virtual threads (default 2000) that each park twice (so they
 * unmount and mount again), next to platform work whose call counts are
 * known: platformWork runs 300 times on the main thread and 200 times on
 * one platform thread. Virtual threads come from Thread.ofVirtual() through
 * reflection, so the fixture compiles with --release 11; on a JDK without
 * them it prints "no virtual threads" and does the platform work only.
 * Usage: VirtualThreads [n]
 */
public class VirtualThreads {
    static volatile long sink;

    static void platformWork(int i) {
        long x = i;
        for (int k = 0; k < 1_000; k++) { x = x * 31 + k; }
        sink = x;
    }

    static void virtualWork(int i) {
        platformWork(i);
        try {
            Thread.sleep(1);
            Thread.sleep(1);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        Thread platform = new Thread(() -> {
            for (int i = 0; i < 200; i++) platformWork(i);
        }, "platform-worker");
        platform.start();
        Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
        } catch (NoSuchMethodException e) {
            ofVirtual = null;
        }
        List<Thread> threads = new ArrayList<>();
        if (ofVirtual != null) {
            Object builder = ofVirtual.invoke(null);
            Method start = Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class);
            for (int i = 0; i < n; i++) {
                final int id = i;
                threads.add((Thread) start.invoke(builder, (Runnable) () -> virtualWork(id)));
            }
        }
        for (int i = 0; i < 300; i++) platformWork(i);
        for (Thread t : threads) t.join();
        platform.join();
        System.out.println(ofVirtual == null ? "no virtual threads" : "virtual threads " + threads.size());
    }
}
