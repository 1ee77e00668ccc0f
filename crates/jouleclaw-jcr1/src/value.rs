//! Canonical encoding of generic JSON values (window JSON, tests, tools).

use jouleclaw_stream::canon;
use serde_json::Value;

use crate::error::{Jcr1Error, Result};

/// The JCR-1 canonical bytes of `v`: object keys in RFC 8785 order (UTF-16 code units), no
/// whitespace, integers only within `+-(2^53-1)`. Floats, including integral ones such as
/// `1.0`, are refused: JCR-1 has no fractions.
pub fn encode_value(v: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_value(&mut out, v)?;
    Ok(out)
}

fn write_value(out: &mut Vec<u8>, v: &Value) -> Result<()> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            let bad = || Jcr1Error::Unencodable {
                field: "number",
                reason: "not an integer within +-(2^53-1)",
            };
            if let Some(u) = n.as_u64() {
                canon::write_u64(out, u).map_err(|_| bad())?;
            } else if let Some(i) = n.as_i64() {
                canon::write_i64(out, i).map_err(|_| bad())?;
            } else {
                return Err(bad());
            }
        }
        Value::String(s) => canon::write_str(out, s),
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, x)?;
            }
            out.push(b']');
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push(b'{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canon::write_str(out, k);
                out.push(b':');
                write_value(out, x)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}
