//! Python number literals as JSON numbers.
//!
//! A model writes numbers the way Python spells them (`1_000`, `0x1F`, `.5`, `5.`,
//! `1e3`) and, in LFM2's case, with leading zeros (`month=07`). A JSON-schema-driven
//! client needs a JSON number of the same value, so each literal is rewritten to the
//! nearest JSON spelling of that value, never to a different value:
//!
//! - integers keep every digit (Python's `json.dumps` writes big ints exactly, and a
//!   client reading the text gets the model's value): underscores and leading zeros are
//!   dropped, `+` is dropped, `-0` is `0`; `0x` / `0o` / `0b` integers are converted to
//!   decimal exactly, up to [`MAX_RADIX_BITS`] bits (beyond that the spelling is kept as
//!   a JSON string: the conversion costs the square of the digits);
//! - floats keep the model's digits in JSON form: `.5` -> `0.5`, `5.` -> `5.0`,
//!   `1_0.5e+3` -> `10.5e+3`; a float whose value is not finite in binary64 (`1e999`)
//!   has no JSON number, so its spelling becomes a JSON string (it never becomes
//!   `Infinity` or `NaN`, which are not JSON);
//! - anything Python would not read as a number literal (`1j`, `0x`, `1__0`, `1.2.3`) is
//!   not a number: [`convert`] says so and the caller treats the value as malformed.

/// Non-decimal integers longer than this (in bits of their digits) keep their spelling.
pub(crate) const MAX_RADIX_BITS: usize = 4096;

/// What a number literal becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Number {
    /// This JSON number text.
    Json(String),
    /// No JSON number holds it: the spelling, as a JSON string.
    Spelling,
}

/// Whether `b` can continue a number token (the sign after an exponent is handled by
/// the reader, which knows the previous byte).
pub(crate) fn is_number_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

/// The digits of `s` in `radix` with Python's underscore rule (one `_` between two
/// digits; `lead_ok`: one `_` may also come first, after a `0x` prefix), or None.
fn digits(s: &str, radix: u32, lead_ok: bool) -> Option<String> {
    let b = s.as_bytes();
    let from = usize::from(lead_ok && b.first() == Some(&b'_'));
    let mut out = String::with_capacity(s.len());
    let mut prev_digit = false;
    for &c in &b[from..] {
        if c == b'_' {
            if !prev_digit {
                return None;
            }
            prev_digit = false;
            continue;
        }
        if !char::from(c).is_digit(radix) {
            return None;
        }
        out.push(char::from(c));
        prev_digit = true;
    }
    // Empty, or ending in `_`.
    prev_digit.then_some(out)
}

/// `digits` (ASCII, in `radix`) as a decimal integer, exactly. None when too long.
fn to_decimal(digits: &str, radix: u32) -> Option<String> {
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some("0".to_owned());
    }
    let bits = digits.len() * (radix.trailing_zeros() as usize);
    if bits > MAX_RADIX_BITS {
        return None;
    }
    // Little-endian limbs of 10^9.
    const BASE: u64 = 1_000_000_000;
    let mut limbs: Vec<u64> = vec![0];
    for c in digits.chars() {
        let mut carry = u64::from(c.to_digit(radix).expect("validated digit"));
        for l in &mut limbs {
            let v = *l * u64::from(radix) + carry;
            *l = v % BASE;
            carry = v / BASE;
        }
        while carry > 0 {
            limbs.push(carry % BASE);
            carry /= BASE;
        }
    }
    let mut out = limbs.last().expect("one limb").to_string();
    for l in limbs.iter().rev().skip(1) {
        out.push_str(&format!("{l:09}"));
    }
    Some(out)
}

/// Converts one number token (its sign included). See the module docs.
pub(crate) fn convert(tok: &str) -> Option<Number> {
    let (neg, body) = match tok.as_bytes().first()? {
        b'-' => (true, &tok[1..]),
        b'+' => (false, &tok[1..]),
        _ => (false, tok),
    };
    let lower = body.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            let d = digits(rest, radix, true)?;
            let Some(dec) = to_decimal(&d, radix) else {
                return Some(Number::Spelling);
            };
            let sign = if neg && dec != "0" { "-" } else { "" };
            return Some(Number::Json(format!("{sign}{dec}")));
        }
    }
    if lower.ends_with('j') {
        return None;
    }
    let (mantissa, exponent) = match lower.find('e') {
        Some(i) => (&lower[..i], Some(&lower[i + 1..])),
        None => (lower.as_str(), None),
    };
    let (int_part, frac) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], Some(&mantissa[i + 1..])),
        None => (mantissa, None),
    };
    let int_digits = if int_part.is_empty() {
        if frac.is_none_or(str::is_empty) {
            return None;
        }
        String::new()
    } else {
        digits(int_part, 10, false)?
    };
    let frac_digits = match frac {
        Some("") => Some(String::new()),
        Some(f) => Some(digits(f, 10, false)?),
        None => None,
    };
    let exp = match exponent {
        Some(e) => {
            let (sign, d) = match e.as_bytes().first() {
                Some(b'+') => ("+", &e[1..]),
                Some(b'-') => ("-", &e[1..]),
                _ => ("", e),
            };
            Some((sign, digits(d, 10, false)?))
        }
        None => None,
    };
    let int_norm = {
        let t = int_digits.trim_start_matches('0');
        if t.is_empty() {
            "0"
        } else {
            t
        }
    };
    if frac_digits.is_none() && exp.is_none() {
        let sign = if neg && int_norm != "0" { "-" } else { "" };
        return Some(Number::Json(format!("{sign}{int_norm}")));
    }
    let mut json = String::with_capacity(tok.len() + 3);
    if neg {
        json.push('-');
    }
    json.push_str(int_norm);
    if let Some(f) = &frac_digits {
        json.push('.');
        json.push_str(if f.is_empty() { "0" } else { f });
    }
    if let Some((sign, d)) = &exp {
        json.push('e');
        json.push_str(sign);
        json.push_str(d);
    }
    match json.parse::<f64>() {
        Ok(v) if v.is_finite() => Some(Number::Json(json)),
        _ => Some(Number::Spelling),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(tok: &str) -> String {
        match convert(tok) {
            Some(Number::Json(j)) => j,
            other => panic!("{tok}: {other:?}"),
        }
    }

    /// Every row of the README's number table.
    #[test]
    fn number_table() {
        for (tok, want) in [
            ("0", "0"),
            ("42", "42"),
            ("-7", "-7"),
            ("+7", "7"),
            ("-0", "0"),
            ("07", "7"),
            ("0007", "7"),
            ("00", "0"),
            ("1_000", "1000"),
            ("0x1F", "31"),
            ("0X_ff", "255"),
            ("-0x10", "-16"),
            ("0o17", "15"),
            ("0b101", "5"),
            ("0xFFFFFFFFFFFFFFFFFFFF", "1208925819614629174706175"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("1.5", "1.5"),
            (".5", "0.5"),
            ("5.", "5.0"),
            ("-.5", "-0.5"),
            ("1e3", "1e3"),
            ("1E+05", "1e+05"),
            ("2.5e-3", "2.5e-3"),
            ("1_0.5e1_0", "10.5e10"),
            ("007.5", "7.5"),
            ("-0.0", "-0.0"),
            ("1e-999", "1e-999"),
        ] {
            assert_eq!(json(tok), want, "{tok}");
            let v: serde_json::Value = serde_json::from_str(&json(tok)).unwrap();
            assert!(v.is_number(), "{tok}");
        }
    }

    #[test]
    fn non_finite_and_oversized_keep_their_spelling() {
        for tok in ["1e999", "-1e400", "9".repeat(400).as_str(), "1.5e309"] {
            let tok = if tok.len() > 100 {
                format!("{tok}.0")
            } else {
                tok.to_owned()
            };
            assert_eq!(convert(&tok), Some(Number::Spelling), "{tok}");
        }
        let big = format!("0x{}", "f".repeat(MAX_RADIX_BITS / 4 + 1));
        assert_eq!(convert(&big), Some(Number::Spelling));
        let fits = format!("0x{}", "f".repeat(MAX_RADIX_BITS / 4));
        assert!(matches!(convert(&fits), Some(Number::Json(_))));
    }

    #[test]
    fn not_numbers() {
        for tok in [
            "", "-", "1j", "0x", "0xg", "1__0", "_1", "1_", "1.2.3", "1e", "1e+", ".", "0b2", "1a",
            "e5",
        ] {
            assert_eq!(convert(tok), None, "{tok:?}");
        }
    }

    #[test]
    fn radix_conversion_matches_u128() {
        let mut rng = fastrand::Rng::with_seed(3);
        for _ in 0..2000 {
            let v: u128 = rng.u128(..);
            assert_eq!(json(&format!("0x{v:x}")), v.to_string());
            assert_eq!(json(&format!("0o{v:o}")), v.to_string());
            assert_eq!(json(&format!("0b{v:b}")), v.to_string());
        }
    }
}
