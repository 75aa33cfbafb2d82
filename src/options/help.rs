//! The usage text printed for `-agentlib:hprof=help`.
//!
//! This is the product-build text of the original agent, byte for byte: the
//! first line is empty, every line ends in `\n`, there are no trailing
//! spaces, and the option table uses a 23-column option field and a
//! 31-column description field. Our own extension options are deliberately
//! not listed here (see docs/options.md), so that `help` output stays
//! identical to the original's.

/// Exact usage text written to stdout (exit status 0) when the command-line
/// option string is exactly `help`.
pub const HELP_TEXT: &str = concat!(
    "\n",
    "     HPROF: Heap and CPU Profiling Agent (JVMTI Demonstration Code)\n",
    "\n",
    "hprof usage: java -agentlib:hprof=[help]|[<option>=<value>, ...]\n",
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
    "Obsolete Options\n",
    "----------------\n",
    "gc_okay=y|n\n",
    "\n",
    "Examples\n",
    "--------\n",
    "  - Get sample cpu information every 20 millisec, with a stack depth of 3:\n",
    "      java -agentlib:hprof=cpu=samples,interval=20,depth=3 classname\n",
    "  - Get heap usage information based on the allocation sites:\n",
    "      java -agentlib:hprof=heap=sites classname\n",
    "\n",
    "Notes\n",
    "-----\n",
    "  - The option format=b cannot be used with monitor=y.\n",
    "  - The option format=b cannot be used with cpu=old|times.\n",
    "  - Use of the -Xrunhprof interface can still be used, e.g.\n",
    "       java -Xrunhprof:[help]|[<option>=<value>, ...]\n",
    "    will behave exactly the same as:\n",
    "       java -agentlib:hprof=[help]|[<option>=<value>, ...]\n",
    "\n",
    "Warnings\n",
    "--------\n",
    "  - This is demonstration code for the JVMTI interface and use of BCI,\n",
    "    it is not an official product or formal part of the JDK.\n",
    "  - The -Xrunhprof interface will be removed in a future release.\n",
    "  - The option format=b is considered experimental, this format may change\n",
    "    in a future release.\n",
);

#[cfg(test)]
mod tests {
    use super::HELP_TEXT;

    fn lines() -> Vec<&'static str> {
        HELP_TEXT
            .strip_suffix('\n')
            .expect("ends with a newline")
            .split('\n')
            .collect()
    }

    #[test]
    fn shape() {
        assert!(HELP_TEXT.starts_with(
            "\n     HPROF: Heap and CPU Profiling Agent (JVMTI Demonstration Code)\n\n"
        ));
        assert!(HELP_TEXT.ends_with("    in a future release.\n"));
        assert_eq!(lines().len(), 50);
        assert!(HELP_TEXT.is_ascii());
        assert!(!HELP_TEXT.contains('\t'));
        assert!(!HELP_TEXT.contains("\r"));
        for line in lines() {
            assert_eq!(line.trim_end(), line, "trailing blanks in {line:?}");
        }
    }

    #[test]
    fn exact_lines() {
        let l = lines();
        assert_eq!(l[0], "");
        assert_eq!(
            l[3],
            "hprof usage: java -agentlib:hprof=[help]|[<option>=<value>, ...]"
        );
        assert_eq!(
            l[5],
            "Option Name and Value  Description                    Default"
        );
        assert_eq!(
            l[6],
            "---------------------  -----------                    -------"
        );
        assert_eq!(
            l[7],
            "heap=dump|sites|all    heap profiling                 all"
        );
        assert_eq!(
            l[19],
            "msa=y|n                Solaris micro state accounting n"
        );
        assert_eq!(l[22], "");
        assert_eq!(l[23], "Obsolete Options");
        assert_eq!(l[25], "gc_okay=y|n");
        assert_eq!(
            l[30],
            "      java -agentlib:hprof=cpu=samples,interval=20,depth=3 classname"
        );
        assert_eq!(
            l[37],
            "  - The option format=b cannot be used with cpu=old|times."
        );
        assert_eq!(
            l[39],
            "       java -Xrunhprof:[help]|[<option>=<value>, ...]"
        );
        assert_eq!(
            l[45],
            "  - This is demonstration code for the JVMTI interface and use of BCI,"
        );
    }

    #[test]
    fn option_table_uses_23_and_31_columns() {
        let rows = [
            ("Option Name and Value", "Description", "Default"),
            ("---------------------", "-----------", "-------"),
            ("heap=dump|sites|all", "heap profiling", "all"),
            ("cpu=samples|times|old", "CPU usage", "off"),
            ("monitor=y|n", "monitor contention", "n"),
            ("format=a|b", "text(txt) or binary output", "a"),
            ("file=<file>", "write data to file", "java.hprof[{.txt}]"),
            ("net=<host>:<port>", "send data over a socket", "off"),
            ("depth=<size>", "stack trace depth", "4"),
            ("interval=<ms>", "sample interval in ms", "10"),
            ("cutoff=<value>", "output cutoff point", "0.0001"),
            ("lineno=y|n", "line number in traces?", "y"),
            ("thread=y|n", "thread in traces?", "n"),
            ("doe=y|n", "dump on exit?", "y"),
            ("msa=y|n", "Solaris micro state accounting", "n"),
            ("force=y|n", "force output to <file>", "y"),
            ("verbose=y|n", "print messages about dumps", "y"),
        ];
        let expected: String = rows
            .iter()
            .map(|(o, d, v)| format!("{o:<23}{d:<31}{v}\n"))
            .collect();
        let start = HELP_TEXT.find("Option Name and Value").unwrap();
        assert_eq!(&HELP_TEXT[start..start + expected.len()], expected);
        assert!(HELP_TEXT[start + expected.len()..].starts_with("\nObsolete Options\n"));
    }

    #[test]
    fn defaults_in_the_table_match_the_parser() {
        let d = crate::options::Options::default();
        let row = |prefix: &str| {
            HELP_TEXT
                .lines()
                .find(|l| l.starts_with(prefix))
                .map(|l| l[54..].to_string())
                .unwrap()
        };
        assert_eq!(row("depth="), d.depth.to_string());
        assert_eq!(row("interval="), d.interval_ms.to_string());
        assert_eq!(row("cutoff=").parse::<f64>().unwrap(), d.cutoff);
    }
}
