//! The field readers of a strictly decoded document ([`crate::decode_canonical_value`]'s
//! value), with the stable schema codes every document kind built on JCR-1 shares: `null` (a
//! null where a value is required), `wrong_type`, `negative_unsigned` (a number that is not an
//! unsigned integer), `unknown_field`, `missing_field`. The canonical decoding already bounded
//! every integer by 2^53-1 and every depth and size by its [`crate::Limits`].

use serde_json::{Map, Value};

/// A schema refusal code.
pub type Code = &'static str;

/// `null` for a null, `wrong_type` for anything else: the code of a value of the wrong type.
pub fn null_or_wrong(v: &Value) -> Code {
    if v.is_null() { "null" } else { "wrong_type" }
}

/// An object.
pub fn object(v: &Value) -> Result<&Map<String, Value>, Code> {
    v.as_object().ok_or_else(|| null_or_wrong(v))
}

/// A string.
pub fn string(v: &Value) -> Result<&str, Code> {
    v.as_str().ok_or_else(|| null_or_wrong(v))
}

/// An array.
pub fn array(v: &Value) -> Result<&Vec<Value>, Code> {
    v.as_array().ok_or_else(|| null_or_wrong(v))
}

/// An unsigned integer (`negative_unsigned` for another number).
pub fn unsigned(v: &Value) -> Result<u64, Code> {
    match v {
        Value::Number(n) => n.as_u64().ok_or("negative_unsigned"),
        _ => Err(null_or_wrong(v)),
    }
}

/// An unsigned integer or `null` (`wrong_type` for anything else).
pub fn unsigned_or_null(v: &Value) -> Result<Option<u64>, Code> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => n.as_u64().map(Some).ok_or("negative_unsigned"),
        _ => Err("wrong_type"),
    }
}

/// Exactly the fields `known`: `unknown_field` first, then `missing_field`.
pub fn fields(obj: &Map<String, Value>, known: &[&str]) -> Result<(), Code> {
    fields_required(obj, known, known)
}

/// Only fields of `known`, every one of `required` among them: `unknown_field` first, then
/// `missing_field`.
pub fn fields_required(
    obj: &Map<String, Value>,
    known: &[&str],
    required: &[&str],
) -> Result<(), Code> {
    if obj.keys().any(|k| !known.contains(&k.as_str())) {
        return Err("unknown_field");
    }
    if required.iter().any(|k| !obj.contains_key(*k)) {
        return Err("missing_field");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn obj(v: &Value) -> &Map<String, Value> {
        v.as_object().unwrap()
    }

    #[test]
    fn types_are_read_with_their_codes() {
        assert_eq!(null_or_wrong(&Value::Null), "null");
        assert_eq!(null_or_wrong(&json!(1)), "wrong_type");
        assert_eq!(unsigned(&json!(7)), Ok(7));
        assert_eq!(unsigned(&json!(-1)), Err("negative_unsigned"));
        assert_eq!(unsigned(&json!(1.5)), Err("negative_unsigned"));
        assert_eq!(unsigned(&json!("7")), Err("wrong_type"));
        assert_eq!(unsigned(&Value::Null), Err("null"));
        assert_eq!(unsigned_or_null(&Value::Null), Ok(None));
        assert_eq!(unsigned_or_null(&json!(3)), Ok(Some(3)));
        assert_eq!(unsigned_or_null(&json!("3")), Err("wrong_type"));
        assert_eq!(string(&json!("a")), Ok("a"));
        assert_eq!(string(&json!(1)), Err("wrong_type"));
        assert!(object(&json!({})).is_ok());
        assert_eq!(object(&json!([])).err(), Some("wrong_type"));
        assert!(array(&json!([])).is_ok());
        assert_eq!(array(&Value::Null).err(), Some("null"));
    }

    #[test]
    fn unknown_fields_are_named_before_missing_ones() {
        let v = json!({"a": 1, "z": 2});
        assert_eq!(fields(obj(&v), &["a", "b"]), Err("unknown_field"));
        let v = json!({"a": 1});
        assert_eq!(fields(obj(&v), &["a", "b"]), Err("missing_field"));
        assert_eq!(fields_required(obj(&v), &["a", "b"], &["a"]), Ok(()));
        assert_eq!(
            fields_required(obj(&v), &["a", "b"], &["b"]),
            Err("missing_field")
        );
        let v = json!({"a": 1, "b": 2});
        assert_eq!(fields(obj(&v), &["a", "b"]), Ok(()));
    }
}
