//! `closed_at`: whole UTC seconds, written `YYYY-MM-DDTHH:MM:SSZ`.

use core::fmt;

/// A UTC instant with whole-second precision, years 0000 through 9999 (the range the
/// `YYYY-MM-DDTHH:MM:SSZ` form can write).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UtcSecond(i64);

/// Seconds from 1970-01-01T00:00:00Z to 0000-01-01T00:00:00Z.
const MIN: i64 = -62_167_219_200;
/// Seconds from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
const MAX: i64 = 253_402_300_799;

impl UtcSecond {
    /// The instant `secs` seconds after the Unix epoch, if its year is 0000..=9999.
    pub fn from_unix(secs: i64) -> Option<Self> {
        (MIN..=MAX).contains(&secs).then_some(Self(secs))
    }

    /// Seconds since the Unix epoch.
    pub fn unix(self) -> i64 {
        self.0
    }

    /// Parses exactly `YYYY-MM-DDTHH:MM:SSZ` (20 bytes) with a real calendar date, hours 00-23,
    /// minutes and seconds 00-59.
    pub fn parse(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() != 20
            || b[4] != b'-'
            || b[7] != b'-'
            || b[10] != b'T'
            || b[13] != b':'
            || b[16] != b':'
            || b[19] != b'Z'
        {
            return None;
        }
        let num = |r: core::ops::Range<usize>| -> Option<i64> {
            b[r].iter().try_fold(0i64, |acc, &c| {
                c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
            })
        };
        let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
            return None;
        }
        if h > 23 || mi > 59 || se > 59 {
            return None;
        }
        Some(Self(
            days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se,
        ))
    }

    /// Appends the 20-byte form.
    pub fn write(self, out: &mut Vec<u8>) {
        let days = self.0.div_euclid(86_400);
        let secs = self.0.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let two = |out: &mut Vec<u8>, v: i64| {
            out.push(b'0' + (v / 10) as u8);
            out.push(b'0' + (v % 10) as u8);
        };
        two(out, y / 100);
        two(out, y % 100);
        out.push(b'-');
        two(out, m);
        out.push(b'-');
        two(out, d);
        out.push(b'T');
        two(out, secs / 3600);
        out.push(b':');
        two(out, secs / 60 % 60);
        out.push(b':');
        two(out, secs % 60);
        out.push(b'Z');
    }
}

impl fmt::Display for UtcSecond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::with_capacity(20);
        self.write(&mut out);
        f.write_str(core::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        let t = UtcSecond::parse("2026-06-05T00:00:01Z").unwrap();
        assert_eq!(t.unix(), 1_780_617_601);
        assert_eq!(t.to_string(), "2026-06-05T00:00:01Z");
        assert_eq!(
            UtcSecond::from_unix(0).unwrap().to_string(),
            "1970-01-01T00:00:00Z"
        );
        assert_eq!(
            UtcSecond::from_unix(MIN).unwrap().to_string(),
            "0000-01-01T00:00:00Z"
        );
        assert_eq!(
            UtcSecond::from_unix(MAX).unwrap().to_string(),
            "9999-12-31T23:59:59Z"
        );
        assert!(UtcSecond::from_unix(MIN - 1).is_none());
        assert!(UtcSecond::from_unix(MAX + 1).is_none());
    }

    #[test]
    fn calendar_rules() {
        for ok in [
            "2024-02-29T23:59:59Z",
            "2000-02-29T00:00:00Z",
            "2026-12-31T00:00:00Z",
        ] {
            assert_eq!(UtcSecond::parse(ok).unwrap().to_string(), ok);
        }
        for bad in [
            "2023-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:60:00Z",
            "2026-01-01T00:00:60Z",
            "2026-01-01 00:00:00Z",
            "2026-01-01T00:00:00z",
            "2026-01-01T00:00:00+00:00",
            "2026-1-01T00:00:00Z",
            "+026-01-01T00:00:00Z",
        ] {
            assert!(UtcSecond::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn every_day_of_four_centuries_round_trips() {
        let mut secs = UtcSecond::parse("1899-12-31T12:34:56Z").unwrap().unix();
        for _ in 0..146_097 {
            let t = UtcSecond::from_unix(secs).unwrap();
            assert_eq!(UtcSecond::parse(&t.to_string()), Some(t));
            secs += 86_400;
        }
    }
}
