import java.lang.ref.SoftReference;
import java.lang.ref.WeakReference;
import java.nio.file.*;

/**
 * Object graphs of known shape for the heap analyser's tests
 * (crates/hprof-e2e/tests/heap_analyser.rs). Usage: HeapShapes <marker-file> [max-seconds].
 * Builds the graphs, prints "ready" and the identity hash codes nobody
 * needs, waits for the marker file, then exits (everything stays reachable
 * from the statics until then).
 *
 * - exclusive ownership: one Owner holds a Leaf[10], each Leaf its own
 *   byte[1000] (Owner retains all 21 objects below it);
 * - sharing: holderA and holderB both hold the one Shared (and its
 *   long[100]): neither retains it;
 * - a linked list of 200 000 Nodes (each dominates the rest of the list);
 * - a cycle of three Cycs, each with an int[10];
 * - one Kept held by a static and by a WeakReference; another Kept held
 *   only by a SoftReference (softly reachable: survives a full GC);
 * - statics of every type (HeapShapes$Statics), strings in Latin-1 and in
 *   UTF-16.
 */
public class HeapShapes {
    static class Leaf {
        byte[] payload = new byte[1000];
    }

    static class Owner {
        Leaf[] leaves = new Leaf[10];
    }

    static class Holder {
        Object held;
    }

    static class Shared {
        long[] data = new long[100];
    }

    static class Node {
        Node next;
        int value;
    }

    static class Cyc {
        Cyc next;
        int[] data = new int[10];
    }

    static class Kept {
        int[] data = new int[50];
    }

    static class Statics {
        static boolean z = true;
        static byte b = -7;
        static char c = 'Q';
        static short s = -1234;
        static int i = 123456789;
        static long l = -9876543210L;
        static float f = 1.5f;
        static double d = -2.25;
        static Object nothing;
        static String text = "statics";
    }

    static Owner owner;
    static Holder holderA, holderB;
    static Node list;
    static Cyc cycle;
    static Kept strongly;
    static WeakReference<Kept> weakly;
    static SoftReference<Kept> softOnly;
    static String latin = "hello, heap";
    static String utf16 = "h\u00e9llo \u2713";

    static Owner makeOwner() {
        Owner o = new Owner();
        for (int i = 0; i < o.leaves.length; i++) {
            o.leaves[i] = new Leaf();
        }
        return o;
    }

    static Node makeList(int n) {
        Node head = null;
        for (int i = n - 1; i >= 0; i--) {
            Node x = new Node();
            x.value = i;
            x.next = head;
            head = x;
        }
        return head;
    }

    /** Builds everything in a frame that returns: no local of main's
     * (a Java-frame GC root) holds any of it. */
    static void build() {
        owner = makeOwner();
        Shared shared = new Shared();
        holderA = new Holder();
        holderB = new Holder();
        holderA.held = shared;
        holderB.held = shared;
        list = makeList(200_000);
        Cyc a = new Cyc(), b = new Cyc(), c = new Cyc();
        a.next = b;
        b.next = c;
        c.next = a;
        cycle = a;
        strongly = new Kept();
        weakly = new WeakReference<>(strongly);
        softOnly = new SoftReference<>(new Kept());
    }

    public static void main(String[] args) throws Exception {
        build();
        System.out.println("ready " + Statics.i + " " + Statics.text.length());
        System.out.flush();
        Path marker = Paths.get(args[0]);
        long limit = args.length > 1 ? Long.parseLong(args[1]) * 1000 : 120_000;
        long start = System.currentTimeMillis();
        while (!Files.exists(marker) && System.currentTimeMillis() - start < limit) {
            Thread.sleep(20);
        }
        System.out.println("done " + (softOnly.get() != null));
    }
}
