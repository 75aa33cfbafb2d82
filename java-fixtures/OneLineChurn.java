import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Many threads allocating at one line: T threads each allocate N byte[256]
 * in a loop written on one line and drop them, then keep K int[16] each.
 * Exact truth: T*N byte[256] allocated at churn's line, none live; T*K
 * int[16] allocated and live at keep's line; nothing else at either line.
 *
 * The loop's back branch is on the allocation's line, and the class's
 * string constants are first used after the threads end: when the loop
 * becomes hot, the thread that asks for its compilation resolves those
 * constants (the JIT does so before compiling, on the asking thread, at
 * the back branch), making Strings and their byte[] that stay live at
 * that line although it allocates no String.
 *
 * The list that keeps the int[16] is sized before the threads start, so
 * the threads allocate nothing larger than a byte[256]: on JDK 11 an
 * object that does not fit the rest of a thread's TLAB (the list's array
 * growing) leaves the VM's allocation sampler off for the rest of that
 * TLAB (docs/alloc_sites.md, "JDK 11"), and the int[16] that follow would
 * go unreported (6 347 of 6 400 in one CI run).
 * Usage: OneLineChurn T N K
 */
public class OneLineChurn {
    static volatile Object sink;
    static List<int[]> KEPT;

    static void churn(int n) {
        for (int i = 0; i < n; i++) sink = new byte[256];
    }

    static void keep(int k) {
        for (int i = 0; i < k; i++) KEPT.add(new int[16]);
    }

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int n = Integer.parseInt(args[1]);
        int k = Integer.parseInt(args[2]);
        KEPT = Collections.synchronizedList(new ArrayList<>(threads * k));
        CountDownLatch start = new CountDownLatch(1);
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            ts[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                churn(n);
                keep(k);
            });
            ts[t].start();
        }
        start.countDown();
        for (Thread t : ts) {
            t.join();
        }
        sink = null;
        System.out.println("kept " + KEPT.size() + " arrays; a one-line churn is done");
    }
}
