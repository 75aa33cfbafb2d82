import java.util.ArrayList;
import java.util.HashMap;

/**
 * Allocation-heavy fixture for the cpu=times benchmark: every round builds a
 * linked list of small objects, a boxed ArrayList and a small HashMap, then
 * walks them. Usage: AllocHeavy [rounds] (default 40). Prints a checksum.
 */
public class AllocHeavy {
    static final class Node {
        final int value;
        final Node next;

        Node(int value, Node next) {
            this.value = value;
            this.next = next;
        }
    }

    static long round(int r) {
        Node head = null;
        for (int i = 0; i < 100_000; i++) {
            head = new Node(i ^ r, head);
        }
        ArrayList<Integer> list = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            list.add(i);
        }
        HashMap<Integer, int[]> map = new HashMap<>();
        for (int i = 0; i < 2_000; i++) {
            map.put(i, new int[i % 8]);
        }
        long sum = 0;
        for (Node n = head; n != null; n = n.next) {
            sum += n.value;
        }
        for (int x : list) {
            sum += x;
        }
        for (int[] a : map.values()) {
            sum += a.length;
        }
        return sum;
    }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        long sum = 0;
        for (int r = 0; r < rounds; r++) {
            sum += round(r);
        }
        System.out.println("sum=" + sum);
    }
}
