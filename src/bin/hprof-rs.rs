fn main() { eprintln!("hprof-rs: the front-end tool is not built yet"); std::process::exit(2); }
