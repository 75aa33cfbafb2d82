//! Rendering JVM type signatures as Java-style class names.
//!
//! `Ljava/lang/String;` -> `java.lang.String`, `[[I` -> `int[][]`,
//! `E` -> `enum`, anything starting with `(` -> `()`, anything malformed ->
//! `Unknown_class`.

use std::borrow::Cow;

use super::model::BasicType;

/// Name printed for a signature that cannot be rendered.
pub const UNKNOWN_CLASS: &str = "Unknown_class";

/// Render a JVM type signature as a Java-style name.
pub fn render_class_name(sig: &str) -> Cow<'_, str> {
    let dims = sig.bytes().take_while(|&b| b == b'[').count();
    let base = render_base(&sig[dims..]);
    if dims == 0 {
        return base;
    }
    let mut s = String::with_capacity(base.len() + 2 * dims);
    s.push_str(&base);
    for _ in 0..dims {
        s.push_str("[]");
    }
    Cow::Owned(s)
}

/// Render a signature that does not start with `[`.
fn render_base(sig: &str) -> Cow<'_, str> {
    let bytes = sig.as_bytes();
    let Some(&first) = bytes.first() else {
        return Cow::Borrowed(UNKNOWN_CLASS);
    };
    match first {
        b'L' => match sig.find(';') {
            Some(end) => {
                let name = &sig[1..end];
                if name.contains('/') {
                    Cow::Owned(name.replace('/', "."))
                } else {
                    Cow::Borrowed(name)
                }
            }
            None => Cow::Borrowed(UNKNOWN_CLASS),
        },
        b'(' => Cow::Borrowed("()"),
        b'E' => Cow::Borrowed("enum"),
        b'V' => Cow::Borrowed("void"),
        c => match BasicType::from_sig_char(c).and_then(BasicType::keyword) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Borrowed(UNKNOWN_CLASS),
        },
    }
}

/// Binary ALLOC SITES "array kind" of a class signature: 0 for a non-array
/// class, else the element's basic type code (2 for arrays of objects or of
/// arrays).
pub fn site_array_kind(class_sig: &str) -> u8 {
    let b = class_sig.as_bytes();
    if b.first() != Some(&b'[') {
        return 0;
    }
    match b.get(1).copied().and_then(BasicType::from_sig_char) {
        Some(t) => t.code(),
        None => BasicType::Object.code(),
    }
}

/// Type name of a primitive array with the given element type (`char[]`).
pub fn prim_array_name(elem: BasicType) -> &'static str {
    match elem {
        BasicType::Boolean => "boolean[]",
        BasicType::Char => "char[]",
        BasicType::Float => "float[]",
        BasicType::Double => "double[]",
        BasicType::Byte => "byte[]",
        BasicType::Short => "short[]",
        BasicType::Int => "int[]",
        BasicType::Long => "long[]",
        BasicType::Object => "java.lang.Object[]",
    }
}

/// [`render_class_name`] written straight into a formatter, without the
/// allocation of a `/`-to-`.` copy: heap dumps print one name per object.
pub struct ClassName<'a>(pub &'a str);

impl std::fmt::Display for ClassName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sig = self.0;
        let dims = sig.bytes().take_while(|&b| b == b'[').count();
        let base = &sig[dims..];
        match base
            .strip_prefix('L')
            .and_then(|b| b.find(';').map(|end| &b[..end]))
        {
            Some(name) => {
                for (i, part) in name.split('/').enumerate() {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(part)?;
                }
            }
            None => f.write_str(&render_base(base))?,
        }
        for _ in 0..dims {
            f.write_str("[]")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_signatures() {
        let cases = [
            ("Ljava/lang/String;", "java.lang.String"),
            ("Ljava/util/HashMap$Node;", "java.util.HashMap$Node"),
            ("LHello;", "Hello"),
            ("[I", "int[]"),
            ("[[I", "int[][]"),
            ("[Ljava/lang/String;", "java.lang.String[]"),
            ("[[Ljava/lang/Object;", "java.lang.Object[][]"),
            ("B", "byte"),
            ("C", "char"),
            ("D", "double"),
            ("F", "float"),
            ("I", "int"),
            ("J", "long"),
            ("S", "short"),
            ("Z", "boolean"),
            ("V", "void"),
            ("E", "enum"),
            ("(I)V", "()"),
            ("", "Unknown_class"),
            ("Ljava/lang/String", "Unknown_class"),
            ("Q", "Unknown_class"),
            ("[Q", "Unknown_class[]"),
            ("[", "Unknown_class[]"),
        ];
        for (sig, want) in cases {
            assert_eq!(render_class_name(sig), want, "sig {sig:?}");
        }
    }

    #[test]
    fn site_kinds() {
        assert_eq!(site_array_kind("Ljava/lang/String;"), 0);
        assert_eq!(site_array_kind("[Ljava/lang/String;"), 2);
        assert_eq!(site_array_kind("[[I"), 2);
        assert_eq!(site_array_kind("[Z"), 4);
        assert_eq!(site_array_kind("[C"), 5);
        assert_eq!(site_array_kind("[F"), 6);
        assert_eq!(site_array_kind("[D"), 7);
        assert_eq!(site_array_kind("[B"), 8);
        assert_eq!(site_array_kind("[S"), 9);
        assert_eq!(site_array_kind("[I"), 10);
        assert_eq!(site_array_kind("[J"), 11);
    }

    #[test]
    fn class_name_display_matches_render_class_name() {
        for sig in [
            "Ljava/lang/String;",
            "LNoPackage;",
            "[[Ljava/util/Map$Entry;",
            "[I",
            "[[J",
            "I",
            "E",
            "V",
            "(II)V",
            "",
            "[",
            "Lbroken",
            "[Lbroken",
            "Q",
            "L;",
            "L/a//b/;",
        ] {
            assert_eq!(
                ClassName(sig).to_string(),
                render_class_name(sig),
                "{sig:?}"
            );
        }
    }

    #[test]
    fn prim_array_names() {
        assert_eq!(prim_array_name(BasicType::Char), "char[]");
        assert_eq!(prim_array_name(BasicType::Long), "long[]");
    }
}
