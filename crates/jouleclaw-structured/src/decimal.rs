//! Exact comparison of two JSON number tokens as decimal numbers (no rounding to `f64`).

use core::cmp::Ordering;

/// Exponents are clamped to this magnitude. A document token is at most `max_number_chars`
/// (<= 128) long and a bound comes from an `f64`, so one side's exponent is small; a clamped
/// exponent still orders correctly against it.
const EXP_CLAMP: i64 = 1_000_000_000_000_000;

/// A number token as sign, significant digits (no leading or trailing zeros) and the decimal
/// exponent of the position just before the first significant digit: value =
/// `0.d1d2d3... x 10^point`.
struct Parts<'a> {
    neg: bool,
    int: &'a [u8],
    frac: &'a [u8],
    point: i64,
}

fn parse(t: &[u8]) -> Parts<'_> {
    let (neg, t) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t),
    };
    let mant_end = t
        .iter()
        .position(|&c| c == b'e' || c == b'E')
        .unwrap_or(t.len());
    let (mant, exp) = t.split_at(mant_end);
    let mut e: i64 = 0;
    if let Some((_, digits)) = exp.split_first() {
        let (eneg, digits) = match digits.split_first() {
            Some((b'-', r)) => (true, r),
            Some((b'+', r)) => (false, r),
            _ => (false, digits),
        };
        for &d in digits {
            e = (e * 10 + i64::from(d - b'0')).min(EXP_CLAMP);
        }
        if eneg {
            e = -e;
        }
    }
    let dot = mant.iter().position(|&c| c == b'.').unwrap_or(mant.len());
    let int = &mant[..dot];
    let frac = mant.get(dot + 1..).unwrap_or_default();
    // Significant digits: int ++ frac without leading zeros (trailing zeros ignored by cmp).
    let lead_int = int.iter().take_while(|&&c| c == b'0').count();
    let int = &int[lead_int..];
    let (frac, point) = if int.is_empty() {
        let lead = frac.iter().take_while(|&&c| c == b'0').count();
        (&frac[lead..], e - lead as i64)
    } else {
        (frac, e + int.len() as i64)
    };
    Parts {
        neg,
        int,
        frac,
        point,
    }
}

fn digits<'a>(p: &'a Parts<'a>) -> impl Iterator<Item = u8> + 'a {
    p.int.iter().chain(p.frac.iter()).copied()
}

fn is_zero(p: &Parts<'_>) -> bool {
    digits(p).all(|d| d == b'0')
}

fn cmp_magnitude(a: &Parts<'_>, b: &Parts<'_>) -> Ordering {
    match (is_zero(a), is_zero(b)) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    match a.point.cmp(&b.point) {
        Ordering::Equal => {}
        o => return o,
    }
    let mut x = digits(a);
    let mut y = digits(b);
    loop {
        match (x.next(), y.next()) {
            (None, None) => return Ordering::Equal,
            (Some(p), None) => {
                return if p != b'0' || x.any(|d| d != b'0') {
                    Ordering::Greater
                } else {
                    Ordering::Equal
                };
            }
            (None, Some(q)) => {
                return if q != b'0' || y.any(|d| d != b'0') {
                    Ordering::Less
                } else {
                    Ordering::Equal
                };
            }
            (Some(p), Some(q)) if p != q => return p.cmp(&q),
            _ => {}
        }
    }
}

/// A token with at most 18 significant digits and a small exponent as `(neg, m, e)`:
/// value = `m x 10^e` exactly (`m < 10^18`). `None` for anything else.
fn small(t: &[u8]) -> Option<(bool, u64, i32)> {
    let (neg, t) = match t.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, t),
    };
    let (mut m, mut e, mut sig, mut frac, mut i) = (0u64, 0i32, 0u32, false, 0usize);
    while let Some(&c) = t.get(i) {
        match c {
            b'0'..=b'9' => {
                if m != 0 || c != b'0' {
                    sig += 1;
                    if sig > 18 {
                        return None;
                    }
                }
                m = m * 10 + u64::from(c - b'0');
                if frac {
                    e -= 1;
                }
            }
            b'.' => frac = true,
            b'e' | b'E' => break,
            _ => return None,
        }
        i += 1;
    }
    if let Some(exp) = t.get(i + 1..) {
        let (eneg, digits) = match exp.split_first() {
            Some((b'-', r)) => (true, r),
            Some((b'+', r)) => (false, r),
            _ => (false, exp),
        };
        if digits.is_empty() || digits.len() > 4 {
            return None;
        }
        let mut x = 0i32;
        for &d in digits {
            x = x * 10 + i32::from(d.wrapping_sub(b'0'));
        }
        e += if eneg { -x } else { x };
    }
    Some((neg, m, e))
}

/// [`cmp`] of two [`small`] tokens, when their exponents are close enough to compare the
/// significands scaled to a common exponent in `u128` (below 10^38).
fn cmp_small(a: (bool, u64, i32), b: (bool, u64, i32)) -> Option<Ordering> {
    let sign = |(neg, m, _): (bool, u64, i32)| {
        if m == 0 {
            0
        } else if neg {
            -1
        } else {
            1
        }
    };
    let (sa, sb) = (sign(a), sign(b));
    if sa != sb || sa == 0 {
        return Some(sa.cmp(&sb));
    }
    let e = a.2.min(b.2);
    let (da, db) = (a.2 - e, b.2 - e);
    if da > 20 || db > 20 {
        return None;
    }
    let ma = u128::from(a.1) * 10u128.pow(da.unsigned_abs());
    let mb = u128::from(b.1) * 10u128.pow(db.unsigned_abs());
    Some(if sa > 0 { ma.cmp(&mb) } else { mb.cmp(&ma) })
}

/// Writes the value of a valid JSON number token as a text that is equal for equal values:
/// `0` for zero, else the sign, the significant digits (no leading or trailing zeros), `e` and
/// the exponent of the point before them (`1.50`, `15e-1` and `0.15e1` are all `15e1`). A
/// token whose exponent has more than 15 digits (where [`parse`] clamps it) is written as `~`
/// and the token itself: equal to the same text only.
pub(crate) fn canonical(t: &[u8], out: &mut Vec<u8>) {
    let exp_digits = t
        .iter()
        .position(|&c| c == b'e' || c == b'E')
        .map_or(0, |at| {
            t[at + 1..]
                .iter()
                .skip_while(|&&c| c == b'+' || c == b'-' || c == b'0')
                .count()
        });
    if exp_digits > 15 {
        out.push(b'~');
        out.extend_from_slice(t);
        return;
    }
    let p = parse(t);
    if is_zero(&p) {
        out.push(b'0');
        return;
    }
    if p.neg {
        out.push(b'-');
    }
    let start = out.len();
    out.extend(digits(&p));
    while out.len() > start && out.last() == Some(&b'0') {
        out.pop();
    }
    out.push(b'e');
    out.extend_from_slice(p.point.to_string().as_bytes());
}

/// Compares two valid JSON number tokens by value.
pub(crate) fn cmp(a: &[u8], b: &[u8]) -> Ordering {
    cmp_prepared(&Prepared::new(a), &Prepared::new(b))
}

/// A valid JSON number token with its [`small`] form read once, for comparisons with several
/// other tokens (a document's number against its bounds).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prepared<'a> {
    text: &'a [u8],
    small: Option<(bool, u64, i32)>,
}

impl<'a> Prepared<'a> {
    pub(crate) fn new(text: &'a [u8]) -> Self {
        Self {
            text,
            small: small(text),
        }
    }
}

/// [`cmp`] of two prepared tokens.
pub(crate) fn cmp_prepared(a: &Prepared<'_>, b: &Prepared<'_>) -> Ordering {
    if let (Some(x), Some(y)) = (a.small, b.small)
        && let Some(o) = cmp_small(x, y)
    {
        return o;
    }
    cmp_digits(a.text, b.text)
}

/// [`cmp`] digit by digit, for tokens of any length and exponent.
fn cmp_digits(a: &[u8], b: &[u8]) -> Ordering {
    let (pa, pb) = (parse(a), parse(b));
    let (za, zb) = (is_zero(&pa), is_zero(&pb));
    let sa = if za {
        0
    } else if pa.neg {
        -1
    } else {
        1
    };
    let sb = if zb {
        0
    } else if pb.neg {
        -1
    } else {
        1
    };
    match sa.cmp(&sb) {
        Ordering::Equal => {}
        o => return o,
    }
    match sa {
        0 => Ordering::Equal,
        1 => cmp_magnitude(&pa, &pb),
        _ => cmp_magnitude(&pb, &pa),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(t: &str) -> String {
        let mut out = Vec::new();
        canonical(t.as_bytes(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn equal_values_have_one_canonical_text_and_others_differ() {
        for t in ["15e-1", "1.50", "0.15e1", "150E-2", "1.5"] {
            assert_eq!(canon(t), "15e1", "{t}");
        }
        for t in ["0", "-0", "0.000", "0e99", "-0.0E-3"] {
            assert_eq!(canon(t), "0", "{t}");
        }
        assert_eq!(canon("100"), "1e3");
        assert_eq!(canon("1e2"), "1e3");
        assert_eq!(canon("-0.001"), "-1e-2");
        assert_ne!(canon("1"), canon("-1"));
        assert_ne!(canon("1"), canon("10"));
        assert_ne!(canon("12"), canon("21"));
        // Beyond the clamp: the text itself.
        assert_eq!(canon("1e1000000000000000"), "~1e1000000000000000");
        assert_ne!(canon("1e1000000000000000"), canon("1e1000000000000001"));
        assert_eq!(canon("1e0000000000000000001"), "1e2");
    }
    use proptest::prelude::*;

    /// A JSON number token: sign, integer part, fraction, exponent, of the shapes bounds and
    /// documents hold (short and long significands, small and large exponents).
    fn token() -> impl Strategy<Value = String> {
        (
            any::<bool>(),
            prop_oneof![Just("0".to_owned()), "[1-9][0-9]{0,22}"],
            proptest::option::of("[0-9]{1,22}"),
            proptest::option::of((prop_oneof![Just(""), Just("+"), Just("-")], 0u32..40)),
        )
            .prop_map(|(neg, int, frac, exp)| {
                let mut t = String::new();
                if neg {
                    t.push('-');
                }
                t.push_str(&int);
                if let Some(f) = frac {
                    t.push('.');
                    t.push_str(&f);
                }
                if let Some((sign, e)) = exp {
                    t.push_str(&format!("e{sign}{e}"));
                }
                t
            })
    }

    proptest! {
        /// The short-token comparison is the digit-by-digit one.
        #[test]
        fn the_fast_comparison_is_the_digit_comparison(a in token(), b in token()) {
            prop_assert_eq!(cmp(a.as_bytes(), b.as_bytes()), cmp_digits(a.as_bytes(), b.as_bytes()));
            let near = format!("{a}1");
            prop_assert_eq!(cmp(near.as_bytes(), a.as_bytes()), cmp_digits(near.as_bytes(), a.as_bytes()));
        }

        /// Two tokens have one canonical text exactly when they are equal values.
        #[test]
        fn canonical_texts_are_equal_exactly_for_equal_values(a in token(), b in token()) {
            // The same value written with one more zero.
            let at = a.find(['e', 'E']).unwrap_or(a.len());
            let zero = if a[..at].contains('.') { "0" } else { ".0" };
            let scaled = format!("{}{zero}{}", &a[..at], &a[at..]);
            for (x, y) in [(&a, &b), (&a, &scaled)] {
                prop_assert_eq!(canon(x) == canon(y), cmp(x.as_bytes(), y.as_bytes()).is_eq(), "{} {}", x, y);
            }
        }
    }

    #[test]
    fn decimal_comparison_is_exact_where_f64_is_not() {
        use Ordering::*;
        for (a, b, want) in [
            ("0.1", "0.1", Equal),
            ("0.10", "1e-1", Equal),
            ("-0", "0", Equal),
            ("-0.0e5", "0", Equal),
            ("1", "1.0000000000000000000001", Less),
            ("100", "1e2", Equal),
            ("99.999", "1E+2", Less),
            ("-5", "-4.9", Less),
            ("-5", "3", Less),
            ("1e999999999999999999999", "1.7976931348623157e308", Greater),
            ("1e-999999999999999999999", "5e-324", Less),
            ("0.000123", "1.23e-4", Equal),
            ("12345678901234567890", "12345678901234567891", Less),
        ] {
            assert_eq!(cmp(a.as_bytes(), b.as_bytes()), want, "{a} vs {b}");
            assert_eq!(cmp_digits(a.as_bytes(), b.as_bytes()), want, "{a} vs {b}");
            assert_eq!(
                cmp(b.as_bytes(), a.as_bytes()),
                want.reverse(),
                "{b} vs {a}"
            );
        }
    }
}
