package java.lang;

/**
 * The Tracker class of hprof-rs cpu=times and cpu=old (docs/cpu-times.md).
 *
 * <p>The agent defines this class in the boot class loader at VM init; the
 * byte code it injects calls {@link #CallSite} at the entry of every
 * instrumented method and {@link #ReturnSite} before each of its returns.
 * An event is appended, with the agent's clock, to a buffer of the calling
 * thread, so the common path makes no JNI call. The agent is called (the
 * {@code sync*} natives, which first take the buffered events) when the
 * buffer is full, and when it must look at the real stack while the frame
 * is live: the first call of a method it has not resolved yet, a return
 * with no call left on the agent's shadow stack, a thread's first event.
 * (A return with calls left needs no check: its method's call was seen.)
 *
 * <p>This class must call no instrumented method (that would recurse): it
 * uses only native methods (its own, and Unsafe's native memory read),
 * field and array accesses. Its fields are written by the agent through
 * JNI.
 *
 * <p>Compiled with {@code scripts/build-tracker.sh}; the class file is
 * committed beside this source and embedded in the agent.
 */
public final class HprofTracker {
    private HprofTracker() {
    }

    /** Non-zero while the agent is timing. */
    private static int engaged;

    /**
     * Reads the threads' clocks, which live in the agent's memory (a
     * thread's CPU clock, advanced by its CPU-time timer's signal handler,
     * or the agent's wall clock): getLongVolatile is a native intrinsic,
     * one load once compiled. Unsafe of java.base: this class is in
     * java.base (java.lang, boot loader).
     */
    private static final jdk.internal.misc.Unsafe U = jdk.internal.misc.Unsafe.getUnsafe();

    /**
     * The threads' buffers, open addressing on the thread's identity hash
     * (linear probing): [2i] the owner Thread, or a tombstone, [2i+1] its
     * buffer. Only the agent writes it, replacing it whole when it grows; a
     * stale copy only sends a thread to the slow path.
     */
    private static Object[] threads;

    /** Per class number, a bit per method number the agent has resolved. */
    private static long[][] known;

    /**
     * Classes whose thread instances are not timed: virtual threads and
     * their carriers (JDK 19+). Their mount and unmount transitions run
     * instrumented code on the carrier, and a JVMTI stack query from inside
     * a transition waits for that transition to end, so it never returns.
     * Events of such threads are dropped here, before any native call.
     */
    private static Class<?>[] untimed;

    /*
     * A buffer: [0] index of its next free slot, [1] the depth of the
     * thread's shadow stack as the agent last left it, plus calls minus
     * returns appended since, [2] the address of the thread's clock (a
     * nanosecond count in the agent's memory, valid for the life of the
     * process); then (event, time) pairs, event =
     * (class number << 32 | method number) << 1, | 1 for a return.
     */

    public static void CallSite(int cnum, int mnum) {
        if (engaged == 0) {
            return;
        }
        Thread t = Thread.currentThread();
        long[] b = buffer(t);
        int n;
        if (b == null || (n = (int) b[0]) > b.length - 2 || !isKnown(cnum, mnum)) {
            if (b == null && isUntimed(t)) {
                return;
            }
            syncCall(t, cnum, mnum);
            return;
        }
        b[n] = (((long) cnum << 32) | mnum) << 1;
        b[n + 1] = U.getLongVolatile(null, b[2]);
        b[1]++;
        b[0] = n + 2;
    }

    public static void ReturnSite(int cnum, int mnum) {
        if (engaged == 0) {
            return;
        }
        Thread t = Thread.currentThread();
        long[] b = buffer(t);
        int n;
        if (b == null || (n = (int) b[0]) > b.length - 2 || b[1] <= 0) {
            if (b == null && isUntimed(t)) {
                return;
            }
            syncReturn(t, cnum, mnum);
            return;
        }
        b[n] = ((((long) cnum << 32) | mnum) << 1) | 1;
        b[n + 1] = U.getLongVolatile(null, b[2]);
        b[1]--;
        b[0] = n + 2;
    }

    private static long[] buffer(Thread t) {
        Object[] tab = threads;
        if (tab == null) {
            return null;
        }
        int mask = (tab.length >> 1) - 1;
        int i = System.identityHashCode(t) & mask;
        // The first probe inline, the rest out of line: this code is
        // inlined at every instrumented entry and return, so its size
        // weighs on the JIT (compile time, inlining budget).
        if (tab[2 * i] == t) {
            return (long[]) tab[2 * i + 1];
        }
        return probe(tab, t, i, mask);
    }

    private static long[] probe(Object[] tab, Thread t, int i, int mask) {
        for (int probes = 0; probes <= mask; probes++) {
            Object o = tab[2 * i];
            if (o == t) {
                return (long[]) tab[2 * i + 1];
            }
            if (o == null) {
                return null;
            }
            i = (i + 1) & mask;
        }
        return null;
    }

    private static boolean isUntimed(Thread t) {
        Class<?>[] u = untimed;
        if (u == null) {
            return false;
        }
        for (int i = 0; i < u.length; i++) {
            if (u[i].isInstance(t)) {
                return true;
            }
        }
        return false;
    }

    private static boolean isKnown(int cnum, int mnum) {
        long[][] k = known;
        if (k == null || cnum >= k.length) {
            return false;
        }
        long[] bits = k[cnum];
        int w = mnum >>> 6;
        return bits != null && w < bits.length && (bits[w] & (1L << mnum)) != 0;
    }

    /** A call the agent handles now, after the buffered events. */
    private static native void syncCall(Thread thread, int cnum, int mnum);

    /** A return the agent handles now, after the buffered events. */
    private static native void syncReturn(Thread thread, int cnum, int mnum);
}
