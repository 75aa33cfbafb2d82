package bcifix;

import java.util.function.IntUnaryOperator;

/**
 * Exercises every byte-code family the rewriter relocates. The number of
 * calls and normal returns of each method is fixed and asserted by
 * crates/hprof-e2e/tests/bci_verify.rs; "RESULT" lines must equal those of an uninstrumented run.
 */
public class Main {
    static int counter = initCounter();
    int field;

    static int initCounter() {
        return 1;
    }

    Main(int f) {
        this.field = f;
    }

    Main() {
        this(7);
    }

    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    /** javac puts the loop condition at offset 0: a branch target at 0. */
    static int loopTop(int n) {
        while (n > 0) {
            n--;
        }
        return n;
    }

    static int dense(int k) {
        switch (k) {
            case 0: return 10;
            case 1: return 11;
            case 2: return 12;
            case 3: return 13;
            case 4: return 14;
            default: return -1;
        }
    }

    static int sparse(int k) {
        switch (k) {
            case -1000: return 1;
            case 7: return 2;
            case 100000: return 3;
            default: return 0;
        }
    }

    static int strings(String s) {
        switch (s) {
            case "alpha": return 1;
            case "beta": return 2;
            case "gamma": return 3;
            default: return 0;
        }
    }

    static int thrower(int i) {
        if (i % 2 == 1) {
            throw new IllegalStateException("odd");
        }
        return i;
    }

    static int tryCatchFinally(int i) {
        int r = 0;
        try {
            r = thrower(i);
        } catch (IllegalStateException e) {
            r = -1;
        } finally {
            r += 100;
        }
        return r;
    }

    static int returnInFinally(int i) {
        try {
            if (i > 2) {
                return i;
            }
            return -i;
        } finally {
            counter++;
        }
    }

    static synchronized void syncStatic() {
        counter++;
    }

    void syncBlock() {
        synchronized (this) {
            field++;
        }
    }

    static long longs(long a, double d) {
        long s = 0;
        for (long i = 0; i < a; i++) {
            if (i * d > 3.5) {
                s += i;
            } else {
                s -= 1;
            }
        }
        float f = (float) d;
        return f > 0.25f ? s : -s;
    }

    static int nested(int n) {
        int c = 0;
        outer:
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (j == 3) {
                    continue outer;
                }
                if (i == 5) {
                    break outer;
                }
                c++;
            }
        }
        return c;
    }

    static int ternaryOnStack(int a, boolean b) {
        return a + (b ? 1 : 2) * (a > 3 ? a : -a);
    }

    /** Four array allocations: multianewarray, anewarray, newarray, anewarray. */
    static int arrays(int n) {
        int[][] m = new int[n][n];
        String[] s = new String[n];
        long[] l = new long[n];
        Object[][] o = new Object[2][];
        return m.length + s.length + l.length + o.length;
    }

    public static void main(String[] args) {
        long sum = 0;
        sum += fib(15);
        for (int i = 0; i < 3; i++) {
            sum += loopTop(1000);
        }
        for (int k = -1; k < 7; k++) {
            sum += dense(k);
        }
        int[] keys = {-1000, 7, 100000, 5, 6};
        for (int k : keys) {
            sum += sparse(k);
        }
        sum += strings("alpha") + strings("beta") + strings("gamma") + strings("delta");
        for (int i = 0; i < 10; i++) {
            sum += tryCatchFinally(i);
        }
        for (int i = 0; i < 5; i++) {
            sum += returnInFinally(i);
        }
        syncStatic();
        syncStatic();
        syncStatic();
        Main m = new Main();
        Main m2 = new Main(3);
        for (int i = 0; i < 4; i++) {
            m.syncBlock();
        }
        sum += m.field + m2.field;
        sum += longs(10, 0.5);
        sum += nested(10);
        for (int i = 0; i < 6; i++) {
            sum += ternaryOnStack(i, i % 2 == 0);
        }
        sum += arrays(3);
        IntUnaryOperator triple = x -> x * 3;
        for (int i = 0; i < 7; i++) {
            sum += triple.applyAsInt(i);
        }
        Square sq = new Square();
        sum += sq.sides() + sq.twiceSides() + sq.kind();
        System.out.println("RESULT " + sum + " " + counter);
    }
}
