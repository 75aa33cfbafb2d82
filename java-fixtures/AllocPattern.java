/**
 * One loop allocating the same two objects every round: a long[2] (32
 * bytes) and a byte[584] (600 bytes), 632 bytes a round, both dropped at
 * once. Exact truth: ROUNDS long[2] and ROUNDS byte[584] allocated in
 * round(), 32 and 600 bytes each with compressed class pointers.
 * Usage: AllocPattern ROUNDS
 */
public class AllocPattern {
    static volatile Object sink;

    static void round() {
        sink = new long[2];
        sink = new byte[584];
    }

    public static void main(String[] args) {
        long rounds = Long.parseLong(args[0]);
        for (long i = 0; i < rounds; i++) {
            round();
        }
        System.out.println("rounds " + rounds);
    }
}
