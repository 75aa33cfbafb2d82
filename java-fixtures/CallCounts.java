/**
 * Method call counts known exactly, for cpu=times (crates/hprof-e2e/tests/cpu_times.rs):
 *
 *   main 1; mid 7; leaf 26 (21 from mid, 5 from main); fib 177 (fib(10));
 *   catcher 1; thrower 10 (5 leave by an exception caught in catcher);
 *   deepCatch 3; deepThrow 15 (recursion 5 deep, all left by one exception
 *   caught in deepCatch); rethrow 4 (exception caught and rethrown in the
 *   same method, caught by main); Counter.<init> 4; Counter.inc 9;
 *   target 2 (called from a lambda); worker 2 (one per thread);
 *   spin 6000 (3000 per worker thread).
 *
 * Prints one RESULT line that does not depend on the agent.
 */
public class CallCounts {
    static long sink;

    static int leaf(int x) {
        return x + 1;
    }

    static int mid(int x) {
        for (int i = 0; i < 3; i++) {
            x = leaf(x);
        }
        return x;
    }

    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static void thrower(int i) {
        if (i % 2 == 0) {
            throw new IllegalStateException("even " + i);
        }
    }

    static int catcher() {
        int caught = 0;
        for (int i = 0; i < 10; i++) {
            try {
                thrower(i);
            } catch (IllegalStateException e) {
                caught++;
            }
        }
        return caught;
    }

    static int deepThrow(int d) {
        if (d == 0) {
            throw new RuntimeException("bottom");
        }
        return deepThrow(d - 1) + 1;
    }

    static int deepCatch() {
        try {
            return deepThrow(4);
        } catch (RuntimeException e) {
            return -1;
        }
    }

    static int rethrow(int i) {
        try {
            if (i >= 0) {
                throw new UnsupportedOperationException("r" + i);
            }
            return i;
        } catch (UnsupportedOperationException e) {
            throw new IllegalArgumentException(e.getMessage());
        }
    }

    static int target(int x) {
        return x * 2;
    }

    static final class Counter {
        int n;

        Counter(int start) {
            n = start;
        }

        void inc() {
            n++;
        }
    }

    static long spin(long x) {
        return x * 6364136223846793005L + 1442695040888963407L;
    }

    static void worker(long seed) {
        long x = seed;
        for (int i = 0; i < 3000; i++) {
            x = spin(x);
        }
        synchronized (CallCounts.class) {
            sink += x;
        }
    }

    public static void main(String[] args) throws Exception {
        long sum = 0;
        for (int i = 0; i < 7; i++) {
            sum += mid(i);
        }
        for (int i = 0; i < 5; i++) {
            sum += leaf(i);
        }
        sum += fib(10);
        sum += catcher();
        for (int i = 0; i < 3; i++) {
            sum += deepCatch();
        }
        for (int i = 0; i < 4; i++) {
            try {
                sum += rethrow(i);
            } catch (IllegalArgumentException e) {
                sum += 100;
            }
        }
        Counter[] cs = {new Counter(1), new Counter(2), new Counter(3), new Counter(4)};
        for (int i = 0; i < 9; i++) {
            cs[i % 4].inc();
        }
        for (Counter c : cs) {
            sum += c.n;
        }
        java.util.function.IntUnaryOperator f = x -> target(x) + 1;
        sum += f.applyAsInt(3) + f.applyAsInt(4);
        Thread a = new Thread(() -> worker(1), "worker-a");
        Thread b = new Thread(() -> worker(2), "worker-b");
        a.start();
        b.start();
        a.join();
        b.join();
        System.out.println("RESULT " + sum + " " + sink);
    }
}
