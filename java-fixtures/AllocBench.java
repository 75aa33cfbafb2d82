/**
 * Allocation-heavy, multi-threaded workload for bench/alloc_sites.py: each
 * thread builds short-lived objects and arrays a few calls deep, keeping
 * one in 64 in a ring so the heap has a live set and GCs have work.
 * Usage: AllocBench <threads> <thousands of allocation rounds per thread>.
 */
public class AllocBench {
    static final class Node {
        final int key;
        final Object value;
        Node next;
        Node(int key, Object value) { this.key = key; this.value = value; }
    }

    static volatile Object sink;

    static Object leaf(int i) {
        switch (i & 3) {
            case 0: return new Node(i, null);
            case 1: return new int[4 + (i & 15)];
            case 2: return new byte[32];
            default: return Integer.toString(i);
        }
    }

    static Object middle(int i) {
        Node n = new Node(i, leaf(i));
        n.next = new Node(i + 1, leaf(i + 1));
        return n;
    }

    static long run(int rounds) {
        Object[] ring = new Object[4096];
        long sum = 0;
        for (int i = 0; i < rounds; i++) {
            Object o = middle(i);
            if ((i & 63) == 0) ring[(i >>> 6) & 4095] = o;
            sink = o;
            sum += ((Node) o).key;
        }
        return sum;
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]) * 1000;
        Thread[] ts = new Thread[threads];
        long[] sums = new long[threads];
        for (int t = 0; t < threads; t++) {
            final int n = t;
            ts[t] = new Thread(() -> sums[n] = run(rounds), "alloc-" + t);
        }
        for (Thread t : ts) t.start();
        for (Thread t : ts) t.join();
        long s = 0;
        for (long x : sums) s += x;
        System.out.println("sum " + s);
    }
}
