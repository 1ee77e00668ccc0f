//! Exact integers of any size as decimal digit strings, and the exact canonical text of a
//! decimal bound: what lets integer and number bounds be compared without rounding.

use core::cmp::Ordering;
use core::fmt;

use crate::grammar::MAX_NUMBER_CHARS_CEILING;

/// An integer: sign and magnitude as ASCII digits without leading zeros (`"0"` for zero, never
/// negative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Big {
    pub(crate) neg: bool,
    pub(crate) mag: Vec<u8>,
}

impl fmt::Display for Big {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.neg {
            f.write_str("-")?;
        }
        f.write_str(core::str::from_utf8(&self.mag).unwrap_or("0"))
    }
}

/// Orders two magnitudes (digit strings without leading zeros).
pub(crate) fn cmp_mag(a: &[u8], b: &[u8]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

impl Big {
    pub(crate) fn from_i64(v: i64) -> Big {
        Big {
            neg: v < 0,
            mag: v.unsigned_abs().to_string().into_bytes(),
        }
    }

    /// The `i64` value, if it fits.
    pub(crate) fn to_i64(&self) -> Option<i64> {
        core::str::from_utf8(&self.mag)
            .ok()?
            .parse::<i64>()
            .ok()
            .map(|m| if self.neg { -m } else { m })
    }

    fn is_zero(&self) -> bool {
        self.mag == b"0"
    }

    /// From a token's sign and digits (`-` optional, no fraction), e.g. a document's integer.
    pub(crate) fn from_token(t: &[u8]) -> Big {
        let (neg, d) = match t.split_first() {
            Some((b'-', r)) => (true, r),
            _ => (false, t),
        };
        let lead = d.iter().take_while(|&&c| c == b'0').count();
        let mag = if lead == d.len() {
            b"0".to_vec()
        } else {
            d[lead..].to_vec()
        };
        let neg = neg && mag != b"0";
        Big { neg, mag }
    }

    fn add_mag(m: &[u8]) -> Vec<u8> {
        let mut v = m.to_vec();
        for d in v.iter_mut().rev() {
            if *d == b'9' {
                *d = b'0';
            } else {
                *d += 1;
                return v;
            }
        }
        v.insert(0, b'1');
        v
    }

    fn sub_mag(m: &[u8]) -> Vec<u8> {
        // m >= 1
        let mut v = m.to_vec();
        for d in v.iter_mut().rev() {
            if *d == b'0' {
                *d = b'9';
            } else {
                *d -= 1;
                break;
            }
        }
        let lead = v.iter().take_while(|&&c| c == b'0').count();
        if lead == v.len() {
            b"0".to_vec()
        } else {
            v[lead..].to_vec()
        }
    }

    /// `self + 1`.
    pub(crate) fn succ(&self) -> Big {
        if self.neg {
            let mag = Self::sub_mag(&self.mag);
            let neg = mag != b"0";
            Big { neg, mag }
        } else {
            Big {
                neg: false,
                mag: Self::add_mag(&self.mag),
            }
        }
    }

    /// `self - 1`.
    pub(crate) fn pred(&self) -> Big {
        if self.neg || self.is_zero() {
            Big {
                neg: true,
                mag: Self::add_mag(&self.mag),
            }
        } else {
            Big {
                neg: false,
                mag: Self::sub_mag(&self.mag),
            }
        }
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.neg, other.neg) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => cmp_mag(&self.mag, &other.mag),
            (true, true) => cmp_mag(&other.mag, &self.mag),
        }
    }
}

/// A decimal token as sign, significant digits (no leading or trailing zeros; empty for zero)
/// and exponent: value = digits x 10^exp.
fn digits_exp(t: &str) -> (bool, Vec<u8>, i64) {
    let t = t.as_bytes();
    let (neg, t) = match t.split_first() {
        Some((b'-', r)) => (true, r),
        _ => (false, t),
    };
    let e_at = t
        .iter()
        .position(|&c| c == b'e' || c == b'E')
        .unwrap_or(t.len());
    let (mant, ex) = t.split_at(e_at);
    let mut e: i64 = 0;
    if let Some((_, ds)) = ex.split_first() {
        let (eneg, ds) = match ds.split_first() {
            Some((b'-', r)) => (true, r),
            Some((b'+', r)) => (false, r),
            _ => (false, ds),
        };
        for &d in ds {
            e = e.saturating_mul(10).saturating_add(i64::from(d - b'0'));
        }
        if eneg {
            e = -e;
        }
    }
    let mut digits = Vec::with_capacity(mant.len());
    for &c in mant {
        match c {
            b'.' => {}
            _ => digits.push(c),
        }
    }
    if let Some(dot) = mant.iter().position(|&c| c == b'.') {
        e = e.saturating_sub((mant.len() - dot - 1) as i64);
    }
    let lead = digits.iter().take_while(|&&c| c == b'0').count();
    digits.drain(..lead);
    while digits.last() == Some(&b'0') {
        digits.pop();
        e = e.saturating_add(1);
    }
    let neg = neg && !digits.is_empty();
    (neg, digits, e)
}

/// The exact canonical text of a decimal bound: the shortest round-trip text of its binary64
/// (ryu's notation) when that text has exactly the token's value, so every bound binary64
/// holds keeps its old spelling; otherwise the exact value as `<digits>e<exp>` (or plain
/// digits when the exponent is 0), nothing rounded.
pub(crate) fn canonical_decimal(text: &str, f: f64) -> String {
    let short = ryu::Buffer::new().format_finite(f).to_owned();
    if text.is_empty() || crate::decimal::cmp(short.as_bytes(), text.as_bytes()).is_eq() {
        return short;
    }
    let (neg, d, e) = digits_exp(text);
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push_str(core::str::from_utf8(&d).unwrap_or("0"));
    if e != 0 {
        s.push('e');
        s.push_str(&e.to_string());
    }
    s
}

/// Largest digit count a bound keeps: beyond it no document token (at most
/// `MAX_NUMBER_CHARS_CEILING` bytes) can reach it, so the bound is no bound.
const CAP: usize = MAX_NUMBER_CHARS_CEILING + 2;

/// `floor(x)` (`up` false) or `ceil(x)` (`up` true) of a decimal token; `Err(neg)` when its
/// magnitude is beyond any document integer (`neg`: towards minus infinity).
pub(crate) fn round(text: &str, up: bool) -> Result<Big, bool> {
    let (neg, d, e) = digits_exp(text);
    if d.is_empty() {
        return Ok(Big::from_i64(0));
    }
    let int_len = d.len() as i64 + e;
    if int_len > CAP as i64 {
        return Err(neg);
    }
    let (int, frac) = if e >= 0 {
        let mut v = d.clone();
        v.extend(core::iter::repeat_n(b'0', e as usize));
        (v, false)
    } else if int_len <= 0 {
        (b"0".to_vec(), true)
    } else {
        (d[..int_len as usize].to_vec(), true)
    };
    let b = Big::from_token(&int);
    let b = Big {
        neg: neg && !b.is_zero(),
        mag: b.mag,
    };
    Ok(match (frac, neg, up) {
        (false, _, _) => b,
        // 2.5 -> floor 2, ceil 3; -2.5 -> floor -3, ceil -2; -0.5 -> floor -1, ceil 0.
        (true, false, false) | (true, true, true) => b,
        (true, false, true) => b.succ(),
        (true, true, false) => Big {
            neg: true,
            mag: Big::add_mag(&b.mag),
        },
    })
}

/// Whether a positive magnitude with the decimal digit prefix `p` (non-empty, no leading zero)
/// can lie in `[lo, hi]` (magnitudes; `hi` `None`: unbounded).
pub(crate) fn prefix_reaches(p: &[u8], lo: &[u8], hi: Option<&[u8]>) -> bool {
    let Some(hi) = hi else {
        return true;
    };
    if cmp_mag(lo, hi).is_gt() {
        return false;
    }
    let mut low = p.to_vec();
    let mut high = p.to_vec();
    while low.len() <= hi.len() {
        if cmp_mag(&low, hi).is_le() && cmp_mag(&high, lo).is_ge() {
            return true;
        }
        low.push(b'0');
        high.push(b'9');
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(t: &str, up: bool) -> String {
        match round(t, up) {
            Ok(b) => b.to_string(),
            Err(neg) => format!("inf{neg}"),
        }
    }

    #[test]
    fn floor_and_ceil_are_exact() {
        for (t, f, c) in [
            ("2.5", "2", "3"),
            ("-2.5", "-3", "-2"),
            ("-0.5", "-1", "0"),
            ("0.5", "0", "1"),
            ("7", "7", "7"),
            ("1e2", "100", "100"),
            ("-0", "0", "0"),
            (
                "18446744073709551616.000000000000000001",
                "18446744073709551616",
                "18446744073709551617",
            ),
            ("1.5e-3", "0", "1"),
            ("1e999", "inffalse", "inffalse"),
            ("-1e999", "inftrue", "inftrue"),
        ] {
            assert_eq!(
                (r(t, false), r(t, true)),
                (f.to_owned(), c.to_owned()),
                "{t}"
            );
        }
        assert_eq!(Big::from_i64(-1).succ().to_string(), "0");
        assert_eq!(Big::from_i64(0).pred().to_string(), "-1");
        assert_eq!(Big::from_token(b"-1000").succ().to_string(), "-999");
        assert_eq!(Big::from_token(b"999").succ().to_string(), "1000");
        assert!(Big::from_token(b"-5") < Big::from_token(b"3"));
        assert!(Big::from_token(b"-50") < Big::from_token(b"-5"));
    }

    #[test]
    fn canonical_decimals_keep_ryu_spelling_and_are_exact_otherwise() {
        assert_eq!(canonical_decimal("2.50", 2.5), "2.5");
        assert_eq!(canonical_decimal("1e-7", 1e-7), "1e-7");
        assert_eq!(
            canonical_decimal("0.1000000000000000000001", 0.1),
            "1000000000000000000001e-22"
        );
        assert_eq!(
            canonical_decimal("18446744073709551617", 1.8446744073709552e19),
            "18446744073709551617"
        );
    }

    #[test]
    fn prefixes_reach_exactly() {
        assert!(prefix_reaches(b"9", b"90", Some(b"99")));
        assert!(!prefix_reaches(b"9", b"100", Some(b"899")));
        assert!(prefix_reaches(b"1", b"100", Some(b"199")));
        assert!(!prefix_reaches(b"2", b"100", Some(b"199")));
        assert!(prefix_reaches(b"2", b"100", None));
    }
}
