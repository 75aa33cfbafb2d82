//! Class name rendering. Our agent writes Java-style names
//! (`java.lang.String`, `int[]`, `java.lang.Object[][]`); HotSpot writes the
//! VM's internal forms (`java/lang/String`, `[I`, `[[Ljava/lang/Object;`).
//! Consumers compare and print the Java style.

/// Renders a class name, internal or Java style, in Java style.
pub fn java_class_name(raw: &str) -> String {
    let dims = raw.bytes().take_while(|&b| b == b'[').count();
    if dims == 0 {
        return raw.replace('/', ".");
    }
    let elem = &raw[dims..];
    let base = match elem {
        "B" => "byte".to_string(),
        "C" => "char".to_string(),
        "D" => "double".to_string(),
        "F" => "float".to_string(),
        "I" => "int".to_string(),
        "J" => "long".to_string(),
        "S" => "short".to_string(),
        "Z" => "boolean".to_string(),
        _ if elem.len() > 2 && elem.starts_with('L') && elem.ends_with(';') => {
            elem[1..elem.len() - 1].replace('/', ".")
        }
        // Not a descriptor: leave it recognisable rather than guess.
        _ => return raw.replace('/', "."),
    };
    let mut s = base;
    for _ in 0..dims {
        s.push_str("[]");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::java_class_name as j;

    #[test]
    fn renders_internal_and_java_names() {
        assert_eq!(j("java/lang/String"), "java.lang.String");
        assert_eq!(j("java.lang.String"), "java.lang.String");
        assert_eq!(j("[I"), "int[]");
        assert_eq!(j("[[Z"), "boolean[][]");
        assert_eq!(j("[Ljava/lang/String;"), "java.lang.String[]");
        assert_eq!(j("[[Ljava/lang/Object;"), "java.lang.Object[][]");
        assert_eq!(j("int[]"), "int[]");
        assert_eq!(j("java.lang.Object[][]"), "java.lang.Object[][]");
        assert_eq!(j("Main$Marker"), "Main$Marker");
        assert_eq!(j("[Q"), "[Q");
    }
}
