import com.sun.source.util.JavacTask;
import java.io.File;
import java.nio.file.*;
import java.util.*;
import javax.tools.*;

/**
 * A real program whose objects stay live: javac (in process, through the
 * compiler API) parses and attributes the given source files, and the task,
 * with its trees and symbols, is kept while the program waits for a marker
 * file. A test compares the agent's live counts with a heap histogram taken
 * at that moment. Usage: LiveJavac marker-file source.java...
 */
public class LiveJavac {
    static Object keep;

    public static void main(String[] args) throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        StandardJavaFileManager files = javac.getStandardFileManager(null, null, null);
        List<File> sources = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            sources.add(new File(args[i]));
        }
        JavacTask task = (JavacTask) javac.getTask(null, files, null,
                Arrays.asList("-proc:none"), null, files.getJavaFileObjectsFromFiles(sources));
        Iterable<?> units = task.parse();
        task.analyze();
        keep = new Object[] {task, units, files};
        Path marker = Paths.get(args[0]);
        System.out.println("ready");
        System.out.flush();
        while (!Files.exists(marker)) {
            Thread.sleep(20);
        }
        System.out.println("done");
    }
}
