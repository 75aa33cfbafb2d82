import java.lang.reflect.Array;
import java.nio.file.*;

/**
 * Allocations whose counts are known exactly, for heap=sites tests.
 *
 * Every object escapes (stored in an array or a static field) so the JIT
 * cannot scalar-replace it. Per site (class x allocating method):
 *
 *   AllocSites$Kept       makeKept        1000 allocated, 1000 live
 *   AllocSites$Dropped    makeDropped     2000 allocated,    0 live
 *   int[] (100 elems)     makeInts         500 allocated,  250 live
 *   byte[] (4 MiB)        makeBig            3 allocated,    2 live  (outside any TLAB)
 *   long[] (10 elems)     makeReflective    50 allocated,   50 live  (Array.newInstance)
 *   AllocSites$Cloned     makeClones        40 allocated,   20 live  (Object.clone)
 *   AllocSites$Item       work           4 threads x 5000 allocated, 4 x 100 live
 *
 * Usage: AllocSites [marker-file]. With a marker file it prints "phase1",
 * waits for the file, then drops the Kept objects (so a SIGQUIT report
 * taken while waiting shows them live and the exit report shows them freed).
 */
public class AllocSites {
    static final class Kept { long a; }
    static final class Dropped { int x; }
    static final class Item { int v; Item(int v) { this.v = v; } }
    static final class Cloned implements Cloneable {
        int[] payload = null;
        Cloned copy() throws CloneNotSupportedException { return (Cloned) clone(); }
    }

    static volatile Object sink;
    static Object[] kept;
    static int[][] ints;
    static byte[][] big;
    static Object[] reflective;
    static Cloned[] clones;
    static Item[][] items = new Item[4][];

    static void makeKept() {
        for (int i = 0; i < kept.length; i++) kept[i] = new Kept();
    }

    static void makeDropped() {
        for (int i = 0; i < 2000; i++) sink = new Dropped();
    }

    static void makeInts() {
        for (int i = 0; i < 500; i++) {
            int[] a = new int[100];
            if (i % 2 == 0) ints[i / 2] = a; else sink = a;
        }
    }

    static void makeBig() {
        for (int i = 0; i < 3; i++) {
            byte[] b = new byte[4 * 1024 * 1024];
            if (i < 2) big[i] = b; else sink = b;
        }
    }

    static void makeReflective() {
        for (int i = 0; i < reflective.length; i++) reflective[i] = Array.newInstance(long.class, 10);
    }

    static void makeClones(Cloned proto) throws Exception {
        for (int i = 0; i < 40; i++) {
            Cloned c = proto.copy();
            if (i % 2 == 0) clones[i / 2] = c; else sink = c;
        }
    }

    static void work(int t) {
        Item[] mine = new Item[100];
        for (int i = 0; i < 5000; i++) {
            Item it = new Item(i);
            if (i % 50 == 0) mine[i / 50] = it; else sink = it;
        }
        items[t] = mine;
    }

    public static void main(String[] args) throws Exception {
        kept = new Object[1000];
        ints = new int[250][];
        big = new byte[2][];
        reflective = new Object[50];
        clones = new Cloned[20];
        Cloned proto = new Cloned();

        makeKept();
        makeDropped();
        makeInts();
        makeBig();
        makeReflective();
        makeClones(proto);
        Thread[] ts = new Thread[4];
        for (int t = 0; t < ts.length; t++) {
            final int n = t;
            ts[t] = new Thread(() -> work(n), "worker-" + t);
        }
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        sink = null;

        if (args.length > 0) {
            Path marker = Paths.get(args[0]);
            System.out.println("phase1");
            System.out.flush();
            long limit = System.currentTimeMillis() + 60_000;
            while (!Files.exists(marker) && System.currentTimeMillis() < limit) Thread.sleep(20);
            kept = null;
        }
        System.out.println("done " + (proto.payload == null));
    }
}
