//! Random schemas of the subset and random valid documents of them, for the property tests
//! and the generated part of the vectors. Deterministic for a seed.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

/// A deterministic generator seeded by proptest (the library under test sees only bytes).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn coin(&mut self) -> bool {
        self.below(2) == 0
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

const NAMES: &[&str] = &["a", "b", "ab", "ba", "abc", "\u{e9}", "a/b", "t~"];
const WORDS: &[&str] = &["x", "xy", "y", "\u{e9}", "", "x\"y", "\u{1f600}"];

fn scalar_schema(r: &mut Rng) -> Value {
    match r.below(6) {
        0 => {
            let mut s = json!({"type": "string"});
            if r.coin() {
                s["minLength"] = json!(r.below(3));
            }
            if r.coin() {
                s["maxLength"] = json!(r.below(5));
            }
            if r.below(3) == 0 {
                let n = 1 + r.below(3) as usize;
                let mut vs: Vec<&str> = Vec::new();
                while vs.len() < n {
                    let w = *r.pick(WORDS);
                    if !vs.contains(&w) {
                        vs.push(w);
                    }
                }
                s["enum"] = json!(vs);
            }
            s
        }
        1 => {
            let mut s = json!({"type": "integer"});
            if r.coin() {
                s["minimum"] = json!(r.below(41) as i64 - 20);
            }
            if r.coin() {
                s["maximum"] = json!(r.below(41) as i64 - 20);
            }
            if r.below(3) == 0 {
                s["enum"] = json!([r.below(30) as i64 - 5, 100 + r.below(30) as i64]);
            }
            s
        }
        2 => {
            let mut s = json!({"type": "number"});
            if r.coin() {
                s["minimum"] = json!((r.below(41) as f64 - 20.0) / 4.0);
            }
            if r.coin() {
                s["maximum"] = json!((r.below(41) as f64 - 20.0) / 4.0);
            }
            s
        }
        3 => {
            let mut s = json!({"type": "boolean"});
            if r.coin() {
                s["const"] = json!(r.coin());
            }
            s
        }
        _ => json!({"type": "null"}),
    }
}

pub fn object_schema(r: &mut Rng, depth: u32) -> Value {
    let n = r.below(4) as usize;
    let mut props = serde_json::Map::new();
    while props.len() < n {
        props.insert((*r.pick(NAMES)).to_owned(), schema(r, depth + 1));
    }
    let mut s = json!({"type": "object", "additionalProperties": false, "properties": props});
    let req: Vec<String> = props.keys().filter(|_| r.coin()).cloned().collect();
    if !req.is_empty() {
        s["required"] = json!(req);
    }
    if r.below(4) == 0 {
        s["maxProperties"] = json!(r.below(3));
    }
    s
}

pub fn schema(r: &mut Rng, depth: u32) -> Value {
    if depth >= 3 {
        return scalar_schema(r);
    }
    match r.below(8) {
        0 | 1 => object_schema(r, depth),
        2 => {
            let mut s = json!({"type": "array", "items": schema(r, depth + 1)});
            if r.coin() {
                s["maxItems"] = json!(r.below(4));
            }
            s
        }
        3 => {
            let n = 1 + r.below(3);
            let branches: Vec<Value> = (0..n)
                .map(|i| {
                    let mut b = object_schema(r, depth);
                    b["properties"].as_object_mut().unwrap().insert(
                        "t".into(),
                        json!({"type": "string", "const": format!("k{i}")}),
                    );
                    let mut req = b["required"].as_array().cloned().unwrap_or_default();
                    req.push(json!("t"));
                    b["required"] = json!(req);
                    b.as_object_mut().unwrap().remove("maxProperties");
                    b
                })
                .collect();
            json!({"oneOf": branches})
        }
        _ => scalar_schema(r),
    }
}

const WS: &[&str] = &["", "", "", " ", "\n", "\t ", "\r\n"];

fn ws(r: &mut Rng) -> &'static str {
    WS[r.below(WS.len() as u64) as usize]
}

fn write_str(r: &mut Rng, s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str(if r.coin() { "\\\"" } else { "\\u0022" }),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if r.below(4) == 0 => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{:04X}", u));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes a random valid document of `s`, or `None` when the schema admits none.
pub fn gen_doc(r: &mut Rng, s: &Value, out: &mut String) -> Option<()> {
    out.push_str(ws(r));
    if let Some(branches) = s.get("oneOf").and_then(|b| b.as_array()) {
        let b = r.pick(branches).clone();
        // The tag by the spec's rule: another required one-value string may sort first.
        let tag = super::reference::tag_of(branches);
        return gen_object(r, &b, out, Some(&tag));
    }
    let allowed = s
        .get("const")
        .map(|c| vec![c.clone()])
        .or_else(|| s.get("enum").map(|e| e.as_array().unwrap().clone()));
    match s["type"].as_str().unwrap() {
        "object" => gen_object(r, s, out, None)?,
        "array" => {
            let max = s.get("maxItems").and_then(|x| x.as_u64()).unwrap_or(3);
            let n = r.below(max + 1);
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                gen_doc(r, &s["items"], out)?;
            }
            out.push_str(ws(r));
            out.push(']');
        }
        "string" => {
            let min = s.get("minLength").and_then(|x| x.as_u64()).unwrap_or(0);
            let max = s.get("maxLength").and_then(|x| x.as_u64()).unwrap_or(6);
            let ok = |w: &str| (min..=max).contains(&(w.chars().count() as u64));
            let text = match allowed {
                Some(a) => {
                    let fits: Vec<String> = a
                        .iter()
                        .map(|v| v.as_str().unwrap().to_owned())
                        .filter(|w| ok(w))
                        .collect();
                    if fits.is_empty() {
                        return None;
                    }
                    r.pick(&fits).clone()
                }
                None => {
                    if min > max {
                        return None;
                    }
                    let n = min + r.below(max - min + 1);
                    (0..n)
                        .map(|_| *r.pick(&['a', '\u{e9}', '\u{1f600}', '"', '\\', '\n', '/', 'z']))
                        .collect()
                }
            };
            write_str(r, &text, out);
        }
        "integer" => {
            let lo = s.get("minimum").and_then(|x| x.as_i64()).unwrap_or(-30);
            let hi = s.get("maximum").and_then(|x| x.as_i64()).unwrap_or(30);
            let v = match allowed {
                Some(a) => {
                    let fits: Vec<i64> = a
                        .iter()
                        .map(|v| v.as_i64().unwrap())
                        .filter(|v| {
                            (lo..=hi).contains(v)
                                || s.get("minimum").is_none() && s.get("maximum").is_none()
                        })
                        .filter(|v| {
                            s.get("minimum")
                                .and_then(|x| x.as_i64())
                                .is_none_or(|m| *v >= m)
                                && s.get("maximum")
                                    .and_then(|x| x.as_i64())
                                    .is_none_or(|m| *v <= m)
                        })
                        .collect();
                    if fits.is_empty() {
                        return None;
                    }
                    *r.pick(&fits)
                }
                None => {
                    if lo > hi {
                        return None;
                    }
                    lo + r.below((hi - lo + 1) as u64) as i64
                }
            };
            if v == 0 && r.coin() {
                out.push_str("-0");
            } else {
                out.push_str(&v.to_string());
            }
        }
        "number" => {
            let lo = s.get("minimum").and_then(|x| x.as_f64()).unwrap_or(-8.0);
            let hi = s.get("maximum").and_then(|x| x.as_f64()).unwrap_or(8.0);
            if lo > hi {
                return None;
            }
            let q = ((hi - lo) * 4.0) as u64;
            let v = lo + r.below(q + 1) as f64 / 4.0;
            let t = match r.below(3) {
                0 => format!("{v}"),
                1 => format!("{}e-2", (v * 100.0) as i64),
                _ => format!("{v:.3}"),
            };
            out.push_str(&t);
        }
        "boolean" => {
            let b = match allowed {
                Some(a) => a[0].as_bool().unwrap(),
                None => r.coin(),
            };
            out.push_str(if b { "true" } else { "false" });
        }
        _ => out.push_str("null"),
    }
    out.push_str(ws(r));
    Some(())
}

fn gen_object(r: &mut Rng, s: &Value, out: &mut String, tag: Option<&str>) -> Option<()> {
    let props = s["properties"].as_object().cloned().unwrap_or_default();
    let required: Vec<String> = s["required"]
        .as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    let mut keys: Vec<String> = props
        .keys()
        .filter(|k| required.contains(k) || r.coin())
        .cloned()
        .collect();
    // Shuffle, tag first.
    for i in (1..keys.len()).rev() {
        let j = r.below(i as u64 + 1) as usize;
        keys.swap(i, j);
    }
    if let Some(t) = tag {
        keys.retain(|k| k != t);
        keys.insert(0, t.to_owned());
    }
    if s.get("maxProperties")
        .and_then(|x| x.as_u64())
        .is_some_and(|m| keys.len() as u64 > m)
    {
        return None;
    }
    out.push('{');
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(ws(r));
        write_str(r, k, out);
        out.push_str(ws(r));
        out.push(':');
        gen_doc(r, &props[k], out)?;
    }
    out.push_str(ws(r));
    out.push('}');
    Some(())
}

/// The bytes a single-byte mutation writes.
pub const MUTANTS: &[u8] = b"\"\\{}[],:0123456789-.eE tfnulx\xc3\xa9\xff\x00";
