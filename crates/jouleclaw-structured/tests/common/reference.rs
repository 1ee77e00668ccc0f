//! An independent reference: a small recursive-descent JSON reader and a validator that reads
//! the *schema text* directly (never the compiled grammar), written from
//! `spec/STRUCTURED-OUTPUT.md`. It decides whole documents only; it knows no offsets.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;

/// The reference's verdict on a whole document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefOutcome {
    Accept,
    /// Not one I-JSON text.
    Syntax,
    /// Over `max_document_bytes` or `max_number_chars`.
    Limit,
    /// JSON, but not of the schema's type; the JSON Pointer of the first violation in document
    /// order.
    Schema(String),
}

#[derive(Debug, Clone)]
enum R {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<R>),
    Obj(Vec<(String, R)>),
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    max_number: usize,
    limit: bool,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && b" \t\n\r".contains(&self.s[self.i]) {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, lit: &[u8]) -> Option<()> {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }
    /// Past the opening byte of an object or array and the whitespace after it: `true` when
    /// `close` follows at once (consumed: the list is empty).
    fn open(&mut self, close: u8) -> Option<bool> {
        self.i += 1;
        self.ws();
        let empty = self.peek()? == close;
        if empty {
            self.i += 1;
        }
        Some(empty)
    }
    /// After an item of an object or array: `true` at `close`, `false` at a comma (either
    /// consumed); anything else is not JSON.
    fn after_item(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let c = self.peek()?;
        if c != b',' && c != close {
            return None;
        }
        self.i += 1;
        Some(c == close)
    }
    fn value(&mut self) -> Option<R> {
        self.ws();
        let v = match self.peek()? {
            b'{' => {
                let mut m = Vec::new();
                let mut closed = self.open(b'}')?;
                while !closed {
                    self.ws();
                    let k = self.string()?;
                    self.ws();
                    self.eat(b":")?;
                    let v = self.value()?;
                    m.push((k, v));
                    closed = self.after_item(b'}')?;
                }
                R::Obj(m)
            }
            b'[' => {
                let mut a = Vec::new();
                let mut closed = self.open(b']')?;
                while !closed {
                    a.push(self.value()?);
                    closed = self.after_item(b']')?;
                }
                R::Arr(a)
            }
            b'"' => R::Str(self.string()?),
            b't' => self.eat(b"true").map(|()| R::Bool(true))?,
            b'f' => self.eat(b"false").map(|()| R::Bool(false))?,
            b'n' => self.eat(b"null").map(|()| R::Null)?,
            _ => R::Num(self.number()?),
        };
        Some(v)
    }
    fn number(&mut self) -> Option<String> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let s = p.i;
            while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                p.i += 1;
            }
            p.i > s
        };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        if self.peek() == Some(b'0') {
            self.i += 1;
        } else if !digits(self) {
            return None;
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !digits(self) {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        if self.i - start > self.max_number {
            self.limit = true;
        }
        Some(String::from_utf8(self.s[start..self.i].to_vec()).unwrap())
    }
    fn hex4(&mut self) -> Option<u32> {
        let h = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
        if !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }
    fn string(&mut self) -> Option<String> {
        self.eat(b"\"")?;
        let mut out = String::new();
        loop {
            let c = self.peek()?;
            self.i += 1;
            match c {
                b'"' => return Some(out),
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let u = self.hex4()?;
                            let cp = if (0xd800..0xdc00).contains(&u) {
                                self.eat(b"\\u")?;
                                let l = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&l) {
                                    return None;
                                }
                                0x10000 + ((u - 0xd800) << 10) + (l - 0xdc00)
                            } else {
                                u
                            };
                            out.push(char::from_u32(cp)?);
                        }
                        _ => return None,
                    }
                }
                0..=0x1f => return None,
                _ => {
                    // The whole text was checked as UTF-8 up front: copy one character.
                    let len = match c {
                        0..=0x7f => 1,
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        _ => 4,
                    };
                    let ch = std::str::from_utf8(&self.s[self.i - 1..self.i - 1 + len]).ok()?;
                    out.push_str(ch);
                    self.i += len - 1;
                }
            }
        }
    }
}

const MAX_SAFE: i128 = (1 << 53) - 1;

fn ptr(base: &str, seg: &str) -> String {
    format!("{base}/{}", seg.replace('~', "~0").replace('/', "~1"))
}

pub struct Limits {
    pub max_document_bytes: usize,
    pub max_string_chars: u64,
    pub max_array_items: u64,
    pub max_number_chars: usize,
}

pub const DEFAULT: Limits = Limits {
    max_document_bytes: 65_536,
    max_string_chars: 4_096,
    max_array_items: 1_024,
    max_number_chars: 64,
};

/// The tag of a `oneOf`: the smallest property name of the first branch that every branch
/// requires as a string const, with distinct values.
pub fn tag_of(branches: &[Value]) -> String {
    let mut names: Vec<&String> = branches[0]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    names.sort();
    for n in names {
        let mut vals = Vec::new();
        let ok = branches.iter().all(|b| {
            let req = b["required"]
                .as_array()
                .is_some_and(|r| r.iter().any(|x| x == n.as_str()));
            let c = b["properties"][n.as_str()]
                .get("const")
                .or_else(|| {
                    b["properties"][n.as_str()]["enum"]
                        .as_array()
                        .filter(|a| a.len() == 1)
                        .map(|a| &a[0])
                })
                .and_then(|c| c.as_str());
            match c {
                Some(c) if req && !vals.contains(&c) => {
                    vals.push(c);
                    true
                }
                _ => false,
            }
        });
        if ok {
            return n.clone();
        }
    }
    panic!("no tag")
}

fn allowed(schema: &Value) -> Option<Vec<Value>> {
    schema
        .get("const")
        .map(|c| vec![c.clone()])
        .or_else(|| schema.get("enum").map(|e| e.as_array().unwrap().clone()))
}

fn check(schema: &Value, v: &R, at: &str, l: &Limits) -> Result<(), String> {
    let fail = || Err(at.to_owned());
    if let Some(branches) = schema.get("oneOf").and_then(|b| b.as_array()) {
        let R::Obj(m) = v else { return fail() };
        let tag = tag_of(branches);
        let Some((k0, v0)) = m.first() else {
            return fail();
        };
        if *k0 != tag {
            return fail();
        }
        let R::Str(t) = v0 else {
            return Err(ptr(at, &tag));
        };
        let Some(b) = branches
            .iter()
            .find(|b| allowed(&b["properties"][tag.as_str()]).unwrap()[0] == t.as_str())
        else {
            return Err(ptr(at, &tag));
        };
        return object(b, m, at, l, true);
    }
    let ty = schema["type"].as_str().unwrap();
    match (ty, v) {
        ("object", R::Obj(m)) => object(schema, m, at, l, false),
        ("array", R::Arr(a)) => {
            let max = schema
                .get("maxItems")
                .and_then(|x| x.as_u64())
                .unwrap_or(u64::MAX)
                .min(l.max_array_items);
            for (i, x) in a.iter().enumerate() {
                if i as u64 >= max {
                    return fail();
                }
                check(&schema["items"], x, &ptr(at, &i.to_string()), l)?;
            }
            Ok(())
        }
        ("string", R::Str(s)) => {
            let n = s.chars().count() as u64;
            let max = schema
                .get("maxLength")
                .and_then(|x| x.as_u64())
                .unwrap_or(u64::MAX)
                .min(l.max_string_chars);
            let min = schema
                .get("minLength")
                .and_then(|x| x.as_u64())
                .unwrap_or(0);
            if n > max || n < min {
                return fail();
            }
            if let Some(a) = allowed(schema)
                && !a.iter().any(|x| x.as_str() == Some(s))
            {
                return fail();
            }
            Ok(())
        }
        ("integer", R::Num(t)) => {
            if t.contains(['.', 'e', 'E']) {
                return fail();
            }
            let Ok(x) = t.parse::<i128>() else {
                return fail();
            };
            let lo = schema
                .get("minimum")
                .and_then(|x| x.as_i64())
                .map_or(-MAX_SAFE, i128::from);
            let hi = schema
                .get("maximum")
                .and_then(|x| x.as_i64())
                .map_or(MAX_SAFE, i128::from);
            if x < lo.max(-MAX_SAFE) || x > hi.min(MAX_SAFE) {
                return fail();
            }
            if let Some(a) = allowed(schema)
                && !a.iter().any(|y| y.as_i64().map(i128::from) == Some(x))
            {
                return fail();
            }
            Ok(())
        }
        ("number", R::Num(t)) => {
            let x: f64 = t.parse().unwrap();
            if schema
                .get("minimum")
                .is_some_and(|m| x < m.as_f64().unwrap())
                || schema
                    .get("maximum")
                    .is_some_and(|m| x > m.as_f64().unwrap())
            {
                return fail();
            }
            Ok(())
        }
        ("boolean", R::Bool(b)) => {
            if let Some(a) = allowed(schema)
                && !a.iter().any(|y| y.as_bool() == Some(*b))
            {
                return fail();
            }
            Ok(())
        }
        ("null", R::Null) => Ok(()),
        _ => fail(),
    }
}

fn object(
    schema: &Value,
    m: &[(String, R)],
    at: &str,
    l: &Limits,
    tagged: bool,
) -> Result<(), String> {
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let max = schema
        .get("maxProperties")
        .and_then(|x| x.as_u64())
        .unwrap_or(u64::MAX);
    let mut seen: Vec<&str> = Vec::new();
    for (i, (k, v)) in m.iter().enumerate() {
        if i as u64 >= max || seen.contains(&k.as_str()) || !props.contains_key(k) {
            return Err(at.to_owned());
        }
        seen.push(k);
        if !(tagged && i == 0) {
            check(&props[k], v, &ptr(at, k), l)?;
        }
    }
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    if required
        .iter()
        .any(|r| !seen.contains(&r.as_str().unwrap()))
    {
        return Err(at.to_owned());
    }
    Ok(())
}

/// Decides `doc` against the schema text `schema`.
pub fn decide(schema: &Value, doc: &[u8], l: &Limits) -> RefOutcome {
    if doc.len() > l.max_document_bytes {
        return RefOutcome::Limit;
    }
    if std::str::from_utf8(doc).is_err() {
        return RefOutcome::Syntax;
    }
    let mut p = P {
        s: doc,
        i: 0,
        max_number: l.max_number_chars,
        limit: false,
    };
    let Some(v) = p.value() else {
        return if p.limit {
            RefOutcome::Limit
        } else {
            RefOutcome::Syntax
        };
    };
    p.ws();
    if p.i != doc.len() {
        return RefOutcome::Syntax;
    }
    if p.limit {
        return RefOutcome::Limit;
    }
    match check(schema, &v, "", l) {
        Ok(()) => RefOutcome::Accept,
        Err(path) => RefOutcome::Schema(path),
    }
}
