//! Number conversions with the semantics of the C library's `strtol` and
//! `strtod` in the "C" locale (glibc flavour, 64-bit `long`).
//!
//! The original agent converted option values with these functions, and a
//! few of their corners are visible to users (masks ignore trailing garbage,
//! `cutoff=inf` is accepted, `depth= 5` is accepted because of the leading
//! blank). Both functions return the converted value together with the
//! number of bytes consumed, exactly like the C `endptr` protocol: zero
//! bytes consumed means "no conversion" and the value is 0.

/// `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Number of leading C white-space bytes of `s`.
fn skip_space(s: &[u8]) -> usize {
    s.iter().take_while(|&&b| is_c_space(b)).count()
}

/// Length of an optional leading `+`/`-` and whether it was `-`.
fn sign(s: &[u8]) -> (usize, bool) {
    match s.first() {
        Some(b'-') => (1, true),
        Some(b'+') => (1, false),
        _ => (0, false),
    }
}

/// True if `s` starts with `0x`/`0X` followed by a hexadecimal digit.
fn has_hex_prefix(s: &[u8]) -> bool {
    s.len() > 2 && s[0] == b'0' && (s[1] | 0x20) == b'x' && s[2].is_ascii_hexdigit()
}

/// Value of `b` as a digit in `base`, if it is one.
fn digit(b: u8, base: u32) -> Option<u32> {
    char::from(b).to_digit(base)
}

/// C `strtol(s, &end, base)` for a 64-bit `long`.
///
/// `base` is 0 (auto-detect: `0x` hex, leading `0` octal, else decimal) or
/// 2..=36. Leading white space and a sign are accepted; conversion stops at
/// the first byte that is not a digit. On overflow the result saturates to
/// `i64::MAX`/`i64::MIN` (C's `LONG_MAX`/`LONG_MIN`, `errno` is not modelled)
/// and all digits are still consumed. Returns `(value, bytes consumed)`.
pub(crate) fn strtol(s: &str, base: u32) -> (i64, usize) {
    assert!(
        base == 0 || (2..=36).contains(&base),
        "strtol: invalid base {base}"
    );
    let b = s.as_bytes();
    let mut pos = skip_space(b);
    let (sign_len, negative) = sign(&b[pos..]);
    pos += sign_len;

    let mut base = base;
    if (base == 0 || base == 16) && has_hex_prefix(&b[pos..]) {
        base = 16;
        pos += 2;
    } else if base == 0 {
        base = if b.get(pos) == Some(&b'0') { 8 } else { 10 };
    }

    // Magnitude limit: |LONG_MIN| for negative numbers, LONG_MAX otherwise.
    let limit: u64 = if negative { 1 << 63 } else { i64::MAX as u64 };
    let start = pos;
    let mut magnitude: u64 = 0;
    let mut overflow = false;
    while let Some(d) = b.get(pos).and_then(|&c| digit(c, base)) {
        match magnitude
            .checked_mul(u64::from(base))
            .and_then(|m| m.checked_add(u64::from(d)))
        {
            Some(m) if m <= limit => magnitude = m,
            _ => overflow = true,
        }
        pos += 1;
    }
    if pos == start {
        return (0, 0);
    }
    let value = match (overflow, negative) {
        (true, false) => i64::MAX,
        (true, true) => i64::MIN,
        // `magnitude <= 2^63` here, so the wrapping negation is exact.
        (false, true) => (magnitude as i64).wrapping_neg(),
        (false, false) => magnitude as i64,
    };
    (value, pos)
}

/// C `strtod(s, &end)` in the "C" locale.
///
/// Accepts leading white space, a sign, decimal numbers with optional
/// fraction and exponent (`1`, `1.`, `.5`, `2.5e-3`), hexadecimal floats
/// (`0x1.8p3`), `inf`/`infinity` and `nan`/`nan(chars)` (case-insensitive).
/// An exponent marker without digits is not consumed (`1e` converts `1`).
/// Returns `(value, bytes consumed)`; `(0.0, 0)` means no conversion.
///
/// Decimal input is rounded correctly (Rust's own parser does the
/// conversion). Hexadecimal input is exact for normal results; results in
/// the subnormal range may differ from glibc by one unit in the last place.
pub(crate) fn strtod(s: &str) -> (f64, usize) {
    let b = s.as_bytes();
    let lead = skip_space(b);
    let (sign_len, negative) = sign(&b[lead..]);
    let body = lead + sign_len;
    let parsed = special(&b[body..])
        .or_else(|| hex_float(&b[body..]))
        .or_else(|| decimal_float(&s[body..]));
    match parsed {
        Some((value, len)) => (if negative { -value } else { value }, body + len),
        None => (0.0, 0),
    }
}

/// `inf`, `infinity`, `nan`, `nan(n-char-sequence)`, case-insensitive.
fn special(s: &[u8]) -> Option<(f64, usize)> {
    let starts = |word: &[u8]| s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word);
    if starts(b"infinity") {
        Some((f64::INFINITY, 8))
    } else if starts(b"inf") {
        Some((f64::INFINITY, 3))
    } else if starts(b"nan") {
        // The parenthesised part is only consumed when it is well formed.
        let inner = s[3..].strip_prefix(b"(").map(|rest| {
            rest.iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count()
        });
        let len = match inner {
            Some(n) if s.get(4 + n) == Some(&b')') => 5 + n,
            _ => 3,
        };
        Some((f64::NAN, len))
    } else {
        None
    }
}

/// Length of a run of bytes satisfying `pred` at the start of `s`.
fn run(s: &[u8], pred: impl Fn(u8) -> bool) -> usize {
    s.iter().take_while(|&&c| pred(c)).count()
}

/// Length of an exponent part (`e-12`, `P+3`) at the start of `s`, or 0 if
/// there is no marker or no digits after it.
fn exponent_len(s: &[u8], markers: [u8; 2]) -> usize {
    if s.is_empty() || !markers.contains(&s[0]) {
        return 0;
    }
    let (sign_len, _) = sign(&s[1..]);
    let digits = run(&s[1 + sign_len..], |c| c.is_ascii_digit());
    if digits == 0 {
        0
    } else {
        1 + sign_len + digits
    }
}

/// Unsigned decimal floating-point number (mantissa with at least one digit,
/// optional exponent).
fn decimal_float(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let int_digits = run(b, |c| c.is_ascii_digit());
    let mut len = int_digits;
    let mut frac_digits = 0;
    if b.get(len) == Some(&b'.') {
        frac_digits = run(&b[len + 1..], |c| c.is_ascii_digit());
        if int_digits + frac_digits > 0 {
            len += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    len += exponent_len(&b[len..], [b'e', b'E']);
    // The accepted text is a subset of what Rust's float grammar accepts,
    // so this parse cannot fail; it is correctly rounded and saturates to
    // infinity or zero on huge exponents, as strtod does.
    let value = s[..len].parse::<f64>().ok()?;
    Some((value, len))
}

/// Unsigned hexadecimal floating-point number `0x<hex>[.<hex>][p<exp>]`.
fn hex_float(s: &[u8]) -> Option<(f64, usize)> {
    if s.len() < 3 || s[0] != b'0' || (s[1] | 0x20) != b'x' {
        return None;
    }
    let digits_start = 2;
    let int_digits = run(&s[digits_start..], |c| c.is_ascii_hexdigit());
    let mut len = digits_start + int_digits;
    let mut frac_digits = 0;
    if s.get(len) == Some(&b'.') {
        frac_digits = run(&s[len + 1..], |c| c.is_ascii_hexdigit());
    }
    if int_digits + frac_digits == 0 {
        // "0x" without hex digits: only the "0" converts (decimal path).
        return None;
    }
    let frac_start = len + 1;
    if frac_digits > 0 || s.get(len) == Some(&b'.') {
        len += 1 + frac_digits;
    }
    let exp_len = exponent_len(&s[len..], [b'p', b'P']);
    let exp_text = &s[len..len + exp_len];
    len += exp_len;

    // Collect up to 16 significant hex digits (64 bits); later non-zero
    // digits only set a sticky bit, which is enough for correct rounding to
    // the 53-bit mantissa of an f64.
    let mut mantissa: u64 = 0;
    let mut shift: i64 = 0; // binary exponent adjustment
    let mut significant = 0;
    let int_part = &s[digits_start..digits_start + int_digits];
    let frac_part = if frac_digits > 0 {
        &s[frac_start..frac_start + frac_digits]
    } else {
        &[][..]
    };
    for (i, &c) in int_part.iter().chain(frac_part.iter()).enumerate() {
        let d = u64::from(digit(c, 16).unwrap_or(0));
        let in_fraction = i >= int_digits;
        if significant < 16 {
            if mantissa != 0 || d != 0 {
                mantissa = (mantissa << 4) | d;
                significant += 1;
            }
            if in_fraction {
                shift -= 4;
            }
        } else {
            if d != 0 {
                mantissa |= 1;
            }
            if !in_fraction {
                shift += 4;
            }
        }
    }
    let exp: i64 = if exp_text.is_empty() {
        0
    } else {
        let text = std::str::from_utf8(&exp_text[1..]).unwrap_or("0");
        strtol(text, 10).0
    };
    let total = exp.saturating_add(shift);
    Some((scale_by_pow2(mantissa as f64, total), len))
}

/// `x * 2^e` without intermediate overflow for large |e|.
fn scale_by_pow2(mut x: f64, e: i64) -> f64 {
    if x == 0.0 {
        return x;
    }
    let mut e = e.clamp(-5000, 5000) as i32;
    while e != 0 {
        let step = e.clamp(-1000, 1000);
        x *= 2f64.powi(step);
        e -= step;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_decimal() {
        assert_eq!(strtol("42", 10), (42, 2));
        assert_eq!(strtol("-42", 10), (-42, 3));
        assert_eq!(strtol("+7", 10), (7, 2));
        assert_eq!(strtol("  \t\n\x0b\x0c\r12", 10), (12, 9));
        assert_eq!(strtol("12abc", 10), (12, 2));
        assert_eq!(strtol("007", 10), (7, 3));
        assert_eq!(strtol("0x10", 10), (0, 1));
        assert_eq!(strtol("1 2", 10), (1, 1));
    }

    #[test]
    fn strtol_no_conversion() {
        assert_eq!(strtol("", 10), (0, 0));
        assert_eq!(strtol("abc", 10), (0, 0));
        assert_eq!(strtol("   ", 10), (0, 0));
        assert_eq!(strtol("-", 10), (0, 0));
        assert_eq!(strtol(" +x", 0), (0, 0));
        assert_eq!(strtol("--1", 10), (0, 0));
    }

    #[test]
    fn strtol_base0_prefixes() {
        assert_eq!(strtol("0x1F", 0), (31, 4));
        assert_eq!(strtol("0X1f", 0), (31, 4));
        assert_eq!(strtol("017", 0), (15, 3));
        assert_eq!(strtol("0", 0), (0, 1));
        assert_eq!(strtol("08", 0), (0, 1));
        assert_eq!(strtol("19", 0), (19, 2));
        assert_eq!(strtol("-0x10", 0), (-16, 5));
        assert_eq!(strtol(" 0x4zz", 0), (4, 4));
        // "0x" without a hex digit converts just the "0".
        assert_eq!(strtol("0x", 0), (0, 1));
        assert_eq!(strtol("0xg", 0), (0, 1));
    }

    #[test]
    fn strtol_other_bases() {
        assert_eq!(strtol("ff", 16), (255, 2));
        assert_eq!(strtol("0xff", 16), (255, 4));
        assert_eq!(strtol("777", 8), (511, 3));
        assert_eq!(strtol("1012", 2), (5, 3));
        assert_eq!(strtol("zz", 36), (1295, 2));
    }

    #[test]
    fn strtol_overflow_saturates_and_consumes() {
        assert_eq!(strtol("9223372036854775807", 10), (i64::MAX, 19));
        assert_eq!(strtol("9223372036854775808", 10), (i64::MAX, 19));
        assert_eq!(strtol("-9223372036854775808", 10), (i64::MIN, 20));
        assert_eq!(strtol("-9223372036854775809", 10), (i64::MIN, 20));
        assert_eq!(strtol("99999999999999999999999x", 10), (i64::MAX, 23));
        assert_eq!(strtol("0xffffffffffffffffff", 0), (i64::MAX, 20));
    }

    #[test]
    #[should_panic(expected = "invalid base")]
    fn strtol_rejects_bad_base() {
        let _ = strtol("1", 1);
    }

    #[test]
    fn strtod_decimal() {
        assert_eq!(strtod("0.0001"), (0.0001, 6));
        assert_eq!(strtod("1"), (1.0, 1));
        assert_eq!(strtod("1."), (1.0, 2));
        assert_eq!(strtod(".5"), (0.5, 2));
        assert_eq!(strtod("-2.5"), (-2.5, 4));
        assert_eq!(strtod("+2.5"), (2.5, 4));
        assert_eq!(strtod(" \t1e3"), (1000.0, 5));
        assert_eq!(strtod("1E-2"), (0.01, 4));
        assert_eq!(strtod("1.e+2"), (100.0, 5));
        assert_eq!(strtod("5e-1x"), (0.5, 4));
        assert_eq!(strtod("0.1"), (0.1, 3));
    }

    #[test]
    fn strtod_partial_exponent_not_consumed() {
        assert_eq!(strtod("1e"), (1.0, 1));
        assert_eq!(strtod("1e+"), (1.0, 1));
        assert_eq!(strtod("2E-x"), (2.0, 1));
        assert_eq!(strtod("3.5ee"), (3.5, 3));
    }

    #[test]
    fn strtod_no_conversion() {
        assert_eq!(strtod(""), (0.0, 0));
        assert_eq!(strtod("."), (0.0, 0));
        assert_eq!(strtod("-"), (0.0, 0));
        assert_eq!(strtod("e5"), (0.0, 0));
        assert_eq!(strtod("abc"), (0.0, 0));
        assert_eq!(strtod("  "), (0.0, 0));
        assert_eq!(strtod("-.e1"), (0.0, 0));
        assert_eq!(strtod("in"), (0.0, 0));
        assert_eq!(strtod("na"), (0.0, 0));
    }

    #[test]
    fn strtod_extremes() {
        assert_eq!(strtod("1e999"), (f64::INFINITY, 5));
        assert_eq!(strtod("-1e999"), (f64::NEG_INFINITY, 6));
        assert_eq!(strtod("1e-999"), (0.0, 6));
        assert_eq!(strtod("1e99999999999999999999"), (f64::INFINITY, 22));
        assert_eq!(strtod("1.7976931348623157e308"), (f64::MAX, 22));
        assert_eq!(strtod("4.9e-324"), (f64::from_bits(1), 8));
    }

    #[test]
    fn strtod_infinity_and_nan() {
        assert_eq!(strtod("inf"), (f64::INFINITY, 3));
        assert_eq!(strtod("INF"), (f64::INFINITY, 3));
        assert_eq!(strtod("Infinity"), (f64::INFINITY, 8));
        assert_eq!(strtod("infinit"), (f64::INFINITY, 3));
        assert_eq!(strtod("-inf"), (f64::NEG_INFINITY, 4));
        assert_eq!(strtod("infinityx"), (f64::INFINITY, 8));
        let (v, n) = strtod("nan");
        assert!(v.is_nan() && n == 3);
        let (v, n) = strtod("NaN");
        assert!(v.is_nan() && n == 3);
        let (v, n) = strtod("-nan");
        assert!(v.is_nan() && v.is_sign_negative() && n == 4);
        let (v, n) = strtod("nan(0x1_a)");
        assert!(v.is_nan() && n == 10);
        let (v, n) = strtod("nan()");
        assert!(v.is_nan() && n == 5);
        // Malformed payloads leave the parenthesis unconsumed.
        assert_eq!(strtod("nan(").1, 3);
        assert_eq!(strtod("nan(a-b)").1, 3);
    }

    #[test]
    fn strtod_hex() {
        assert_eq!(strtod("0x1p3"), (8.0, 5));
        assert_eq!(strtod("0x1.8p1"), (3.0, 7));
        assert_eq!(strtod("0X.8"), (0.5, 4));
        assert_eq!(strtod("0x10"), (16.0, 4));
        assert_eq!(strtod("0xA."), (10.0, 4));
        assert_eq!(strtod("-0x1p-2"), (-0.25, 7));
        assert_eq!(strtod("0x1p"), (1.0, 3));
        assert_eq!(strtod("0x1p+"), (1.0, 3));
        assert_eq!(strtod("0x1P+4z"), (16.0, 6));
        assert_eq!(strtod("0x1p-1074"), (f64::from_bits(1), 9));
        assert_eq!(strtod("0x1p1024"), (f64::INFINITY, 8));
        assert_eq!(strtod("0x1.fffffffffffffp1023"), (f64::MAX, 22));
        assert_eq!(strtod("0x0.0000000000000000000001p88"), (1.0, 29));
        // More than 16 significant digits: exact leading part, sticky tail.
        assert_eq!(strtod("0x100000000000000000"), (2f64.powi(68), 20));
        // Just above a rounding tie: only the sticky bit makes it round up.
        assert_eq!(
            strtod("0x1000000000000080000000001"),
            (2f64.powi(96) + 2f64.powi(44), 27)
        );
        assert_eq!(strtod("0x1000000000000080000000000"), (2f64.powi(96), 27));
        // "0x" without digits converts only the leading 0.
        assert_eq!(strtod("0x"), (0.0, 1));
        assert_eq!(strtod("0xg"), (0.0, 1));
        assert_eq!(strtod("0x.p1"), (0.0, 1));
    }
}
