//! The agent's option string: `-agentlib:hprof=OPTS` / `-Xrunhprof:OPTS`.

// Building blocks of the parser, used by the parser itself.
#[allow(dead_code)]
mod cnum;
#[allow(dead_code)]
mod tokenizer;
