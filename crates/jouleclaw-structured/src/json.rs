//! The schema's JSON value, read strictly: duplicate keys are refused (serde_json's own
//! `Value` keeps the last one silently), member order is kept, numbers keep their kind.

use core::fmt;
use jouleclaw_stream::json_scan::unescaped_run;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON number as the schema wrote it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Num {
    /// An integer token that fits `i64`.
    Int(i64),
    /// Anything else (a fraction, an exponent, or an integer beyond `i64`), as `f64`.
    Float(f64),
}

/// A number: its value as the subset reads it, and the exact token text.
#[derive(Debug, Clone)]
pub(crate) struct Number {
    pub(crate) num: Num,
    /// The token exactly as written (filled in after parsing; no rounding).
    pub(crate) text: String,
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        crate::decimal::cmp(self.text.as_bytes(), other.text.as_bytes()).is_eq()
    }
}

/// A JSON value with its members in document order and no duplicate keys.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Num(Number),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub(crate) fn parse(bytes: &[u8]) -> Result<Json, String> {
        let mut v: Json = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        // serde reports numbers as i64/u64/f64 only; the exact token texts are taken from the
        // (already validated) text, in document order, which is the order of the tree.
        let mut tokens = number_tokens(bytes);
        v.fill_numbers(&mut tokens);
        Ok(v)
    }

    fn fill_numbers<'a>(&mut self, tokens: &mut impl Iterator<Item = &'a [u8]>) {
        match self {
            Json::Num(n) => {
                if let Some(t) = tokens.next() {
                    n.text = String::from_utf8_lossy(t).into_owned();
                }
            }
            Json::Arr(a) => a.iter_mut().for_each(|x| x.fill_numbers(tokens)),
            Json::Obj(m) => m.iter_mut().for_each(|(_, x)| x.fill_numbers(tokens)),
            _ => {}
        }
    }

    /// The number, if this is one.
    pub(crate) fn num(&self) -> Option<&Number> {
        match self {
            Json::Num(n) => Some(n),
            _ => None,
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// The number tokens of a valid JSON text, in order.
fn number_tokens(t: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut i = 0;
    core::iter::from_fn(move || {
        while i < t.len() {
            match t[i] {
                b'"' => {
                    i += 1;
                    loop {
                        // Inside a string of a valid JSON text no byte is below 0x20: the run ends
                        // at the next quote or backslash.
                        i += unescaped_run(t.get(i..).unwrap_or_default());
                        match t.get(i) {
                            Some(b'\\') => i += 2,
                            _ => break,
                        }
                    }
                    i += 1;
                }
                b'-' | b'0'..=b'9' => {
                    let start = i;
                    while i < t.len()
                        && matches!(t[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                    {
                        i += 1;
                    }
                    return t.get(start..i);
                }
                _ => i += 1,
            }
        }
        None
    })
}

fn number(num: Num) -> Json {
    Json::Num(Number {
        num,
        text: String::new(),
    })
}

/// Keys of one object compared one by one before a hash set takes over.
const SCAN: usize = 16;

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(number(Num::Int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(number(match i64::try_from(v) {
            Ok(i) => Num::Int(i),
            // Beyond i64: a float here; the exact text is kept beside it.
            Err(_) => Num::Float(v as f64),
        }))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(number(Num::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(Json::Arr(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut m: Vec<(String, Json)> = Vec::new();
        // Duplicate keys: the first few compared one by one; past [`SCAN`] keys found by
        // hashing, so an object of many keys costs linear time.
        let mut seen: Option<std::collections::HashSet<String>> = None;
        while let Some(k) = map.next_key::<String>()? {
            let repeated = match &mut seen {
                Some(set) => !set.insert(k.clone()),
                None => m.iter().any(|(x, _)| *x == k),
            };
            if repeated {
                return Err(de::Error::custom(format!("duplicate key \"{k}\"")));
            }
            let v = map.next_value()?;
            m.push((k, v));
            if seen.is_none() && m.len() >= SCAN {
                seen = Some(m.iter().map(|(x, _)| x.clone()).collect());
            }
        }
        Ok(Json::Obj(m))
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(num: Num, text: &str) -> Json {
        Json::Num(Number {
            num,
            text: text.into(),
        })
    }

    #[test]
    fn duplicate_keys_are_refused_where_serde_json_keeps_the_last() {
        assert!(Json::parse(br#"{"a":1,"a":2}"#).is_err());
        assert!(Json::parse(br#"{"a":{"b":1,"b":1}}"#).is_err());
        assert!(serde_json::from_slice::<serde_json::Value>(br#"{"a":1,"a":2}"#).is_ok());
        assert_eq!(
            Json::parse(br#"{"b":1,"a":[true,null,"x",-2,1.5]}"#),
            Ok(Json::Obj(vec![
                ("b".into(), t(Num::Int(1), "1")),
                (
                    "a".into(),
                    Json::Arr(vec![
                        Json::Bool(true),
                        Json::Null,
                        Json::Str("x".into()),
                        t(Num::Int(-2), "-2"),
                        t(Num::Float(1.5), "1.5"),
                    ])
                ),
            ]))
        );
    }

    /// A repeated key is refused wherever it stands: among the first keys (compared one by
    /// one) and past them (hashed), the first key repeated last included.
    #[test]
    fn duplicate_keys_are_refused_in_objects_of_any_size() {
        for n in [2, SCAN - 1, SCAN, SCAN + 1, 3 * SCAN] {
            let keys: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{i}")).collect();
            let distinct = format!("{{{}}}", keys.join(","));
            assert!(Json::parse(distinct.as_bytes()).is_ok(), "{n}");
            for dup in [0, n / 2, n - 1] {
                let text = format!("{{{},\"k{dup}\":0}}", keys.join(","));
                let err = Json::parse(text.as_bytes()).unwrap_err();
                assert!(
                    err.contains(&format!("duplicate key \"k{dup}\"")),
                    "{n} {dup}: {err}"
                );
            }
        }
    }

    #[test]
    fn number_tokens_keep_their_exact_text() {
        let v = Json::parse(
            br#"{"a":"x\"1","b":[18446744073709551617,0.10000000000000000000001e-3,-0]}"#,
        )
        .unwrap();
        let Some(Json::Arr(a)) = v.get("b") else {
            panic!("array")
        };
        let texts: Vec<&str> = a
            .iter()
            .filter_map(|x| x.num())
            .map(|n| n.text.as_str())
            .collect();
        assert_eq!(
            texts,
            ["18446744073709551617", "0.10000000000000000000001e-3", "-0"]
        );
    }

    /// Numbers after strings with escaped quotes and backslashes, long and short, keep their
    /// text (the strings are skipped, not read as numbers).
    #[test]
    fn number_tokens_skip_strings_with_escapes() {
        let text = br#"["12345678\"9","\\",1,"a\\\"b-2 3 4 5 6 7","0123456789abcdef\\",-2.5e3,"\u0031",7]"#;
        let tokens: Vec<&[u8]> = number_tokens(text).collect();
        assert_eq!(tokens, [&b"1"[..], b"-2.5e3", b"7"]);
    }
}
