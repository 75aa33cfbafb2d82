import java.util.ArrayList;
import java.util.List;

/**
 * Clones many objects through GC cycles: 200 rounds of 500 clones of one
 * prototype, every 50th clone kept (2000 live at the end), the rest
 * dropped; other objects are allocated between rounds so freed object
 * table slots are reused. Usage: CloneChurn. Prints "kept 2000".
 */
public class CloneChurn {
    static class Item implements Cloneable {
        long a = 1;
        long b = 2;
        Object r;

        Item copy() throws CloneNotSupportedException {
            return (Item) clone();
        }
    }

    static volatile Object sink;
    static List<Item> kept;
    static Item proto;

    public static void main(String[] args) throws Exception {
        proto = new Item();
        kept = new ArrayList<>();
        for (int round = 0; round < 200; round++) {
            for (int i = 0; i < 500; i++) {
                Item c = proto.copy();
                if (i % 50 == 0) {
                    kept.add(c);
                } else {
                    sink = c;
                }
            }
            for (int i = 0; i < 500; i++) {
                sink = new long[2];
            }
            if (round % 20 == 19) {
                System.gc();
            }
        }
        System.out.println("kept " + kept.size());
    }
}
