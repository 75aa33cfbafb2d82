import java.nio.file.*;
import java.util.*;
import java.util.concurrent.*;

/**
 * Many threads allocate and drop objects while each keeps a few: T threads
 * each allocate N ChurnDropped (dropped at once, one byte[] of 64 each) and
 * keep K ChurnKept until the end of main. Exact truth at the end: T*K live
 * ChurnKept, no live ChurnDropped, T*N ChurnDropped and T*N byte[64]
 * allocated in dropOne.
 * Usage: Churn T N K [marker-file]: with a marker, prints "ready" and waits
 * for the file to appear before returning (the kept objects stay live).
 */
public class Churn {
    static final List<ChurnKept> KEPT = Collections.synchronizedList(new ArrayList<>());
    static volatile Object sink;

    static void dropOne(int i) {
        ChurnDropped d = new ChurnDropped(new byte[64], i);
        sink = d;
    }

    static void keepOne(int i) {
        KEPT.add(new ChurnKept(i));
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int perThread = Integer.parseInt(args[1]);
        int keep = Integer.parseInt(args[2]);
        CountDownLatch start = new CountDownLatch(1);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < perThread; i++) {
                    dropOne(i);
                    if (i < keep) {
                        keepOne(i);
                    }
                }
            }, "churn-" + t);
            ts[t].start();
        }
        start.countDown();
        for (Thread t : ts) {
            t.join();
        }
        sink = null;
        if (args.length > 3) {
            Path marker = Paths.get(args[3]);
            System.out.println("ready");
            System.out.flush();
            while (!Files.exists(marker)) {
                Thread.sleep(20);
            }
        }
        System.out.println("kept " + KEPT.size());
    }
}

class ChurnDropped {
    final byte[] data;
    final int n;

    ChurnDropped(byte[] data, int n) {
        this.data = data;
        this.n = n;
    }
}

class ChurnKept {
    final int n;

    ChurnKept(int n) {
        this.n = n;
    }
}
