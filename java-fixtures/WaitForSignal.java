import java.nio.file.*;

/**
 * Spins on a known method until a marker file appears (or a time limit),
 * so a test can send SIGQUIT / jcmd JVMTI.data_dump while it runs.
 * Usage: WaitForSignal <marker-file> [max-seconds]. Prints "ready" first.
 */
public class WaitForSignal {
    static volatile long sink;

    static long busy(long x) {
        for (int i = 0; i < 100_000; i++) { x = x * 6364136223846793005L + 1; }
        return x;
    }

    public static void main(String[] args) throws Exception {
        Path marker = Paths.get(args[0]);
        long limit = System.currentTimeMillis() + 1000L * (args.length > 1 ? Long.parseLong(args[1]) : 30);
        System.out.println("ready");
        System.out.flush();
        long x = 1;
        while (!Files.exists(marker) && System.currentTimeMillis() < limit) {
            x = busy(x);
        }
        sink = x;
        System.out.println("done");
    }
}
