//! The schema's JSON value, read strictly: duplicate keys are refused (serde_json's own
//! `Value` keeps the last one silently), member order is kept, numbers keep their kind.

use core::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON number as the schema wrote it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Num {
    /// An integer token that fits `i64`.
    Int(i64),
    /// Anything else (a fraction, an exponent, or an integer beyond `i64`), as `f64`.
    Float(f64),
}

/// A JSON value with its members in document order and no duplicate keys.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Num(Num),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub(crate) fn parse(bytes: &[u8]) -> Result<Json, String> {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

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
        Ok(Json::Num(Num::Int(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Num(match i64::try_from(v) {
            Ok(i) => Num::Int(i),
            // Beyond i64: kept as a float, which the subset refuses wherever it needs an
            // integer.
            Err(_) => Num::Float(v as f64),
        }))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Num(Num::Float(v)))
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
        // Duplicate keys found by hashing, so an object of many keys costs linear time.
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            if !seen.insert(k.clone()) {
                return Err(de::Error::custom(format!("duplicate key \"{k}\"")));
            }
            let v = map.next_value()?;
            m.push((k, v));
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

    #[test]
    fn duplicate_keys_are_refused_where_serde_json_keeps_the_last() {
        assert!(Json::parse(br#"{"a":1,"a":2}"#).is_err());
        assert!(Json::parse(br#"{"a":{"b":1,"b":1}}"#).is_err());
        assert!(serde_json::from_slice::<serde_json::Value>(br#"{"a":1,"a":2}"#).is_ok());
        assert_eq!(
            Json::parse(br#"{"b":1,"a":[true,null,"x",-2,1.5]}"#),
            Ok(Json::Obj(vec![
                ("b".into(), Json::Num(Num::Int(1))),
                (
                    "a".into(),
                    Json::Arr(vec![
                        Json::Bool(true),
                        Json::Null,
                        Json::Str("x".into()),
                        Json::Num(Num::Int(-2)),
                        Json::Num(Num::Float(1.5)),
                    ])
                ),
            ]))
        );
    }
}
