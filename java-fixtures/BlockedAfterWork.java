import java.nio.file.*;

/**
 * Calls step() a known number of times on two threads, then keeps both
 * idle so a test can take a dump while no thread hands events to the
 * agent: the worker spins on a volatile flag (a loop with no calls, so its
 * last calls stay in its Tracker buffer), main polls for a marker file.
 * The dump must still count every completed call (300 on main, 200 on the
 * worker). Usage: BlockedAfterWork <marker-file>. Prints "ready" once the
 * worker is idle.
 */
public class BlockedAfterWork {
    static volatile long sink;
    static volatile boolean worked;
    static volatile boolean go;

    static void step(int i) {
        sink += i;
    }

    public static void main(String[] args) throws Exception {
        Path marker = Paths.get(args[0]);
        Thread worker = new Thread(() -> {
            for (int i = 0; i < 200; i++) {
                step(i);
            }
            worked = true;
            while (!go) {
                // no calls: nothing reaches the agent until go
            }
        }, "worker");
        worker.start();
        for (int i = 0; i < 300; i++) {
            step(i);
        }
        while (!worked) {
            // wait without calls
        }
        System.out.println("ready");
        System.out.flush();
        long limit = System.currentTimeMillis() + 60_000;
        while (!Files.exists(marker) && System.currentTimeMillis() < limit) {
            Thread.sleep(20);
        }
        go = true;
        worker.join();
        System.out.println("done");
    }
}
