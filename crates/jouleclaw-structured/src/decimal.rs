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

/// Compares two valid JSON number tokens by value.
pub(crate) fn cmp(a: &[u8], b: &[u8]) -> Ordering {
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
            assert_eq!(
                cmp(b.as_bytes(), a.as_bytes()),
                want.reverse(),
                "{b} vs {a}"
            );
        }
    }
}
