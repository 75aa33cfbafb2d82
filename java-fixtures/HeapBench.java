import java.nio.file.*;

/**
 * Builds a heap of about `mb` megabytes of live data for the heap dump
 * benchmark: a mix of small objects with references (a linked structure),
 * byte/int/long/char arrays and object arrays. Usage: HeapBench <mb>
 * <marker-file>. Prints "ready" and waits until the marker file exists.
 */
public class HeapBench {
    static class Item {
        long id;
        int count;
        double score;
        Item next;
        Object payload;
    }

    static Object[] roots;

    public static void main(String[] args) throws Exception {
        long target = Long.parseLong(args[0]) << 20;
        Path marker = Paths.get(args[1]);
        // ~1/4 small objects (48 B each incl. a 16 B int[2] payload every
        // 4th), ~3/4 primitive and object arrays of 256 B .. 16 KiB.
        int chunks = 64;
        roots = new Object[chunks];
        long made = 0;
        java.util.Random r = new java.util.Random(42);
        for (int c = 0; c < chunks; c++) {
            long budget = target / chunks;
            java.util.ArrayList<Object> list = new java.util.ArrayList<>();
            Item head = null;
            long small = budget / 4, used = 0;
            while (used < small) {
                Item it = new Item();
                it.id = made++;
                it.count = (int) made;
                it.score = made * 0.5;
                it.next = head;
                if ((made & 3) == 0) { it.payload = new int[2]; used += 16; }
                head = it;
                used += 40;
            }
            list.add(head);
            while (used < budget) {
                int n = 256 + r.nextInt(16 * 1024);
                switch (r.nextInt(5)) {
                    case 0: list.add(new byte[n]); used += n + 16; break;
                    case 1: list.add(new int[n / 4]); used += n + 16; break;
                    case 2: list.add(new long[n / 8]); used += n + 16; break;
                    case 3: list.add(new char[n / 2]); used += n + 16; break;
                    default: Object[] a = new Object[n / 64]; for (int i = 0; i < a.length; i += 2) a[i] = head; list.add(a); used += n / 16 + 16; break;
                }
            }
            roots[c] = list.toArray();
        }
        System.out.println("ready");
        System.out.flush();
        while (!Files.exists(marker)) Thread.sleep(50);
        System.out.println("done " + roots.length);
    }
}
