//! Text someone else chose, made safe to print on a terminal: another
//! process's (its name and command line, its perfdata strings, its attach
//! socket's answers, its agent's messages) and a file's (the names in a
//! dump or report, the file's own name). A control character there could
//! move the cursor, rewrite earlier lines or set the window title.

/// One line for a table: every control character shown as `?`.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Lines of text with their line breaks (and tabs) kept and every other
/// control character written as an escape, `\x1b` or `\u{9b}`, so what
/// was sent can still be read.
pub fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if c.is_control() && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_replaced_or_escaped() {
        assert_eq!(printable("Main \u{9b}31m ok\n"), "Main ?31m ok?");
        assert_eq!(
            escaped("0\n\x1b]0;pwned\x07return\tcode: 0\r\u{9b}2J\x7f\n"),
            "0\n\\x1b]0;pwned\\x07return\tcode: 0\\x0d\\u{9b}2J\\x7f\n"
        );
        assert_eq!(escaped("plain ü"), "plain ü");
    }
}
