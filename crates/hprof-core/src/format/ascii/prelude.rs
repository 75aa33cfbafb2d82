//! The explanatory text between the first line and the `--------` line of a
//! text profile. Our own wording, laid out like the original's: title,
//! version line, warning, one block per record kind (name in column 1,
//! explanation from column 17), closing paragraph about run-time dumps.

/// The prelude, ending with a newline; it names the build
/// (`build_info::get`).
pub fn prelude() -> String {
    format!("{HEAD}{}{TAIL}", crate::build_info::get())
}

/// The prelude up to the build's name.
const HEAD: &str = concat!(
    "HPROF-RS: heap and CPU profile of a Java program (JVMTI agent, text output)\n",
    "\n",
    "hprof-rs ",
);

/// The prelude after the build's name.
const TAIL: &str = concat!(
    ",\na Rust rebuild of the classic HPROF profiling agent\n",
    "WARNING!  This layout is not a committed interface; it may change in\n",
    "          future versions.\n",
    "\n",
    "The records below refer to threads, traces and classes by serial numbers\n",
    "and to objects by hexadecimal IDs. IDs are handles of the agent, not\n",
    "memory addresses. Each stack trace is printed once, in a TRACE record,\n",
    "before the first section that uses it.\n",
    "\n",
    "THREAD START\n",
    "THREAD END      A thread started or ended. THREAD START shows the ID of\n",
    "                the Thread object (obj), the thread's serial number (id),\n",
    "                its name and its thread group; THREAD END shows the serial\n",
    "                number.\n",
    "\n",
    "TRACE           A stack trace: its serial number, then one line per frame,\n",
    "                top of the stack first, as class.method(file:line).\n",
    "                \"Unknown line\" means no line number is available, \"<empty>\"\n",
    "                marks a trace without frames. With thread=y the serial\n",
    "                number of the thread is shown as well.\n",
    "\n",
    "HEAP DUMP       The objects known to the agent, between HEAP DUMP BEGIN and\n",
    "                HEAP DUMP END. The BEGIN line gives the agent's totals\n",
    "                when the dump starts (live objects and bytes of the\n",
    "                allocation sites with heap=sites), not a count of the\n",
    "                entries. Each entry starts with one of:\n",
    "                ROOT  a garbage collection root, with its kind and where\n",
    "                      it comes from (thread, stack frame, JNI reference);\n",
    "                CLS   a class: name, load trace, superclass, class loader,\n",
    "                      signers, protection domain, non-null static\n",
    "                      references and constant pool references;\n",
    "                OBJ   an instance: size, allocation trace, class, and its\n",
    "                      non-null reference fields;\n",
    "                ARR   an array: size, allocation trace, number of elements,\n",
    "                      type, and for object arrays the non-null elements.\n",
    "\n",
    "SITES           Allocation sites, a site being a class together with the\n",
    "                trace that allocated it, most live bytes first: share of\n",
    "                all live bytes, running total, live bytes and objects,\n",
    "                allocated bytes and objects, trace serial and class name.\n",
    "\n",
    "CPU SAMPLES     Where running threads were found by periodic stack\n",
    "                sampling: share of all samples, running total, number of\n",
    "                samples (count), trace serial and the trace's top method.\n",
    "\n",
    "CPU TIME        Time spent in methods in ms, measured at method entry and\n",
    "                exit: share of the total, running total, number of calls\n",
    "                (count), trace serial and the trace's top method.\n",
    "\n",
    "MONITOR TIME    Time threads spent waiting to enter contended monitors:\n",
    "                share, running total, number of contended entries, trace\n",
    "                serial and the class of the monitor.\n",
    "\n",
    "MONITOR DUMP    The state of every known thread, then every owned monitor\n",
    "                with its owner, entry count, and the threads waiting to\n",
    "                enter it or waiting to be notified.\n",
    "\n",
    "The HEAP DUMP, SITES, CPU and MONITOR sections are written when the\n",
    "program exits. They can also be requested while it runs: press Ctrl-\\\n",
    "(or send SIGQUIT) on Unix-like systems or Ctrl-Break on Windows, or run\n",
    "\"jcmd <pid> JVMTI.data_dump\".\n",
);

#[cfg(test)]
mod tests {
    fn prelude() -> String {
        super::prelude()
    }

    const KINDS: [&str; 9] = [
        "THREAD START",
        "THREAD END",
        "TRACE",
        "HEAP DUMP",
        "SITES",
        "CPU SAMPLES",
        "CPU TIME",
        "MONITOR TIME",
        "MONITOR DUMP",
    ];

    #[test]
    fn ends_with_newline_and_has_no_separator() {
        assert!(prelude().ends_with(".\n"));
        assert!(!prelude().contains("--------"));
        assert!(
            prelude().lines().all(|l| l.len() <= 80),
            "lines fit 80 columns"
        );
    }

    #[test]
    fn every_record_kind_has_a_block_with_text_at_column_17() {
        let text = prelude();
        for kind in KINDS {
            let line = text
                .lines()
                .find(|l| {
                    l.starts_with(kind) && (l.len() == kind.len() || l.as_bytes()[16] != b' ')
                })
                .unwrap_or_else(|| panic!("no block for {kind}"));
            if line.len() > kind.len() {
                assert!(line[kind.len()..16].bytes().all(|b| b == b' '), "{line}");
                assert_ne!(line.as_bytes()[16], b' ', "{line}");
            }
        }
        // Continuation lines of a block are indented to column 17.
        for line in prelude()
            .lines()
            .filter(|l| l.starts_with(' ') && l.len() > 16)
        {
            if line.starts_with("          future") {
                continue;
            }
            assert!(line.starts_with(&" ".repeat(16)), "{line:?}");
        }
    }

    #[test]
    fn mentions_run_time_dump_requests() {
        assert!(prelude().contains("Ctrl-\\"));
        assert!(prelude().contains("jcmd <pid> JVMTI.data_dump"));
        for sub in ["ROOT", "CLS", "OBJ", "ARR"] {
            assert!(
                prelude().contains(&format!("                {sub}  ")),
                "{sub}"
            );
        }
    }
}
