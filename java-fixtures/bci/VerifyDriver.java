import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Defines rewritten classes in a child-first class loader and forces each
 * one to be linked (Class.getDeclaredMethods links the class, which runs the
 * byte-code verifier; run with -Xverify:all) without initialising it.
 *
 * Input file: records of u2 name length, binary name (a.b.C), u4 length,
 * class bytes; a u2 0 ends it. Every class is defined and linked in input
 * order. Output per class: "BEGIN name" then "DONE name OK" or
 * "DONE name <throwable class>: <message>".
 */
public class VerifyDriver {
    static final class ChildFirst extends ClassLoader {
        private final Map<String, byte[]> defs;

        ChildFirst(Map<String, byte[]> defs) {
            super(ClassLoader.getSystemClassLoader());
            this.defs = defs;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c != null) {
                    return c;
                }
                byte[] b = defs.get(name);
                if (b == null) {
                    return super.loadClass(name, resolve);
                }
                return defineClass(name, b, 0, b.length);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, byte[]> defs = new HashMap<>();
        List<String> order = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(args[0]), 1 << 16))) {
            while (true) {
                int n = in.readUnsignedShort();
                if (n == 0) {
                    break;
                }
                byte[] name = new byte[n];
                in.readFully(name);
                byte[] bytes = new byte[in.readInt()];
                in.readFully(bytes);
                String s = new String(name, "UTF-8");
                defs.put(s, bytes);
                order.add(s);
            }
        }
        ChildFirst loader = new ChildFirst(defs);
        for (String name : order) {
            System.out.println("BEGIN " + name);
            System.out.flush();
            String result;
            try {
                Class<?> c = Class.forName(name, false, loader);
                c.getDeclaredMethods();
                result = "OK";
            } catch (Throwable t) {
                result = t.getClass().getName() + ": " + String.valueOf(t.getMessage()).replace('\n', ' ');
            }
            System.out.println("DONE " + name + " " + result);
            System.out.flush();
        }
    }
}
