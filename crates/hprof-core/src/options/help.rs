//! The usage text printed for `help` (`-agentpath:.../libhprof_rs.so=help`).
//!
//! It keeps the layout of the original agent's text (a 23-column option
//! field and a 31-column description field, the same rows for the original
//! options) so that readers of the old text find what they know, but its
//! examples use the ways this library is really loaded (`-agentlib:hprof`
//! names a library that no longer exists), it lists the options hprof-rs
//! adds, and its title names the build. Debug options are in
//! docs/options.md only.

/// The text written to stdout (exit status 0) when the option string is
/// exactly `help`.
pub fn help_text() -> String {
    format!(
        "\n     HPROF: Heap and CPU Profiling Agent, hprof-rs {}\n{HELP_BODY}",
        crate::build_info::get()
    )
}

/// Everything below the title.
const HELP_BODY: &str = concat!(
    "\n",
    "hprof usage: java -agentpath:<dir>/libhprof_rs.so=[help]|[<option>=<value>, ...]\n",
    "\n",
    "Option Name and Value  Description                    Default\n",
    "---------------------  -----------                    -------\n",
    "heap=dump|sites|all    heap profiling                 all\n",
    "cpu=samples|times|old  CPU usage                      off\n",
    "monitor=y|n            monitor contention             n\n",
    "format=a|b             text(txt) or binary output     a\n",
    "file=<file>            write data to file             java.hprof[{.txt}]\n",
    "net=<host>:<port>      send data over a socket        off\n",
    "depth=<size>           stack trace depth              4\n",
    "interval=<ms>          sample interval in ms          10\n",
    "cutoff=<value>         output cutoff point            0.0001\n",
    "lineno=y|n             line number in traces?         y\n",
    "thread=y|n             thread in traces?              n\n",
    "doe=y|n                dump on exit?                  y\n",
    "msa=y|n                Solaris micro state accounting n\n",
    "force=y|n              force output to <file>         y\n",
    "verbose=y|n            print messages about dumps     y\n",
    "\n",
    "Options added by hprof-rs\n",
    "-------------------------\n",
    "heapsample=<bytes>     sampled heap=sites (0 exact)   0\n",
    "gcbeforedump=y|n       GC before each report          y\n",
    "sitesorder=live|alloc  order SITES by live or alloc'd live\n",
    "dumper=vm|jvmti        heap dumps by the VM or walk   vm\n",
    "idsize=4|8             binary identifier size         4 (8: VM dumps)\n",
    "arraylen=y|n           full length of object arrays   n\n",
    "rootzero=y|n           original's thread root 0       y\n",
    "cpusampler=<how>       async|safepoint|runnable|wall  async\n",
    "clock=cpu|wall         what cpu=times|old measures    cpu\n",
    "listen=[<host>:]<port> wait for front-ends on <port>  off\n",
    "token=<secret>         secret sent first (listen/net) none\n",
    "tokenfile=<file>       token: the file's first line   none\n",
    "push=http://<host>/..  send profiles to Pyroscope     off\n",
    "pushinterval=<secs>    seconds per pushed profile     10\n",
    "pushapp=<name>         application name when pushing  main class\n",
    "pushlabels=<k:v+k:v>   labels of pushed profiles      none\n",
    "\n",
    "Obsolete Options\n",
    "----------------\n",
    "gc_okay=y|n\n",
    "\n",
    "Examples\n",
    "--------\n",
    "  - Get sample cpu information every 20 millisec, with a stack depth of 3:\n",
    "      java -agentpath:<dir>/libhprof_rs.so=cpu=samples,interval=20,depth=3 classname\n",
    "  - Get heap usage information based on the allocation sites:\n",
    "      java -agentpath:<dir>/libhprof_rs.so=heap=sites classname\n",
    "  - Start CPU sampling in a running JVM, later stop it and write the report:\n",
    "      jcmd <pid> JVMTI.agent_load <dir>/libhprof_rs.so cpu=samples\n",
    "      jcmd <pid> JVMTI.agent_load <dir>/libhprof_rs.so stop\n",
    "\n",
    "Notes\n",
    "-----\n",
    "  - The option format=b cannot be used with monitor=y.\n",
    "  - The option format=b cannot be used with cpu=old|times.\n",
    "  - cpusampler=async samples threads as they use CPU, walking stacks\n",
    "    where they run; safepoint takes those threads' stacks at safepoints;\n",
    "    runnable is the original's rule (every RUNNABLE thread each interval);\n",
    "    wall samples every thread each interval of real time, whatever it does.\n",
    "  - clock=cpu charges cpu=times|old with each thread's CPU time; wall\n",
    "    charges wall-clock time (the original's rule).\n",
    "  - With <dir> on LD_LIBRARY_PATH,\n",
    "       java -agentlib:hprof_rs=[help]|[<option>=<value>, ...]\n",
    "    and java -Xrunhprof_rs:[help]|[<option>=<value>, ...]\n",
    "    behave exactly the same.\n",
    "  - listen= serves the stream to front-ends that connect (hprof-rs connect);\n",
    "    anyone who reaches the port can control the profiler: use a token.\n",
    "  - push= sends every pushinterval the CPU samples and allocations of that\n",
    "    interval to a Pyroscope-compatible server (http:// only; docs/push.md).\n",
    "  - Debug options (logflags, debugflags, ...) are described in docs/options.md.\n",
);

#[cfg(test)]
mod tests {
    use super::help_text;

    fn text() -> String {
        help_text()
    }

    #[test]
    fn shape() {
        let t = text();
        assert!(t.starts_with(&format!(
            "\n     HPROF: Heap and CPU Profiling Agent, hprof-rs {}\n\n",
            crate::build_info::get()
        )));
        assert!(t.is_ascii());
        assert!(!t.contains('\t') && !t.contains('\r'));
        for line in t.lines() {
            assert_eq!(line.trim_end(), line, "trailing blanks in {line:?}");
        }
    }

    /// `-agentlib:hprof` names a library that does not exist: every example
    /// must load this one.
    #[test]
    fn examples_load_this_library() {
        let t = text();
        assert!(!t.contains("-agentlib:hprof="), "{t}");
        assert!(!t.contains("-Xrunhprof:"), "{t}");
        for l in t.lines().filter(|l| l.trim_start().starts_with("java ")) {
            assert!(
                l.contains("libhprof_rs.so=") || l.contains("hprof_rs=") || l.contains("hprof_rs:"),
                "{l}"
            );
        }
    }

    /// Every option a user may set (all but the debug options, which
    /// docs/options.md lists) appears in the table, and the parser accepts
    /// each name shown.
    #[test]
    fn every_user_option_is_listed() {
        let t = text();
        let names = [
            "heap",
            "cpu",
            "monitor",
            "format",
            "file",
            "net",
            "depth",
            "interval",
            "cutoff",
            "lineno",
            "thread",
            "doe",
            "msa",
            "force",
            "verbose",
            "heapsample",
            "gcbeforedump",
            "sitesorder",
            "idsize",
            "dumper",
            "arraylen",
            "rootzero",
            "cpusampler",
            "clock",
            "listen",
            "token",
            "tokenfile",
            "push",
            "pushinterval",
            "pushapp",
            "pushlabels",
            "gc_okay",
        ];
        for n in names {
            assert!(
                t.lines().any(|l| l.starts_with(&format!("{n}="))),
                "{n} missing from help"
            );
        }
        let listed: Vec<&str> = t
            .lines()
            .filter_map(|l| l.split_once('=').map(|(n, _)| n))
            .filter(|n| !n.contains(' ') && !n.is_empty())
            .collect();
        for n in listed {
            assert!(names.contains(&n), "{n} listed but not known to this test");
        }
    }

    #[test]
    fn option_table_uses_23_and_31_columns() {
        let t = text();
        let table = t
            .lines()
            .skip_while(|l| !l.starts_with("Option Name and Value"))
            .take_while(|l| !l.starts_with("Obsolete Options"));
        for l in table.filter(|l| l.contains('=')) {
            if l.len() > 23 {
                assert_eq!(&l[22..23], " ", "{l}");
                assert_ne!(&l[23..24], " ", "description at column 23: {l}");
            }
            if l.len() > 54 {
                assert_eq!(&l[53..54], " ", "{l}");
                assert_ne!(&l[54..55], " ", "default at column 54: {l}");
            }
        }
    }

    #[test]
    fn defaults_in_the_table_match_the_parser() {
        let d = crate::options::Options::default();
        let t = text();
        let row = |prefix: &str| {
            t.lines()
                .find(|l| l.starts_with(prefix))
                .map(|l| l[54..].to_string())
                .unwrap()
        };
        assert_eq!(row("depth="), d.depth.to_string());
        assert_eq!(row("interval="), d.interval_ms.to_string());
        assert_eq!(row("cutoff=").parse::<f64>().unwrap(), d.cutoff);
        assert_eq!(row("heapsample="), d.heap_sample_bytes.to_string());
        assert_eq!(row("cpusampler="), "async");
        assert_eq!(d.cpu_sampler, crate::options::CpuSampler::Async);
        assert_eq!(row("clock="), "cpu");
        assert_eq!(row("pushinterval="), d.push_interval_s.to_string());
        assert_eq!(d.timing_clock, crate::options::TimingClock::Cpu);
    }
}
