//! Java sources for javac runs under the agent (crates/hprof-e2e/tests/cpu_times.rs,
//! crates/hprof-e2e/tests/cpu_stress.rs).

use std::path::{Path, PathBuf};

/// `n` source files that depend on each other, with generics, lambdas,
/// switches, exceptions, inner classes and varargs.
pub fn generate(dir: &Path, n: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir.join("gen")).unwrap();
    let mut files = Vec::new();
    for i in 0..n {
        let prev = if i == 0 {
            "Object".to_string()
        } else {
            format!("C{}", i - 1)
        };
        let body = format!(
            r#"package gen;
import java.util.*;
import java.util.function.*;
public class C{i} {{
    private final List<String> names = new ArrayList<>();
    static int sum(int... xs) {{ int s = 0; for (int x : xs) s += x; return s; }}
    int kind(Object o) {{
        if (o instanceof String) return 1;
        switch (names.size() % 4) {{ case 0: return 2; case 1: return 3; default: return {i}; }}
    }}
    <T extends Comparable<T>> T max(List<T> xs) {{
        T best = null;
        for (T x : xs) if (best == null || x.compareTo(best) > 0) best = x;
        return best;
    }}
    int guarded(String s) {{
        try {{ return Integer.parseInt(s); }} catch (NumberFormatException e) {{ return -{i}; }} finally {{ names.add(s); }}
    }}
    class Inner {{ int v = sum(1, 2, {i}); }}
    Function<Integer, Integer> f = x -> x + {i};
    {prev} link;
    public static int run() {{
        C{i} c = new C{i}();
        return c.kind("x") + c.guarded("{i}") + c.new Inner().v + c.f.apply(1) + c.max(Arrays.asList(3, 1, 2));
    }}
}}
"#
        );
        let p = dir.join(format!("gen/C{i}.java"));
        std::fs::write(&p, body).unwrap();
        files.push(p);
    }
    let mut main = String::from("package gen;\npublic class Main {\n    public static void main(String[] a) {\n        long s = 0;\n");
    for i in 0..n {
        main.push_str(&format!("        s += C{i}.run();\n"));
    }
    main.push_str("        System.out.println(\"SUM \" + s);\n    }\n}\n");
    let p = dir.join("gen/Main.java");
    std::fs::write(&p, main).unwrap();
    files.push(p);
    files
}
