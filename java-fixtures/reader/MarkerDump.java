import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Fixture for the reader's HotSpot test (crates/hprof-e2e/tests/reader_hotspot.rs): holds
 * exactly 1234 Marker and 10 SubMarker instances plus a few arrays, then
 * writes a live-objects heap dump of its own VM to the path given as the
 * first argument. With "wait" as second argument it dumps nothing, prints
 * "ready" and waits for standard input to close, so that a test can take
 * the dump with jcmd (GC.heap_dump -gz=1: HotSpot's own gzip output).
 */
public class MarkerDump {
    static final int MARKERS = 1234;
    static final int SUB_MARKERS = 10;

    static final List<Marker> HELD = new ArrayList<>();
    static Marker[] someMarkers;
    static int[] numbers = {7, 8, 9};
    static String[] words = {"alpha", "beta"};

    public static void main(String[] args) throws Exception {
        Marker prev = null;
        for (int i = 0; i < MARKERS; i++) {
            prev = new Marker(i, prev);
            HELD.add(prev);
        }
        for (int i = 0; i < SUB_MARKERS; i++) {
            HELD.add(new SubMarker(1000 + i, null, i * 0.5));
        }
        someMarkers = new Marker[] {HELD.get(0), null, HELD.get(2)};
        if (args.length > 1 && args[1].equals("wait")) {
            System.out.println("ready");
            System.out.flush();
            while (System.in.read() >= 0) {
                // wait for EOF
            }
        } else {
            HotSpotDiagnosticMXBean bean =
                    ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
            bean.dumpHeap(args[0], true);
        }
        // Keep everything reachable until after the dump.
        System.out.println("dumped " + HELD.size() + " " + someMarkers.length + " "
                + numbers.length + " " + words.length);
    }
}

class Marker {
    final int serial;
    final long twice;
    final Marker prev;
    final boolean even;

    Marker(int serial, Marker prev) {
        this.serial = serial;
        this.twice = 2L * serial;
        this.prev = prev;
        this.even = serial % 2 == 0;
    }
}

class SubMarker extends Marker {
    final double weight;

    SubMarker(int serial, Marker prev, double weight) {
        super(serial, prev);
        this.weight = weight;
    }
}
