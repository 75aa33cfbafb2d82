import java.nio.file.*;
import java.util.ArrayList;
import java.util.List;

/**
 * Allocations in phases that a test drives with marker files, for the UI's
 * begin/end marks and its DUMP HEAP button. Every object stays reachable
 * until the program ends, so counts are exact at any moment.
 *
 * Usage: AllocPhases <dir>
 *   phase 1: allocates 1000 A (makeA), prints "phase1", waits for <dir>/go;
 *   phase 2: allocates 500 more A (makeA) and 3000 B (makeB), prints
 *            "phase2", waits for <dir>/end; then prints "done".
 * Waits give up after 60 s.
 */
public class AllocPhases {
    static final class A { long v; }
    static final class B { int v; }

    static final List<Object> keep = new ArrayList<>();

    static void makeA(int n) { for (int i = 0; i < n; i++) keep.add(new A()); }
    static void makeB(int n) { for (int i = 0; i < n; i++) keep.add(new B()); }

    static void await(Path p) throws InterruptedException {
        long limit = System.currentTimeMillis() + 60_000;
        while (!Files.exists(p) && System.currentTimeMillis() < limit) Thread.sleep(20);
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        makeA(1000);
        System.out.println("phase1");
        System.out.flush();
        await(dir.resolve("go"));
        makeA(500);
        makeB(3000);
        System.out.println("phase2");
        System.out.flush();
        await(dir.resolve("end"));
        System.out.println("done " + keep.size());
    }
}
