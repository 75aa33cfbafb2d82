import java.util.ArrayList;
import java.util.List;

/**
 * Fills the heap and keeps it full: the OutOfMemoryError ends main, and the
 * launcher's own handling of it fails again for want of memory, so the JVM
 * exits (status 1) without a VM death event. Run with a small -Xmx.
 */
public class FillHeap {
    static final List<long[]> KEEP = new ArrayList<>();

    public static void main(String[] args) {
        while (true) {
            KEEP.add(new long[1024]);
        }
    }
}
