import java.util.ArrayList;
import java.util.List;

/**
 * Holds a known set of objects and then idles (allocating nothing) until
 * standard input closes, so a test can take `jcmd GC.heap_dump` and
 * `jmap -histo` of the same heap state. Prints "ready" once the objects
 * exist. Usage: HoldObjects [scale] (default 1; scale multiplies counts,
 * e.g. for the ~1 GB benchmark dump).
 */
public class HoldObjects {
    static class HeldA { int x; long y; Object next; HeldA(int x) { this.x = x; } }
    static class HeldB extends HeldA { byte[] data; HeldB(int x) { super(x); data = new byte[16]; } }

    static final List<Object> keep = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        int scale = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        for (int i = 0; i < 3000 * scale; i++) keep.add(new HeldA(i));
        for (int i = 0; i < 700 * scale; i++) keep.add(new HeldB(i));
        for (int i = 0; i < 50 * scale; i++) keep.add(new HeldA[i % 7]);
        for (int i = 0; i < 40 * scale; i++) keep.add(new int[1000]);
        System.out.println("ready");
        System.out.flush();
        while (System.in.read() >= 0) { }
        System.out.println(keep.size());
    }
}
