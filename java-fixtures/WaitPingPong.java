/**
 * Two threads hand a token back and forth with Object.wait/notify, N times
 * each: every hand-over is a MONITOR WAIT and a MONITOR WAITED record under
 * monitor=y, so the program writes much output in little time.
 * Usage: WaitPingPong N. Prints "turns N".
 */
public class WaitPingPong {
    static final Object LOCK = new Object();
    static int turn;

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        Thread other = new Thread(() -> play(1, n), "pong");
        other.start();
        play(0, n);
        other.join();
        System.out.println("turns " + n);
    }

    static void play(int me, int n) {
        synchronized (LOCK) {
            for (int i = 0; i < n; i++) {
                while (turn != me) {
                    try {
                        LOCK.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                turn = 1 - me;
                LOCK.notifyAll();
            }
        }
    }
}
