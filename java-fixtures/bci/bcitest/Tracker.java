package bcitest;

import java.util.Map;
import java.util.TreeMap;

/**
 * Test stand-in for HPROF's Tracker class: the four entry points the
 * rewriter injects (same names and descriptors as the agent's Tracker),
 * counting calls instead of calling natives. A shutdown hook prints
 *   SITE cnum mnum calls returns
 *   NEWARRAY count
 *   OBJECTINIT count
 * so the test can compare against exactly known counts.
 */
public class Tracker {
    private static final Map<Long, long[]> sites = new TreeMap<>();
    private static long newArrays;
    private static long objectInits;

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Tracker::dump));
    }

    private static synchronized long[] site(int cnum, int mnum) {
        return sites.computeIfAbsent(((long) cnum << 32) | (mnum & 0xFFFFFFFFL), k -> new long[2]);
    }

    public static void CallSite(int cnum, int mnum) {
        synchronized (Tracker.class) {
            site(cnum, mnum)[0]++;
        }
    }

    public static void ReturnSite(int cnum, int mnum) {
        synchronized (Tracker.class) {
            site(cnum, mnum)[1]++;
        }
    }

    public static void NewArray(Object o) {
        if (!o.getClass().isArray()) {
            throw new AssertionError("NewArray got a non-array " + o);
        }
        synchronized (Tracker.class) {
            newArrays++;
        }
    }

    public static void ObjectInit(Object o) {
        synchronized (Tracker.class) {
            objectInits++;
        }
    }

    private static synchronized void dump() {
        for (Map.Entry<Long, long[]> e : sites.entrySet()) {
            long k = e.getKey();
            System.out.println("SITE " + (int) (k >>> 32) + " " + (int) k + " " + e.getValue()[0] + " " + e.getValue()[1]);
        }
        System.out.println("NEWARRAY " + newArrays);
        System.out.println("OBJECTINIT " + objectInits);
        System.out.flush();
    }
}
