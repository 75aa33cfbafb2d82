/**
 * Starts and joins N short-lived threads (default 1000), 8 at a time, each
 * doing a little work, while the main thread spins. Stresses thread start /
 * end handling under sampling: exactly N worker threads must be announced
 * and ended. Usage: ThreadChurn [n]
 */
public class ThreadChurn {
    static volatile long sink;

    static void work(int i) {
        long x = i;
        for (int k = 0; k < 20_000; k++) { x = x * 31 + k; }
        sink = x;
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        int started = 0;
        while (started < n) {
            Thread[] batch = new Thread[Math.min(8, n - started)];
            for (int j = 0; j < batch.length; j++) {
                final int id = started + j;
                batch[j] = new Thread(() -> work(id), "churn-" + id);
                batch[j].start();
            }
            for (Thread t : batch) t.join();
            started += batch.length;
        }
        System.out.println("churned " + started);
    }
}
