//! The left-to-right tokenizer of the option string.
//!
//! The grammar is deliberately primitive, because users' command lines
//! depend on its corners: a token is everything up to the next occurrence of
//! one separator byte (or the end of the string), the separator is consumed,
//! and a token is rejected when it is empty or longer than its buffer. In
//! particular there is no notion of "element": an option name runs to the
//! next `=` even across commas, which is why `doe,cpu=samples` reads the
//! name `doe,cpu`.

/// Longest accepted option name, in bytes.
pub(crate) const MAX_NAME_LEN: usize = 15;

/// Longest accepted option value, in bytes (`FILENAME_MAX` on Linux).
pub(crate) const MAX_VALUE_LEN: usize = 4096;

/// Cursor over the unread rest of the option string.
#[derive(Debug, Clone)]
pub(crate) struct Tokenizer<'a> {
    rest: &'a str,
}

impl<'a> Tokenizer<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Tokenizer { rest: text }
    }

    /// True when the whole string has been consumed.
    pub(crate) fn at_end(&self) -> bool {
        self.rest.is_empty()
    }

    /// Takes the text up to the next `sep` (or the end), consuming `sep`.
    ///
    /// Returns `None` for an empty token or one longer than `max` bytes.
    /// `sep` must be ASCII, so the split never falls inside a UTF-8
    /// sequence.
    pub(crate) fn token(&mut self, sep: u8, max: usize) -> Option<&'a str> {
        debug_assert!(sep.is_ascii());
        let (token, rest) = match self.rest.as_bytes().iter().position(|&b| b == sep) {
            Some(i) => (&self.rest[..i], &self.rest[i + 1..]),
            None => (self.rest, ""),
        };
        self.rest = rest;
        (!token.is_empty() && token.len() <= max).then_some(token)
    }

    /// The next option name: text up to `=`, at most [`MAX_NAME_LEN`] bytes.
    pub(crate) fn name(&mut self) -> Option<&'a str> {
        self.token(b'=', MAX_NAME_LEN)
    }

    /// The next option value: text up to `,`, at most [`MAX_VALUE_LEN`] bytes.
    pub(crate) fn value(&mut self) -> Option<&'a str> {
        self.token(b',', MAX_VALUE_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_and_values(text: &str) -> Vec<(Option<&str>, Option<&str>)> {
        let mut t = Tokenizer::new(text);
        let mut out = Vec::new();
        while !t.at_end() {
            let n = t.name();
            let v = t.value();
            out.push((n, v));
        }
        out
    }

    #[test]
    fn splits_name_value_pairs() {
        assert_eq!(
            names_and_values("cpu=samples,depth=8"),
            vec![(Some("cpu"), Some("samples")), (Some("depth"), Some("8"))]
        );
    }

    #[test]
    fn empty_string_has_no_tokens() {
        assert!(Tokenizer::new("").at_end());
        assert!(names_and_values("").is_empty());
    }

    #[test]
    fn trailing_comma_is_consumed() {
        assert_eq!(
            names_and_values("cpu=samples,"),
            vec![(Some("cpu"), Some("samples"))]
        );
    }

    #[test]
    fn empty_element_becomes_part_of_next_name() {
        assert_eq!(
            names_and_values("cpu=samples,,heap=sites"),
            vec![
                (Some("cpu"), Some("samples")),
                (Some(",heap"), Some("sites"))
            ]
        );
    }

    #[test]
    fn name_runs_across_commas_to_the_next_equals() {
        let mut t = Tokenizer::new("doe,cpu=samples");
        assert_eq!(t.name(), Some("doe,cpu"));
        assert_eq!(t.value(), Some("samples"));
        assert!(t.at_end());
    }

    #[test]
    fn name_without_equals_takes_the_rest() {
        let mut t = Tokenizer::new("help,x");
        assert_eq!(t.name(), Some("help,x"));
        assert!(t.at_end());
        assert_eq!(t.value(), None);
    }

    #[test]
    fn name_length_limit_is_15() {
        assert_eq!(
            Tokenizer::new("abcdefghijklmno=1").name(),
            Some("abcdefghijklmno")
        );
        assert_eq!(Tokenizer::new("abcdefghijklmnop=1").name(), None);
        assert_eq!(Tokenizer::new("=1").name(), None);
    }

    #[test]
    fn value_may_contain_equals_and_colon() {
        let mut t = Tokenizer::new("file=a=b:c,doe=n");
        assert_eq!(t.name(), Some("file"));
        assert_eq!(t.value(), Some("a=b:c"));
        assert_eq!(t.name(), Some("doe"));
        assert_eq!(t.value(), Some("n"));
    }

    #[test]
    fn value_length_limit() {
        let ok = "x".repeat(MAX_VALUE_LEN);
        assert_eq!(Tokenizer::new(&ok).value(), Some(ok.as_str()));
        let long = "x".repeat(MAX_VALUE_LEN + 1);
        assert_eq!(Tokenizer::new(&long).value(), None);
        assert_eq!(Tokenizer::new(",x").value(), None);
    }

    #[test]
    fn other_separators() {
        let mut t = Tokenizer::new("host:80,x");
        assert_eq!(t.token(b':', 100), Some("host"));
        assert_eq!(t.token(b',', 100), Some("80"));
        assert_eq!(t.token(b',', 100), Some("x"));
        assert!(t.at_end());
    }

    #[test]
    fn multibyte_text_is_measured_in_bytes() {
        // 8 two-byte characters = 16 bytes: one byte too long for a name.
        let name = "é".repeat(8);
        assert_eq!(Tokenizer::new(&format!("{name}=1")).name(), None);
        let name = "é".repeat(7);
        assert_eq!(
            Tokenizer::new(&format!("{name}=1")).name(),
            Some(name.as_str())
        );
    }
}
