import java.nio.file.*;

/**
 * A known object graph for heap dump tests. Usage: HeapGraph <marker-file>
 * [max-seconds]. Builds the graph, prints "ready", waits for the marker
 * file, then exits (the graph stays reachable until exit).
 *
 * Known counts: 1000 HeapGraph$Node, 777 HeapGraph$Leaf, 3 HeapGraph$Pair,
 * one HeapGraph$Node[] (length 1200, last 200 elements null).
 * Node i: value=i, baseId=1_000_000_000_000+i, weight=i*0.5, flag=(i%2==0),
 * ch='A'+i%26, b=(byte)i, s=(short)(i*3), f=i*0.25f, next=node i+1 (null
 * for the last), baseRef=leaf i%777, name=null except node 0 ("node-zero").
 */
public class HeapGraph {
    interface Named { String PREFIX = "n"; int CODE = 42; }

    static class Base implements Named {
        long baseId;
        Object baseRef;
    }

    static class Node extends Base {
        int value;
        Node next;
        String name;
        double weight;
        boolean flag;
        char ch;
        byte b;
        short s;
        float f;
    }

    static class Leaf {
        int id;
    }

    static class Pair {
        Object left, right;
        Pair(Object l, Object r) { left = l; right = r; }
    }

    /** Statics of every type. */
    static class Holder {
        static boolean sz = true;
        static byte sb = -7;
        static char sc = 'Q';
        static short ss = -1234;
        static int si = 123456789;
        static long sl = -9876543210L;
        static float sf = 1.5f;
        static double sd = -2.25;
        static Object so;
        static boolean[] za = {true, false, true};
        static byte[] ba = {1, -2, 3};
        static char[] ca = {'h', 'e', 'y'};
        static short[] sa = {-1, 2, -3, 4};
        static int[] ia = {1, 2, 3, -4, 5};
        static long[] la = {Long.MIN_VALUE, 0, Long.MAX_VALUE};
        static float[] fa = {0.5f, -1.25f};
        static double[] da = {3.5, -0.125, 1e300};
        static Object[] empty = new Object[5];
    }

    static Node[] nodes;
    static Leaf[] leaves;
    static Pair[] pairs;

    public static void main(String[] args) throws Exception {
        leaves = new Leaf[777];
        for (int i = 0; i < leaves.length; i++) { leaves[i] = new Leaf(); leaves[i].id = i; }
        nodes = new Node[1200];
        for (int i = 0; i < 1000; i++) {
            Node n = new Node();
            n.value = i;
            n.baseId = 1_000_000_000_000L + i;
            n.weight = i * 0.5;
            n.flag = i % 2 == 0;
            n.ch = (char) ('A' + i % 26);
            n.b = (byte) i;
            n.s = (short) (i * 3);
            n.f = i * 0.25f;
            n.baseRef = leaves[i % 777];
            nodes[i] = n;
            if (i > 0) nodes[i - 1].next = n;
        }
        nodes[0].name = "node-zero";
        pairs = new Pair[] { new Pair(nodes[0], leaves[0]), new Pair(null, nodes[999]), new Pair(Holder.ia, null) };
        Holder.so = pairs;
        Path marker = Paths.get(args[0]);
        long limit = System.currentTimeMillis() + 1000L * (args.length > 1 ? Long.parseLong(args[1]) : 60);
        System.out.println("ready");
        System.out.flush();
        while (!Files.exists(marker) && System.currentTimeMillis() < limit) {
            Thread.sleep(20);
        }
        System.out.println("done " + nodes.length + leaves.length + Holder.sb);
    }
}
