/**
 * Runs at the bottom of a recursion of known depth: args[0] calls of
 * recurse() (so a full stack is args[0] recurse frames under main), for
 * args[1] ms of CPU work and one DeepStackMarker allocation, then returns.
 * Used to check that huge `depth` values capture whole stacks.
 */
public class DeepStack {
    static volatile long sink;
    static Object keep;

    public static void main(String[] args) {
        int depth = Integer.parseInt(args[0]);
        long millis = Long.parseLong(args[1]);
        recurse(depth, millis);
    }

    static void recurse(int n, long millis) {
        if (n > 1) {
            recurse(n - 1, millis);
            return;
        }
        keep = new DeepStackMarker();
        long end = System.nanoTime() + millis * 1_000_000L;
        long x = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                x += i ^ (x >>> 3);
            }
        }
        sink = x;
    }
}

class DeepStackMarker {
}
