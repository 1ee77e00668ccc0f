//! Streaming structured-output oracle of the jouleclaw substrate.
//!
//! A declared schema (a documented subset of JSON Schema 2020-12) is compiled into one
//! [`Grammar`] with explicit hard limits and a BLAKE3 digest of its canonical form. Three
//! projections are generated from that one object: the streaming validator
//! ([`StructuredValidator`]: push bytes in any chunks, refused at the first byte after which no
//! valid document exists; a repeated element of a `uniqueItems` array at the `,` or `]` after
//! it), the whole-document validator ([`Grammar::validate`]) and the
//! canonical JSON Schema handed to a model provider ([`Grammar::projection`]).
//! [`StructuredOutputOracle`] judges an LLM channel's turns with it as a
//! [`jouleclaw_stream_oracle::StreamOracle`], failing on the tick that makes a tool call
//! impossible. Everything here is pure: no clocks, I/O, threads or randomness. The normative
//! contract is `spec/STRUCTURED-OUTPUT.md`.
//!
//! The public interface is:
//! - [`Grammar`], [`Limits`]: compile a schema, its digest, canonical form and projection;
//! - [`StructuredValidator`], [`Status`], [`Usage`], [`ExpectedNext`]: the streaming validator;
//! - [`StructuredOutputOracle`]: the stream oracle for an LLM channel;
//! - [`Toolset`], [`ToolsetOptions`], [`RefusedTool`]: a whole toolset (MCP or OpenAI) as one
//!   grammar for a call routed by its tool's name;
//! - [`Refusal`], [`RefusalCode`], [`RefusalClass`]: why a document was refused, and where;
//! - [`StructuredError`], [`Result`]: every refusal, with a stable code.
//!
//! ```
//! use std::sync::Arc;
//! use jouleclaw_structured::*;
//!
//! let schema = br#"{
//!   "type": "object", "additionalProperties": false, "required": ["city"],
//!   "properties": { "city": { "type": "string", "maxLength": 12 } }
//! }"#;
//! let grammar = Arc::new(Grammar::compile(schema)?);
//!
//! let mut v = StructuredValidator::new(Arc::clone(&grammar));
//! v.push(br#"{"ci"#)?;              // valid so far: never "accepted" by push
//! v.push(br#"ty": "Lisbon"}"#)?;
//! v.finish()?;                        // only finish accepts
//! assert_eq!(v.status(), Status::Accepted);
//!
//! // An unknown key is refused at the first byte no declared key can continue.
//! let r = grammar.validate(br#"{"town":"Porto"}"#).unwrap_err();
//! assert_eq!((r.code.as_str(), r.offset, r.path.as_str()), ("unknown_property", 2, ""));
//!
//! // Unsupported keywords are refused at compile time, naming the keyword.
//! let e = Grammar::compile(br#"{"type":"string","pattern":"^a"}"#).unwrap_err();
//! assert_eq!((e.code(), e.keyword()), ("schema_unsupported_keyword", Some("pattern")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod bigint;
mod decimal;
mod error;
mod frames;
mod grammar;
mod json;
mod oracle;
mod pattern;
mod schema2020;
mod toolset;
mod trie;
mod uniq;
mod validator;

pub use error::{Refusal, RefusalClass, RefusalCode, Result, StructuredError};
pub use grammar::{
    CompileOptions, GRAMMAR_FORMAT, Grammar, IgnoredKeyword, Limits, MAX_MEMBERS,
    MAX_NUMBER_CHARS_CEILING, MAX_PARALLEL_BRANCHES, MAX_SAFE_INTEGER, MAX_SCHEMA_BYTES,
    PROJECTION_NODES, Profile, SCHEMA_DIALECT, UnknownKeywords,
};
pub use oracle::StructuredOutputOracle;
pub use pattern::{MAX_PATTERN_AUTOMATON_BYTES, MAX_PATTERN_CHARS, PATTERN_WORK_BUDGET};
pub use toolset::{RefusedTool, Toolset, ToolsetOptions};
pub use validator::{ExpectedNext, Status, StructuredValidator, Usage};
