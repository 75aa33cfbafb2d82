import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;

/**
 * Writes every .class file of the running JDK's module image (jrt:/) to
 * stdout as a stream of records: u2 name length, name bytes (UTF-8,
 * "module/path/Name.class"), u4 byte count, class bytes. Ends with a u2 0.
 * Used by the bci tests to round-trip and rewrite real JDK classes.
 */
public class DumpJrt {
    public static void main(String[] args) throws Exception {
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Files.walk(jrt.getPath("/modules"))) {
            s.filter(p -> p.toString().endsWith(".class")).forEach(files::add);
        }
        Collections.sort(files);
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
        for (Path p : files) {
            byte[] name = p.toString().substring("/modules/".length()).getBytes(StandardCharsets.UTF_8);
            byte[] bytes = Files.readAllBytes(p);
            out.writeShort(name.length);
            out.write(name);
            out.writeInt(bytes.length);
            out.write(bytes);
        }
        out.writeShort(0);
        out.flush();
    }
}
