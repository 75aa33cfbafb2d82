import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads classes without pause while heap dumps are taken, so some classes
 * are loaded, linked or get their first array class between the moment a
 * dump describes the loaded classes and the moment it walks the heap.
 * Four threads load p.B0..p.B(n-1) (each with its superclass p.A<i> and
 * interfaces p.I<i>, p.J<i>, written by the test with values derived from
 * i) through a fresh class loader per round, create one instance and one
 * p.B<i>[] per class, and keep the last few rounds reachable.
 * Usage: ClassStorm <lib-dir> <class-count> <marker-file> [max-seconds].
 * Prints "ready" once every thread has loaded its first round.
 */
public class ClassStorm {
    static final List<Object> KEPT = new ArrayList<>();
    static volatile boolean stop;

    public static void main(String[] args) throws Exception {
        URL lib = new File(args[0]).toURI().toURL();
        int n = Integer.parseInt(args[1]);
        Path marker = Paths.get(args[2]);
        long limit = System.currentTimeMillis() + 1000L * (args.length > 3 ? Long.parseLong(args[3]) : 60);
        Thread[] threads = new Thread[4];
        java.util.concurrent.CountDownLatch first = new java.util.concurrent.CountDownLatch(threads.length);
        for (int t = 0; t < threads.length; t++) {
            threads[t] = new Thread(() -> {
                try {
                    while (!stop) {
                        List<Object> round = new ArrayList<>();
                        try (URLClassLoader loader = new URLClassLoader(new URL[] {lib}, null)) {
                            for (int i = 0; i < n; i++) {
                                Class<?> c = loader.loadClass("p.B" + i);
                                Object o = c.getDeclaredConstructor().newInstance();
                                Object[] arr = (Object[]) java.lang.reflect.Array.newInstance(c, 2);
                                arr[0] = o;
                                round.add(arr);
                            }
                        }
                        synchronized (KEPT) {
                            KEPT.add(round);
                            if (KEPT.size() > 8) {
                                KEPT.remove(0);
                            }
                        }
                        first.countDown();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, "storm-" + t);
            threads[t].start();
        }
        first.await();
        System.out.println("ready");
        System.out.flush();
        while (!Files.exists(marker) && System.currentTimeMillis() < limit) {
            Thread.sleep(20);
        }
        stop = true;
        for (Thread t : threads) {
            t.join();
        }
        System.out.println("done");
    }
}
