#!/usr/bin/env node
// Independent verifier for stream-window/1 receipts, their COSE_Sign1 envelopes, stream-seal/1
// (RFC 9162 proofs, checkpoints, RFC 9942 inclusion receipts) and voice-turn/1 (exact levels with
// BigInt), structured-output (whole-document outcomes with Ajv) and the call registry
// (registry.mjs: C2SP notes, cosignatures, tlog-proof files, forks) (Node 20, ESM).
//
// Usage: node verify.mjs [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)
//
// Checks every vector file it finds in CONFORMANCE_DIR (formats in ../../README.md), prints one
// line per check and closes with `js: N passed, N failed`. Exit status is 0 only if every check
// passed and at least one vector file was present.
//
// Libraries: @noble/curves (Ed25519, P-256), @noble/hashes (BLAKE3, SHA-256), cbor2 (CBOR),
// canonicalize (RFC 8785), ajv (JSON Schema 2020-12, structured-output projections).

import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { sha256 } from '@noble/hashes/sha2.js';
import Ajv2020 from 'ajv/dist/2020.js';
import canonicalize from 'canonicalize';
import { Tag, decode as cborDecode, encode as cborEncode } from 'cbor2';

import { checkRegistryFile } from './registry.mjs';

const SCHEMA_ID = 'stream-window/1';
const CONTENT_TYPE = 'application/vnd.jouleclaw.stream-window+json';
const MAX_SAFE = 2n ** 53n - 1n;
const PROVENANCE = ['Estimator', 'Rapl', 'HwShunt'];
const FIELDS = [
  'jc_receipt', 'id', 'closed_at', 'steward', 'stream_id', 'window_id', 'window_hash', 'tick_count',
  'inbound_bytes', 'outbound_bytes', 'joules_uj', 'energy_provenance', 'verdict', 'conservation',
];
const UINT_FIELDS = ['window_id', 'tick_count', 'inbound_bytes', 'outbound_bytes', 'joules_uj'];
const HEX64 = /^[0-9a-f]{64}$/;
const CLOSED_AT = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})Z$/;
const THUMBPRINT_PREFIX = hexToBytes('a301012006215820'); // {1: 1, -1: 6, -2: h'<32 bytes>'}
const FILES = {
  receipts: 'stream-window-vectors.json',
  receiptsExtended: 'stream-window-vectors-extended.json',
  windowHash: 'stream-window-hash-vectors.json',
  negative: 'stream-window-negative-vectors.json',
  signed: 'stream-window-signed-vectors.json',
  signedExtra: 'stream-window-signed-negative-extra-vectors.json',
  schema: 'stream-window-1.schema.json',
  seal: 'stream-seal-vectors.json',
  seal2: 'stream-seal-2-vectors.json',
  voiceTurn: 'voice-turn-vectors.json',
  structured: 'structured-output-vectors.json',
  registry: 'call-registry-vectors.json',
  stopLatency: 'stop-latency-vectors.json',
  interaction: 'interaction-metrics-vectors.json',
};
// Strict CBOR decoding: definite lengths, preferred (shortest) heads, no duplicate map keys,
// tags kept as Tag objects, maps as Map (integer labels).
const CBOR_STRICT = {
  ignoreGlobalTags: true, preferMap: true, rejectDuplicateKeys: true, rejectStreaming: true,
  requirePreferred: true,
};

// The receipt decoder's bounds, at their exact values (Limits::RECEIPT in jouleclaw-jcr1):
// a document of 65,536 bytes is accepted and one byte more is refused; the root object is
// depth 1; string lengths (keys included) count decoded UTF-8 bytes.
const RECEIPT_LIMITS = { documentBytes: 65_536, depth: 3, stringBytes: 4_096, arrayLen: 64 };

class Refusal extends Error {
  constructor(cls, detail) {
    super(`[${cls}] ${detail}`);
    this.cls = cls;
  }
}

function hexToBytes(hex) {
  if (typeof hex !== 'string' || hex.length % 2 || /[^0-9a-fA-F]/.test(hex)) {
    throw new Refusal('mismatch', 'malformed hex string');
  }
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}
const toHex = (b) => Buffer.from(b).toString('hex');
const equalBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const utf8 = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// Canonical JSON (JCR-1)
// ---------------------------------------------------------------------------------------------

/** Every number token outside strings, from the raw text (JSON.parse would round big ones). */
function* scanNumbers(text) {
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === '"') {
      i += 1;
      while (i < n && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < n && '0123456789.eE+-'.includes(text[j])) j += 1;
      yield text.slice(i, j);
      i = j;
    } else {
      i += 1;
    }
  }
}

/** Deepest bracket nesting outside strings, from the raw text (no recursion). */
function maxDepth(text) {
  let depth = 0;
  let deepest = 0;
  let inStr = false;
  let esc = false;
  for (const c of text) {
    if (inStr) {
      if (esc) esc = false;
      else if (c === '\\') esc = true;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === '[' || c === '{') deepest = Math.max(deepest, ++depth);
    else if (c === ']' || c === '}') depth -= 1;
  }
  return deepest;
}

function checkNumberToken(tok) {
  if (/[.eE]/.test(tok)) throw new Refusal('number', `number ${tok} has a fraction or exponent`);
  if (tok === '-0') throw new Refusal('number', 'negative zero');
  if (/^-?(0|[1-9][0-9]*)$/.test(tok)) {
    const v = BigInt(tok);
    if (v > MAX_SAFE || -v > MAX_SAFE) throw new Refusal('number', `integer ${tok} outside [-(2^53-1), 2^53-1]`);
  }
}

function checkParsedNumbers(v) {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || Object.is(v, -0)) throw new Refusal('number', `number ${v} is not a safe integer`);
  } else if (Array.isArray(v)) {
    v.forEach(checkParsedNumbers);
  } else if (v !== null && typeof v === 'object') {
    Object.values(v).forEach(checkParsedNumbers);
  }
}

function checkLimits(value, limits, depth = 1) {
  if (typeof value === 'string') {
    if (utf8.encode(value).length > limits.stringBytes) throw new Refusal('limit', `string longer than ${limits.stringBytes} bytes`);
  } else if (value !== null && typeof value === 'object') {
    if (depth > limits.depth) throw new Refusal('limit', `nesting deeper than ${limits.depth}`);
    if (Array.isArray(value)) {
      if (value.length > limits.arrayLen) throw new Refusal('limit', `array longer than ${limits.arrayLen} elements`);
      for (const v of value) checkLimits(v, limits, depth + 1);
    } else {
      for (const [k, v] of Object.entries(value)) {
        checkLimits(k, limits, depth + 1);
        checkLimits(v, limits, depth + 1);
      }
    }
  }
}

/** Strictly decode bytes that must be exactly the canonical JCR-1 encoding of a value. */
function parseJcr1(data, limits = null) {
  if (limits && data.length > limits.documentBytes) throw new Refusal('limit', `document larger than ${limits.documentBytes} bytes`);
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(data);
  } catch {
    throw new Refusal('utf8', 'invalid UTF-8');
  }
  if (text.startsWith('\uFEFF')) throw new Refusal('utf8', 'byte order mark');
  if (limits && maxDepth(text) > limits.depth) throw new Refusal('limit', `nesting deeper than ${limits.depth}`);
  for (const tok of scanNumbers(text)) checkNumberToken(tok);
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new Refusal('json', `not JSON: ${e.message}`);
  }
  checkParsedNumbers(value);
  if (limits) checkLimits(value, limits);
  let again;
  try {
    again = utf8.encode(canonicalize(value));
  } catch (e) {
    throw new Refusal('string', `cannot canonicalize: ${e.message}`);
  }
  // JSON.parse keeps the last of duplicate keys; the canonical form has each key once, so a
  // duplicate (like whitespace, key order, escapes, number forms) shows up as a byte difference.
  if (!equalBytes(again, data)) throw new Refusal('non_canonical', 'not the canonical encoding');
  return value;
}

// ---------------------------------------------------------------------------------------------
// stream-window/1 receipt rules (including those JSON Schema cannot express)
// ---------------------------------------------------------------------------------------------

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isUint = (v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && !Object.is(v, -0);
const isText = (v) => typeof v === 'string' && v.length > 0;
const isAnyText = (v) => typeof v === 'string';
const sameKeys = (obj, keys) => {
  const have = Object.keys(obj).sort();
  const want = [...keys].sort();
  return have.length === want.length && have.every((k, i) => k === want[i]);
};

function daysInMonth(y, m) {
  if (m === 2) return (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)) ? 29 : 28;
  return [4, 6, 9, 11].includes(m) ? 30 : 31;
}

function checkClosedAt(s) {
  const m = typeof s === 'string' ? CLOSED_AT.exec(s) : null;
  if (!m) throw new Refusal('schema', 'closed_at is not YYYY-MM-DDTHH:MM:SSZ');
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number);
  if (!(mo >= 1 && mo <= 12 && d >= 1 && d <= daysInMonth(y, mo) && h <= 23 && mi <= 59 && se <= 59)) {
    throw new Refusal('calendar', `closed_at ${s} is not a real UTC date-time`);
  }
}

const VERDICTS = {
  pass: { chain: (v) => Array.isArray(v) && v.length >= 1 && v.every(isText) },
  yield: { seen_at: isUint },
  fail: { oracle: isText, reason: isAnyText },
  need_more: { oracle: isText, reason: isAnyText },
};
const CONSERVATION = {
  conforming: {},
  hallucination: { unaccounted: isUint },
  barge_in_ignored: { barge_in_ts_ns: isUint, outbound_ts_ns: isUint },
};

function checkVariant(obj, what, variants) {
  if (!isObject(obj)) throw new Refusal('schema', `${what} is not an object`);
  const kind = obj.kind;
  if (typeof kind !== 'string' || !Object.hasOwn(variants, kind)) throw new Refusal('schema', `${what}.kind ${JSON.stringify(kind)} unknown`);
  const spec = variants[kind];
  if (!sameKeys(obj, [...Object.keys(spec), 'kind'])) throw new Refusal('schema', `${what} (${kind}) has fields ${Object.keys(obj)}`);
  for (const [k, ok] of Object.entries(spec)) {
    if (!ok(obj[k])) throw new Refusal('schema', `${what}.${k} invalid`);
  }
}

function checkReceipt(r) {
  if (!isObject(r)) throw new Refusal('schema', 'receipt is not an object');
  if (!sameKeys(r, FIELDS)) throw new Refusal('schema', `fields ${Object.keys(r).sort()} are not the 14 stream-window/1 fields`);
  if (r.jc_receipt !== SCHEMA_ID) throw new Refusal('schema', `jc_receipt ${JSON.stringify(r.jc_receipt)}`);
  for (const k of ['steward', 'stream_id']) if (!isText(r[k])) throw new Refusal('schema', `${k} must be a non-empty string`);
  for (const k of UINT_FIELDS) if (!isUint(r[k])) throw new Refusal('schema', `${k} must be an integer in [0, 2^53-1]`);
  if (typeof r.window_hash !== 'string' || !HEX64.test(r.window_hash)) throw new Refusal('schema', 'window_hash must be 64 lowercase hex digits');
  if (!PROVENANCE.includes(r.energy_provenance)) throw new Refusal('schema', `energy_provenance ${JSON.stringify(r.energy_provenance)}`);
  checkVariant(r.verdict, 'verdict', VERDICTS);
  checkVariant(r.conservation, 'conservation', CONSERVATION);
  checkClosedAt(r.closed_at);
  if (typeof r.id !== 'string' || r.id !== `${r.stream_id}:${String(r.window_id).padStart(4, '0')}`) {
    throw new Refusal('id', `id ${JSON.stringify(r.id)} is not stream_id:window_id (4-digit zero pad)`);
  }
}

function checkReceiptBytes(data) {
  const value = parseJcr1(data, RECEIPT_LIMITS);
  checkReceipt(value);
  return value;
}

// ---------------------------------------------------------------------------------------------
// COSE_Sign1 profile
// ---------------------------------------------------------------------------------------------

function cborDecodeExact(data) {
  try {
    return cborDecode(data, CBOR_STRICT); // throws on trailing bytes ("Extra data in input")
  } catch (e) {
    throw new Refusal('cbor', `malformed or non-preferred CBOR: ${e.message}`);
  }
}

const thumbprint = (pub) => sha256(new Uint8Array([...THUMBPRINT_PREFIX, ...pub]));
const sigStructure = (prot, payload, aad = new Uint8Array(0)) => cborEncode(['Signature1', prot, aad, payload]);
const protectedHeader = (kid, steward, rid) => cborEncode(new Map([
  [1, -8], [3, CONTENT_TYPE], [4, kid], [15, new Map([[1, steward], [2, rid]])],
]));
const isBytes = (v) => v instanceof Uint8Array;

function ed25519VerifyStrict(sig, msg, pub) {
  let ok = false;
  try {
    // RFC 8032 verification: canonical point encodings and S < L (zip215: false).
    ok = ed25519.verify(sig, msg, pub, { zip215: false });
    // noble verifies with the cofactored equation ([8]R == [8]([S]B - [k]A)), which accepts
    // an honest signature whose R carries an added small-order point; ed25519-dalek and
    // crypto/ed25519 use the cofactorless one. Requiring A and R canonical, of large order and
    // torsion-free makes the two equations agree (README, "Strict Ed25519").
    for (const enc of [pub, sig.subarray(0, 32)]) {
      const p = ed25519.Point.fromBytes(enc, false);
      if (p.isSmallOrder() || !p.isTorsionFree()) ok = false;
    }
  } catch {
    ok = false;
  }
  if (!ok) throw new Refusal('signature', 'Ed25519 signature does not verify');
}

/** Verify a stream-window/1 COSE_Sign1 against a public key; return the receipt or throw Refusal. */
function verifyCose(data, pub) {
  const item = cborDecodeExact(data);
  if (!(item instanceof Tag)) throw new Refusal('tag', 'untagged COSE_Sign1 (tag 18 required)');
  if (Number(item.tag) !== 18) throw new Refusal('tag', `CBOR tag ${item.tag}, expected 18`);
  const body = item.contents;
  if (!(Array.isArray(body) && body.length === 4)) throw new Refusal('structure', 'COSE_Sign1 is not a 4-element array');
  const [prot, unprot, payload, sig] = body;
  if (!isBytes(prot) || !isBytes(payload) || !isBytes(sig)) throw new Refusal('structure', 'protected, payload and signature must be byte strings');
  if (!(unprot instanceof Map)) throw new Refusal('structure', 'unprotected header is not a map');
  if (!equalBytes(cborEncode(item), data)) throw new Refusal('cbor', 'envelope is not in deterministic CBOR encoding');
  if (unprot.size) throw new Refusal('header', `unprotected header not empty (labels ${[...unprot.keys()]})`);
  if (sig.length !== 64) throw new Refusal('structure', `signature is ${sig.length} bytes, expected 64`);
  const hdr = cborDecodeExact(prot);
  if (!(hdr instanceof Map)) throw new Refusal('header', 'protected header is not a map');
  if (hdr.has(2)) throw new Refusal('header', 'crit (label 2) present');
  if (hdr.get(1) !== -8) throw new Refusal('header', `alg ${hdr.get(1)}, expected -8 (EdDSA)`);
  const labels = [...hdr.keys()];
  if (labels.join() !== '1,3,4,15' || labels.some((l) => typeof l !== 'number')) {
    throw new Refusal('header', `protected labels ${labels}, expected 1,3,4,15`);
  }
  if (hdr.get(3) !== CONTENT_TYPE) throw new Refusal('header', `content type ${JSON.stringify(hdr.get(3))}`);
  const kid = hdr.get(4);
  const claims = hdr.get(15);
  if (!isBytes(kid) || kid.length !== 32) throw new Refusal('header', 'kid is not a 32-byte string');
  if (!(claims instanceof Map) || [...claims.keys()].join() !== '1,2'
      || ![...claims.values()].every((v) => typeof v === 'string')) {
    throw new Refusal('header', 'CWT claims must be {1: iss, 2: sub} text');
  }
  if (!equalBytes(cborEncode(hdr), prot)) throw new Refusal('header', 'protected header is not in deterministic CBOR encoding');
  if (!equalBytes(kid, thumbprint(pub))) throw new Refusal('kid', 'kid is not the RFC 9679 thumbprint of the verification key');
  ed25519VerifyStrict(sig, sigStructure(prot, payload), pub);
  let receipt;
  try {
    receipt = checkReceiptBytes(payload);
  } catch (e) {
    if (e instanceof Refusal) throw new Refusal(`payload:${e.cls}`, e.message);
    throw e;
  }
  if (claims.get(1) !== receipt.steward) throw new Refusal('claims', 'CWT iss does not equal the receipt steward');
  if (claims.get(2) !== receipt.id) throw new Refusal('claims', 'CWT sub does not equal the receipt id');
  return receipt;
}

// ---------------------------------------------------------------------------------------------
// Generic COSE_Sign1 (cose-wg Examples): tag optional, alg from either bucket, ES256 or EdDSA
// ---------------------------------------------------------------------------------------------

function verifyCoseWg(c) {
  const sign0 = c.input.sign0;
  const key = sign0.key;
  const aad = hexToBytes(sign0.external ?? '');
  let item = cborDecodeExact(hexToBytes(c.output.cbor));
  if (item instanceof Tag) {
    if (Number(item.tag) !== 18) throw new Refusal('tag', `CBOR tag ${item.tag}, expected 18`);
    item = item.contents;
  }
  if (!(Array.isArray(item) && item.length === 4)) throw new Refusal('structure', 'not a 4-element array');
  const [prot, unprot, payload, sig] = item;
  const hdr = prot.length ? cborDecodeExact(prot) : new Map();
  const alg = hdr.has(1) ? hdr.get(1) : unprot.get(1);
  // cose-wg (sign-pass-01) signs an empty protected map as h'' even when it travels as h'a0'.
  // The stream-window/1 profile never has an empty protected header.
  const tbs = sigStructure(hdr.size ? prot : new Uint8Array(0), payload, aad);
  const expectTbs = c.intermediates?.ToBeSign_hex;
  // The intermediates of a "fail" example describe the message before it was altered.
  if (expectTbs && !c.fail && !equalBytes(hexToBytes(expectTbs), tbs)) {
    throw new Refusal('structure', "Sig_structure differs from the example's ToBeSign");
  }
  if (alg === -8 && key.crv === 'Ed25519') {
    ed25519VerifyStrict(sig, tbs, hexToBytes(key.x_hex));
    if (key.d_hex && !c.fail && !equalBytes(ed25519.sign(tbs, hexToBytes(key.d_hex)), sig)) {
      throw new Refusal('signature', 'signature recomputed from d differs (Ed25519 is deterministic)');
    }
  } else if (alg === -7 && key.crv === 'P-256') {
    const pub = new Uint8Array([4, ...Buffer.from(key.x, 'base64url'), ...Buffer.from(key.y, 'base64url')]);
    let ok = false;
    try {
      ok = p256.verify(sig, tbs, pub, { prehash: true, lowS: false });
    } catch {
      ok = false;
    }
    if (!ok) throw new Refusal('signature', 'ES256 signature does not verify');
  } else {
    throw new Refusal('header', `unsupported alg ${alg}`);
  }
}

// ---------------------------------------------------------------------------------------------
// stream-seal/1 (spec/STREAM-SEAL.md): RFC 9162 trees and proofs, seal documents, RFC 9942
// checkpoints and inclusion receipts, completeness. Refusals carry the Rust code as their class.
// ---------------------------------------------------------------------------------------------

const SEAL_SCHEMA_ID = 'stream-seal/1';
// stream-seal/2 (section 3.2): a final seal that also commits to the call's signed documents.
const SEAL_SCHEMA_ID_V2 = 'stream-seal/2';
const MAX_SEALED_DOCUMENTS = 16;
const MAX_DOCUMENT_KIND_BYTES = 64;
const DOCUMENT_KIND = /^[a-z][a-z0-9-]*\/[1-9][0-9]*$/;
const SEAL_LIMITS = { documentBytes: 16_384, depth: 2, stringBytes: 4_096, arrayLen: 64 };
const SEAL_FIELDS = [
  ['closed_at', 'datetime'], ['empty_windows_skipped', 'uint'], ['final', 'bool'],
  ['first_window_id', 'uint'], ['last_window_id', 'uint'], ['root', 'hex64'],
  ['schema', 'schema'], ['steward', 'text'], ['stream_id', 'text'], ['tree_size', 'uint'],
];
const SEAL_SCHEMA_CODES = new Set([
  'wrong_type', 'null', 'unknown_field', 'missing_field', 'empty_string', 'negative_unsigned',
  'bad_closed_at', 'seal_wrong_schema', 'seal_bad_root', 'seal_tree_size_zero',
  'seal_window_range_reversed', 'seal_window_count_mismatch',
  'seal_bad_document_kind', 'seal_bad_document_digest', 'seal_too_many_documents', 'seal_documents_not_final',
]);
const VDS_LABEL = 395;
const VDP_LABEL = 396;
const SEAL_DOC_LABEL = -65537;
const INCLUSION_PROOFS = -1;
const CONSISTENCY_PROOFS = -2;
const MAX_NAMED_GAPS = 1024;
const U64_MAX = 2n ** 64n - 1n;

const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let i = 0;
  for (const p of parts) { out.set(p, i); i += p.length; }
  return out;
};
const leafHash = (entry) => sha256(concat(new Uint8Array([0]), entry));
const nodeHash = (l, r) => sha256(concat(new Uint8Array([1]), l, r));
/** The largest power of two smaller than n (n >= 2), as a BigInt. */
function split(n) {
  let k = 1n;
  while (k * 2n < n) k *= 2n;
  return k;
}
function mth(leaves) {
  const n = leaves.length;
  if (n === 0) return sha256(new Uint8Array(0));
  if (n === 1) return leaves[0];
  const k = Number(split(BigInt(n)));
  return nodeHash(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}
function genPath(m, leaves) {
  const n = leaves.length;
  if (n === 1) return [];
  const k = Number(split(BigInt(n)));
  if (m < k) return [...genPath(m, leaves.slice(0, k)), mth(leaves.slice(k))];
  return [...genPath(m - k, leaves.slice(k)), mth(leaves.slice(0, k))];
}
function genSubproof(m, leaves, b) {
  const n = leaves.length;
  if (m === n) return b ? [] : [mth(leaves)];
  const k = Number(split(BigInt(n)));
  if (m <= k) return [...genSubproof(m, leaves.slice(0, k), b), mth(leaves.slice(k))];
  return [...genSubproof(m - k, leaves.slice(k), false), mth(leaves.slice(0, k))];
}
function pathLen(m, n) {
  m = BigInt(m); n = BigInt(n);
  let len = 0;
  while (n > 1n) {
    const k = split(n);
    if (m >= k) { m -= k; n -= k; } else n = k;
    len += 1;
  }
  return len;
}
function proofLen(m, n) {
  m = BigInt(m); n = BigInt(n);
  let len = 0;
  let b = true;
  while (m !== n) {
    const k = split(n);
    if (m <= k) n = k; else { m -= k; n -= k; b = false; }
    len += 1;
  }
  return b ? len : len + 1;
}
function proofPath(hexes) {
  return hexes.map((h) => {
    const b = hexToBytes(h);
    if (b.length !== 32) throw new Refusal('proof_bad_element', `path element of ${b.length} bytes`);
    return b;
  });
}
function rootFromInclusion(index, size, leaf, path) {
  let fn = BigInt(index);
  let sn = BigInt(size);
  if (fn >= sn) throw new Refusal('proof_index_out_of_range', `leaf index ${index} >= tree size ${size}`);
  if (path.length !== pathLen(index, size)) throw new Refusal('proof_wrong_length', `path of ${path.length} hashes, PATH(${index}, ${size}) has ${pathLen(index, size)}`);
  sn -= 1n;
  let r = leaf;
  for (const p of path) {
    if (sn === 0n) throw new Refusal('proof_wrong_length', 'path longer than the tree');
    if ((fn & 1n) === 1n || fn === sn) {
      r = nodeHash(p, r);
      while ((fn & 1n) === 0n && fn !== 0n) { fn >>= 1n; sn >>= 1n; }
    } else {
      r = nodeHash(r, p);
    }
    fn >>= 1n; sn >>= 1n;
  }
  if (sn !== 0n) throw new Refusal('proof_wrong_length', 'path shorter than the tree');
  return r;
}
function verifyInclusion(index, size, leaf, path, root) {
  if (!equalBytes(rootFromInclusion(index, size, leaf, path), root)) throw new Refusal('proof_root_mismatch', 'the path leads to another root');
}
function rootFromConsistency(first, second, firstRoot, path) {
  const m = BigInt(first);
  const n = BigInt(second);
  if (!(m > 0n && m <= n)) throw new Refusal('proof_sizes_out_of_order', `sizes (${first}, ${second})`);
  if (path.length !== proofLen(m, n)) throw new Refusal('proof_wrong_length', `path of ${path.length} hashes, PROOF(${first}, ${second}) has ${proofLen(m, n)}`);
  if (m === n) return firstRoot;
  if ((m & (m - 1n)) === 0n) path = [firstRoot, ...path];
  let fn = m - 1n;
  let sn = n - 1n;
  while ((fn & 1n) === 1n) { fn >>= 1n; sn >>= 1n; }
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0n) throw new Refusal('proof_wrong_length', 'path longer than the trees');
    if ((fn & 1n) === 1n || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while ((fn & 1n) === 0n && fn !== 0n) { fn >>= 1n; sn >>= 1n; }
    } else {
      sr = nodeHash(sr, c);
    }
    fn >>= 1n; sn >>= 1n;
  }
  if (sn !== 0n) throw new Refusal('proof_wrong_length', 'path shorter than the trees');
  if (!equalBytes(fr, firstRoot)) throw new Refusal('proof_first_root_mismatch', 'the path does not lead to the first root');
  return sr;
}
function verifyConsistency(first, second, firstRoot, secondRoot, path) {
  if (!equalBytes(rootFromConsistency(first, second, firstRoot, path), secondRoot)) throw new Refusal('proof_root_mismatch', 'the path leads to another second root');
}

/** name/version: [a-z][a-z0-9-]* "/" [1-9][0-9]*, at most 64 bytes (section 3.2). */
const isDocumentKind = (k) => utf8.encode(k).length <= MAX_DOCUMENT_KIND_BYTES && DOCUMENT_KIND.test(k);

/** `documents` of a stream-seal/2 seal, in the order of section 3.2 (members in canonical order). */
function checkDocuments(x) {
  if (x === null) throw new Refusal('null', 'documents is null');
  if (!isObject(x)) throw new Refusal('wrong_type', 'documents is not an object');
  const keys = Object.keys(x);
  if (keys.length > MAX_SEALED_DOCUMENTS) throw new Refusal('seal_too_many_documents', `${keys.length} documents, at most ${MAX_SEALED_DOCUMENTS}`);
  // Canonical input: JCS orders members by UTF-16 code units, which is JS string order.
  for (const k of keys.sort()) {
    const d = x[k];
    if (!isDocumentKind(k)) throw new Refusal('seal_bad_document_kind', `documents key ${JSON.stringify(k)} is not name/version`);
    if (d === null) throw new Refusal('null', `documents[${JSON.stringify(k)}] is null`);
    if (typeof d !== 'string') throw new Refusal('wrong_type', `documents[${JSON.stringify(k)}] is not a string`);
    if (!HEX64.test(d)) throw new Refusal('seal_bad_document_digest', `documents[${JSON.stringify(k)}] is not 64 lowercase hex digits`);
  }
}

/**
 * The strict stream-seal/1 and stream-seal/2 decoder: canonical form first (class
 * canonical:<kind>), then the schema; `schema` "stream-seal/2" selects the field set with
 * `documents` (section 3.2), any other value is read as stream-seal/1.
 */
function decodeSeal(data) {
  let v;
  try {
    v = parseJcr1(data, SEAL_LIMITS);
  } catch (e) {
    if (e instanceof Refusal) throw new Refusal(`canonical:${e.cls}`, e.message);
    throw e;
  }
  if (!isObject(v)) throw new Refusal(v === null ? 'null' : 'wrong_type', 'the seal is not an object');
  const v2 = v.schema === SEAL_SCHEMA_ID_V2;
  const names = SEAL_FIELDS.map(([n]) => n).concat(v2 ? ['documents'] : []);
  for (const k of Object.keys(v)) if (!names.includes(k)) throw new Refusal('unknown_field', `unknown field ${JSON.stringify(k)}`);
  let docsChecked = !v2;
  for (const [name, ty] of SEAL_FIELDS) {
    if (!docsChecked && name > 'documents') {
      if (!Object.hasOwn(v, 'documents')) throw new Refusal('missing_field', 'documents missing');
      checkDocuments(v.documents);
      docsChecked = true;
    }
    if (!Object.hasOwn(v, name)) throw new Refusal('missing_field', `${name} missing`);
    const x = v[name];
    if (x === null) throw new Refusal('null', `${name} is null`);
    if (ty === 'uint') {
      if (typeof x !== 'number' || !Number.isInteger(x)) throw new Refusal('wrong_type', `${name} is not an integer`);
      if (x < 0) throw new Refusal('negative_unsigned', `${name} is negative`);
    } else if (ty === 'bool') {
      if (typeof x !== 'boolean') throw new Refusal('wrong_type', `${name} is not a boolean`);
    } else {
      if (typeof x !== 'string') throw new Refusal('wrong_type', `${name} is not a string`);
      if (ty === 'schema' && x !== SEAL_SCHEMA_ID && x !== SEAL_SCHEMA_ID_V2) throw new Refusal('seal_wrong_schema', `schema ${JSON.stringify(x)}`);
      if (ty === 'text' && x === '') throw new Refusal('empty_string', `${name} is empty`);
      if (ty === 'datetime') {
        try {
          checkClosedAt(x);
        } catch {
          throw new Refusal('bad_closed_at', `closed_at ${JSON.stringify(x)} is not a real YYYY-MM-DDTHH:MM:SSZ`);
        }
      }
      if (ty === 'hex64' && !HEX64.test(x)) throw new Refusal('seal_bad_root', 'root is not 64 lowercase hex digits');
    }
  }
  if (v.tree_size === 0) throw new Refusal('seal_tree_size_zero', 'tree_size 0');
  if (v.first_window_id > v.last_window_id) throw new Refusal('seal_window_range_reversed', 'first_window_id > last_window_id');
  if (BigInt(v.last_window_id) - BigInt(v.first_window_id) + 1n !== BigInt(v.tree_size) + BigInt(v.empty_windows_skipped)) {
    throw new Refusal('seal_window_count_mismatch', 'last - first + 1 != tree_size + empty_windows_skipped');
  }
  if (v2 && !v.final) throw new Refusal('seal_documents_not_final', 'stream-seal/2 (documents) on a seal that is not final');
  // Round trip with the JCS library: the accepted value re-encodes to the input bytes.
  if (!equalBytes(utf8.encode(canonicalize(v)), data)) throw new Refusal('canonical:non_canonical', 'the seal does not re-encode to itself');
  return v;
}

const sealSubject = (seal) => `${seal.stream_id}:seal:${seal.tree_size}`;
/** Section 4.1 with cbor2 (preferred heads; labels inserted in their bytewise encoded order). */
const sealProtected = (seal, sealBytes, kid) => cborEncode(new Map([
  [1, -8], [4, kid], [15, new Map([[1, seal.steward], [2, sealSubject(seal)]])],
  [VDS_LABEL, 1], [SEAL_DOC_LABEL, sealBytes],
]));
const proofCbor = (a, b, path) => cborEncode([a, b, path]);
const sealUnprotected = (label, a, b, path) => (label === null
  ? new Map()
  : new Map([[VDP_LABEL, new Map([[label, [proofCbor(a, b, path)]]])]]));
const sealEnvelope = (prot, unprot, sig) => cborEncode(new Tag(18, [prot, unprot, null, sig]));
const sealSigStructure = (prot, root) => cborEncode(['Signature1', prot, new Uint8Array(0), root]);

function sealStrictSignature(sig, tbs, pub) {
  // Step 19: A and R canonical points of prime order (no torsion component, not small order) ...
  try {
    if (sig.length !== 64) throw new Error('signature length');
    for (const enc of [pub, sig.subarray(0, 32)]) {
      const p = ed25519.Point.fromBytes(enc, false);
      if (p.isSmallOrder() || !p.isTorsionFree()) throw new Error('torsion');
    }
  } catch {
    throw new Refusal('seal_cose_torsion', 'key or R is not a canonical point of prime order');
  }
  // ... step 20: RFC 8032 verification with S < L and canonical encodings (zip215: false).
  let ok = false;
  try {
    ok = ed25519.verify(sig, tbs, pub, { zip215: false });
  } catch {
    ok = false;
  }
  if (!ok) throw new Refusal('seal_cose_bad_signature', 'Ed25519 signature does not verify');
}

/** Steps 1-13 of section 5. */
function sealParse(data, pub) {
  if (!data.length) throw new Refusal('seal_cose_malformed', 'empty input');
  if (data[0] === 0x84) throw new Refusal('seal_cose_untagged', 'untagged COSE_Sign1');
  if (data[0] >> 5 === 6 && data[0] !== 0xd2) throw new Refusal('seal_cose_wrong_tag', 'another tag than 18');
  if (data[0] !== 0xd2) throw new Refusal('seal_cose_malformed', 'not a tagged COSE_Sign1');
  let item;
  try {
    item = cborDecodeExact(data);
  } catch (e) {
    throw new Refusal('seal_cose_malformed', e.message);
  }
  if (!(item instanceof Tag) || Number(item.tag) !== 18) throw new Refusal('seal_cose_wrong_tag', 'another tag than 18');
  const body = item.contents;
  if (!(Array.isArray(body) && body.length === 4)) throw new Refusal('seal_cose_malformed', 'not an array of 4');
  const [prot, unprot, payload, sig] = body;
  if (!isBytes(prot) || !(unprot instanceof Map) || !isBytes(sig)) throw new Refusal('seal_cose_malformed', 'protected, unprotected or signature of the wrong type');
  let hdr;
  try {
    hdr = cborDecodeExact(prot);
  } catch (e) {
    throw new Refusal('seal_cose_malformed', `protected header: ${e.message}`);
  }
  if (!(hdr instanceof Map)) throw new Refusal('seal_cose_malformed', 'protected header is not a map');
  if (hdr.get(1) !== -8) throw new Refusal('seal_cose_alg_not_eddsa', `alg ${hdr.get(1)}`);
  if (hdr.get(VDS_LABEL) !== 1) throw new Refusal('seal_cose_vds_not_rfc9162', `vds ${hdr.get(VDS_LABEL)}`);
  const sealBytes = hdr.get(SEAL_DOC_LABEL);
  if (!isBytes(sealBytes)) throw new Refusal('seal_cose_seal_missing', 'no seal document under -65537');
  const seal = decodeSeal(sealBytes);
  const kid = hdr.get(4);
  if (!isBytes(kid) || kid.length !== 32) throw new Refusal('seal_cose_bad_kid', 'kid is not a 32-byte string');
  const claims = hdr.get(15);
  if (!(claims instanceof Map) || [...claims.keys()].join() !== '1,2' || [...claims.keys()].some((k) => typeof k !== 'number')
      || ![...claims.values()].every((x) => typeof x === 'string')) {
    throw new Refusal('seal_cose_iss_mismatch', 'CWT claims are not {1: tstr, 2: tstr}');
  }
  if (claims.get(1) !== seal.steward) throw new Refusal('seal_cose_iss_mismatch', "iss is not the seal's steward");
  if (claims.get(2) !== sealSubject(seal)) throw new Refusal('seal_cose_sub_mismatch', `sub ${claims.get(2)} is not ${sealSubject(seal)}`);
  if (!equalBytes(sealProtected(seal, sealBytes, kid), prot)) throw new Refusal('seal_cose_protected_not_canonical', 'protected header differs from section 4.1 rebuilt');
  if (payload !== null) throw new Refusal('seal_cose_payload_attached', 'payload is not nil');
  const head = cborEncode(prot);
  const unprotBytes = data.subarray(2 + head.length, Math.max(2 + head.length, data.length - 67));
  if (sig.length !== 64 || !equalBytes(concat(new Uint8Array([0xd2, 0x84]), head, unprotBytes, new Uint8Array([0xf6, 0x58, 0x40]), sig), data)) {
    throw new Refusal('seal_cose_envelope_not_canonical', 'envelope is not d2 84 <prot> <unprot> f6 58 40 <sig>');
  }
  if (!equalBytes(kid, thumbprint(pub))) throw new Refusal('seal_cose_unknown_kid', 'kid is not the thumbprint of the key');
  return { seal, prot, unprot, unprotBytes, sig };
}

const isCborUint = (x) => (typeof x === 'number' && Number.isInteger(x) && x >= 0)
  || (typeof x === 'bigint' && x >= 0n && x <= U64_MAX);

/** Steps 14-15: null for {}, else [a, b, path]. */
function sealOneProof(unprot, label) {
  if (unprot.size === 0) return null;
  if (unprot.size !== 1 || !unprot.has(VDP_LABEL)) throw new Refusal('seal_cose_bad_vdp', 'unprotected header is not {396: ...}');
  const vdp = unprot.get(VDP_LABEL);
  if (!(vdp instanceof Map) || vdp.size !== 1 || !vdp.has(label) || !Array.isArray(vdp.get(label))) throw new Refusal('seal_cose_bad_vdp', `vdp is not {${label}: [...]}`);
  const proofs = vdp.get(label);
  if (proofs.length !== 1 || !isBytes(proofs[0])) throw new Refusal('seal_cose_bad_vdp', `${proofs.length} proofs, expected one byte string`);
  const p = proofs[0];
  let parts;
  try {
    parts = cborDecodeExact(p);
  } catch (e) {
    throw new Refusal('seal_cose_proof_malformed', e.message);
  }
  if (!Array.isArray(parts) || parts.length !== 3 || !Array.isArray(parts[2])) throw new Refusal('seal_cose_proof_malformed', 'proof is not [uint, uint, [* bstr]]');
  const [a, b, path] = parts;
  if (!isCborUint(a) || !isCborUint(b)) throw new Refusal('seal_cose_proof_malformed', 'proof sizes are not uint');
  for (const e of path) {
    if (!isBytes(e)) throw new Refusal('seal_cose_proof_malformed', 'path element is not a byte string');
    if (e.length !== 32) throw new Refusal('proof_bad_element', `path element of ${e.length} bytes`);
  }
  if (!equalBytes(proofCbor(a, b, path), p)) throw new Refusal('seal_cose_proof_malformed', 'proof is not in deterministic CBOR');
  return [a, b, path];
}

function verifyInclusionReceipt(data, contentHash, pub) {
  const { seal, prot, unprot, unprotBytes, sig } = sealParse(data, pub);
  const proof = sealOneProof(unprot, INCLUSION_PROOFS);
  if (proof === null) throw new Refusal('seal_cose_bad_vdp', 'an inclusion receipt needs {396: {-1: [proof]}}');
  const [size, index, path] = proof;
  if (!equalBytes(cborEncode(sealUnprotected(INCLUSION_PROOFS, size, index, path)), unprotBytes)) throw new Refusal('seal_cose_envelope_not_canonical', 'unprotected header does not re-encode to itself');
  if (BigInt(size) !== BigInt(seal.tree_size)) throw new Refusal('proof_tree_size_mismatch', `proof tree size ${size}, seal ${seal.tree_size}`);
  const root = rootFromInclusion(index, size, leafHash(contentHash), path);
  if (toHex(root) !== seal.root) throw new Refusal('proof_root_mismatch', 'the inclusion path leads to another root');
  sealStrictSignature(sig, sealSigStructure(prot, root), pub);
  return { seal, index: Number(index) };
}

function verifyCheckpoint(data, pub) {
  const { seal, prot, unprot, unprotBytes, sig } = sealParse(data, pub);
  const proof = sealOneProof(unprot, CONSISTENCY_PROOFS);
  const again = proof ? sealUnprotected(CONSISTENCY_PROOFS, ...proof) : new Map();
  if (!equalBytes(cborEncode(again), unprotBytes)) throw new Refusal('seal_cose_envelope_not_canonical', 'unprotected header does not re-encode to itself');
  if (proof) {
    const [a, b] = proof.map((x, i) => (i < 2 ? BigInt(x) : x));
    if (b !== BigInt(seal.tree_size)) throw new Refusal('proof_tree_size_mismatch', `consistency second size ${b}, seal ${seal.tree_size}`);
    if (!(a > 0n && a < b)) throw new Refusal('proof_sizes_out_of_order', `consistency sizes (${a}, ${b})`);
  }
  sealStrictSignature(sig, sealSigStructure(prot, hexToBytes(seal.root)), pub);
  return { seal, proof };
}

function consistencyStep(prev, seal, proof) {
  if (proof === null) {
    if (prev.tree_size !== seal.tree_size) throw new Refusal('proof_tree_size_mismatch', 'no consistency proof, sizes differ');
    if (prev.root !== seal.root) throw new Refusal('proof_root_mismatch', 'no consistency proof, roots differ');
    return;
  }
  const [first, second, path] = proof;
  if (BigInt(first) !== BigInt(prev.tree_size)) throw new Refusal('proof_tree_size_mismatch', 'consistency first size is not the previous tree size');
  verifyConsistency(first, second, hexToBytes(prev.root), hexToBytes(seal.root), path);
}

/** Section 6. receipts: {window_id, content_hash, stream_id, steward}; checkpoints: {seal, proof}. */
function checkStream(receipts, checkpoints) {
  const problems = [];
  if (!checkpoints.length) return [{ code: 'no_seals' }];
  const fin = checkpoints[checkpoints.length - 1].seal;
  let chainOk = true;
  if (checkpoints[0].proof !== null) {
    problems.push({ code: 'seal_chain_broken', seal_index: 0, reason: 'first_seal_has_predecessor' });
    chainOk = false;
  }
  for (let j = 1; j < checkpoints.length; j += 1) {
    const prev = checkpoints[j - 1].seal;
    const { seal: s, proof } = checkpoints[j];
    let reason = null;
    if (prev.stream_id !== s.stream_id || prev.steward !== s.steward) reason = 'stream_changed';
    else if (prev.first_window_id !== s.first_window_id) reason = 'first_window_changed';
    else if (s.tree_size < prev.tree_size) reason = 'size_decreased';
    else if (s.last_window_id < prev.last_window_id) reason = 'last_window_decreased';
    else if (s.closed_at < prev.closed_at) reason = 'closed_at_regressed'; // fixed-width UTC text
    else if (prev.final) reason = 'seal_after_final';
    if (reason) {
      problems.push({ code: 'seal_chain_broken', seal_index: j, reason });
      chainOk = false;
    }
    try {
      consistencyStep(prev, s, proof);
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      problems.push({ code: 'consistency_failed', seal_index: j, proof_code: e.cls });
    }
  }
  if (!fin.final) problems.push({ code: 'no_final_seal' });

  const seen = new Map();
  let maxId = null;
  const accepted = [];
  receipts.forEach((r, index) => {
    const w = r.window_id;
    if (r.stream_id !== fin.stream_id || r.steward !== fin.steward) {
      problems.push({ code: 'foreign_receipt', index, window_id: w });
      return;
    }
    if (seen.has(w)) {
      const first = seen.get(w);
      problems.push({ code: 'repeated_window', index, window_id: w, first_index: first, same_content: equalBytes(receipts[first].content_hash, r.content_hash) });
      return;
    }
    seen.set(w, index);
    if (w < fin.first_window_id || w > fin.last_window_id) {
      problems.push({ code: 'extra_window', index, window_id: w });
      return;
    }
    if (maxId !== null && w < maxId) problems.push({ code: 'reordered_window', index, window_id: w, previous_window_id: maxId });
    maxId = maxId === null ? w : Math.max(maxId, w);
    accepted.push({ index, w, h: r.content_hash });
  });

  const ids = accepted.map(({ index, w }) => [w, index]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  const lowerBound = (x) => { let lo = 0; let hi = ids.length; while (lo < hi) { const mid = (lo + hi) >> 1; if (ids[mid][0] < x) lo = mid + 1; else hi = mid; } return lo; };
  const upperBound = (x) => { let lo = 0; let hi = ids.length; while (lo < hi) { const mid = (lo + hi) >> 1; if (ids[mid][0] <= x) lo = mid + 1; else hi = mid; } return lo; };
  let countsOk = chainOk;
  let prevLast = null;
  let prevSize = 0;
  checkpoints.forEach(({ seal: s }, j) => {
    const lo = prevLast === null ? s.first_window_id : prevLast + 1;
    const hi = s.last_window_id;
    if (chainOk && lo <= hi + 1) {
      const a = lowerBound(lo);
      const b = upperBound(hi);
      const found = b - a;
      const sealed = Math.max(s.tree_size - prevSize, 0);
      const width = lo > hi ? 0 : hi - lo + 1;
      if (found < sealed) {
        countsOk = false;
        const missing = sealed - found;
        const gaps = Math.max(width - found, 0);
        if (gaps === missing && gaps <= MAX_NAMED_GAPS) {
          const present = new Set(ids.slice(a, b).map(([w]) => w));
          for (let w = lo; w <= hi; w += 1) {
            if (present.has(w)) continue;
            const k = lowerBound(w);
            problems.push({ code: 'missing_window', window_id: w, before_index: k < ids.length ? ids[k][1] : receipts.length, seal_index: j });
          }
        } else {
          problems.push({ code: 'missing_windows_unlocated', seal_index: j, count: missing, window_ids: [lo, hi] });
        }
      } else if (found > sealed) {
        countsOk = false;
        problems.push({ code: 'surplus_windows', seal_index: j, sealed, found });
      }
    }
    const size = s.tree_size;
    if (countsOk && size >= 1 && size <= accepted.length) {
      const root = mth(accepted.slice(0, size).map(({ h }) => leafHash(h)));
      if (toHex(root) !== s.root) problems.push({ code: 'root_mismatch', seal_index: j, tree_size: size });
      const first = accepted[0].w;
      const last = accepted[size - 1].w;
      if (first !== s.first_window_id) problems.push({ code: 'window_range_mismatch', seal_index: j, field: 'first_window_id', sealed: s.first_window_id, found: first });
      if (last !== s.last_window_id) problems.push({ code: 'window_range_mismatch', seal_index: j, field: 'last_window_id', sealed: s.last_window_id, found: last });
    }
    prevLast = hi;
    prevSize = s.tree_size;
  });
  if (accepted.length !== fin.tree_size) problems.push({ code: 'tree_size_mismatch', seal_index: checkpoints.length - 1, sealed: fin.tree_size, found: accepted.length });
  return problems;
}

/** The same code, or both canonical-form refusals of a seal document (JCR-1 codes). */
const sealCodeMatches = (got, expect) => got === expect
  || (got.startsWith('canonical:') && !SEAL_SCHEMA_CODES.has(expect) && !expect.startsWith('seal_') && !expect.startsWith('proof_'));

function expectRefusal(fn, expect) {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    if (!sealCodeMatches(e.cls, expect)) throw new Refusal('mismatch', `refused as ${e.cls} (${e.message}); the Rust code is ${expect}`);
    return `refused [${e.cls}], rust code ${expect}`;
  }
  throw new Refusal('accepted', `ACCEPTED; expected refusal ${expect}`);
}

/** Key-sorted JSON, to compare problem objects whatever the key order. */
const sortedJson = (v) => JSON.stringify(v, (_, x) => (isObject(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
const sealEntry = (i) => blake3(utf8.encode(`jouleclaw stream-seal vector leaf ${i}`));
// The vector file's "verified with another key" case carries no key: spec/STREAM-SEAL.md
// section 8 names it (the Ed25519 key of the seed of 32 bytes 0x07). A case's own key wins.
const OTHER_KEY_CASE = 'verified with another key';
function sealNegativeKey(c, pub) {
  if (c.public_key_hex !== undefined) return hexToBytes(c.public_key_hex);
  if (c.description === OTHER_KEY_CASE) return ed25519.getPublicKey(new Uint8Array(32).fill(7));
  return pub;
}

/** What a stream-seal/2 seal commits to for one document: SHA-256 of its bytes as stored. */
const documentDigest = (cose) => toHex(sha256(cose));

/**
 * stream-seal-2-vectors.json (section 3.2): sealed streams whose final seal commits to the call's
 * documents (each digest recomputed from its bytes), and negative seal documents.
 */
function checkSeal2File(path, name) {
  let doc;
  let pub;
  check(`${name} key`, () => {
    doc = loadJsonFile(path);
    pub = hexToBytes(doc.key.public_key_hex);
    expectEqual('kid (RFC 9679 thumbprint)', toHex(thumbprint(pub)), doc.key.kid_hex);
    if (!doc.streams?.length || !doc.negative?.length) throw new Refusal('mismatch', 'no streams or no negative vectors');
  });
  if (!doc || !pub) return;
  doc.streams.forEach((stream, si) => {
    check(`${name} stream ${si} ${(stream.description ?? '').slice(0, 48)}`, () => {
      const windows = stream.windows;
      windows.forEach((w, i) => expectEqual(`windows[${i}].entry_hex`, w.entry_hex, toHex(sealEntry(i))));
      const leaves = windows.map((w) => leafHash(hexToBytes(w.entry_hex)));
      const verified = [];
      let prev = null;
      stream.checkpoints.forEach((cp, j) => {
        const { seal, proof } = verifyCheckpoint(hexToBytes(cp.cose_sign1_hex), pub);
        expectEqual(`checkpoint ${j} seal_json`, canonicalize(seal), cp.seal_json);
        expectEqual(`checkpoint ${j} root`, seal.root, toHex(mth(leaves.slice(0, seal.tree_size))));
        expectEqual(`checkpoint ${j} stream_id`, seal.stream_id, doc.stream_id);
        expectEqual(`checkpoint ${j} steward`, seal.steward, doc.steward);
        const last = j === stream.checkpoints.length - 1;
        expectEqual(`checkpoint ${j} schema`, seal.schema, last ? SEAL_SCHEMA_ID_V2 : SEAL_SCHEMA_ID);
        if (prev) consistencyStep(prev, seal, proof);
        verified.push({ seal, proof });
        prev = seal;
      });
      const receipts = windows.map((w) => ({
        window_id: w.window_id, content_hash: hexToBytes(w.entry_hex), stream_id: doc.stream_id, steward: doc.steward,
      }));
      expectEqual('completeness problems', sortedJson(checkStream(receipts, verified)), '[]');
      const fin = verified[verified.length - 1].seal;
      const listed = {};
      for (const d of stream.documents) {
        const digest = documentDigest(hexToBytes(d.cose_sign1_hex));
        expectEqual(`digest of ${d.kind} (SHA-256 of its bytes)`, digest, d.digest_hex);
        listed[d.kind] = digest;
      }
      expectEqual('final seal documents', sortedJson(fin.documents), sortedJson(listed));
      return `${verified.length} checkpoints, final stream-seal/2 with ${Object.keys(listed).length} document digests recomputed`;
    });
  });
  for (const c of doc.negative) {
    check(`${name} negative ${(c.description ?? '').slice(0, 48)}`, () => {
      if (c.kind !== 'seal_json') throw new Refusal('mismatch', `unknown negative kind ${c.kind}`);
      return expectRefusal(() => decodeSeal(hexToBytes(c.input_hex)), c.expect);
    });
  }
}

function checkSealFile(path, name) {
  let doc;
  let seed;
  let pub;
  check(`${name} key`, () => {
    doc = loadJsonFile(path);
    seed = hexToBytes(doc.key.seed_hex);
    pub = hexToBytes(doc.key.public_key_hex);
    expectEqual('public key from seed', toHex(ed25519.getPublicKey(seed)), doc.key.public_key_hex);
    expectEqual('kid (RFC 9679 thumbprint)', toHex(thumbprint(pub)), doc.key.kid_hex);
    for (const part of ['trees', 'inclusion', 'consistency', 'negative']) {
      if (!doc[part]?.length) throw new Refusal('mismatch', `no ${part} vectors`);
    }
  });
  if (!seed || !pub) return;
  const biggest = Math.max(1000, ...(doc.trees ?? []).map((t) => t.size));
  const leaves = Array.from({ length: biggest }, (_, i) => leafHash(sealEntry(i)));
  const hexes = (hs) => hs.map(toHex);
  const sameList = (what, got, want) => expectEqual(what, JSON.stringify(got), JSON.stringify(want));

  for (const t of doc.trees ?? []) {
    check(`${name} tree ${t.size}`, () => expectEqual('root_hex', toHex(mth(leaves.slice(0, t.size))), t.root_hex));
  }
  for (const v of doc.inclusion ?? []) {
    check(`${name} inclusion (${v.leaf_index}, ${v.tree_size})`, () => {
      const m = v.leaf_index;
      const n = v.tree_size;
      expectEqual('entry_hex', toHex(sealEntry(m)), v.entry_hex);
      const lh = leafHash(hexToBytes(v.entry_hex));
      expectEqual('leaf_hash_hex', toHex(lh), v.leaf_hash_hex);
      expectEqual('root_hex', toHex(mth(leaves.slice(0, n))), v.root_hex);
      sameList('path_hex (PATH regenerated)', hexes(genPath(m, leaves.slice(0, n))), v.path_hex);
      verifyInclusion(m, n, lh, proofPath(v.path_hex), hexToBytes(v.root_hex));
      return `${v.path_hex.length} hashes`;
    });
  }
  for (const v of doc.consistency ?? []) {
    check(`${name} consistency (${v.first_size}, ${v.second_size})`, () => {
      const m = v.first_size;
      const n = v.second_size;
      expectEqual('first_root_hex', toHex(mth(leaves.slice(0, m))), v.first_root_hex);
      expectEqual('second_root_hex', toHex(mth(leaves.slice(0, n))), v.second_root_hex);
      sameList('path_hex (PROOF regenerated)', hexes(genSubproof(m, leaves.slice(0, n), true)), v.path_hex);
      verifyConsistency(m, n, hexToBytes(v.first_root_hex), hexToBytes(v.second_root_hex), proofPath(v.path_hex));
      return `${v.path_hex.length} hashes`;
    });
  }

  const stream = doc.stream ?? {};
  const windows = stream.windows ?? [];
  const cps = stream.checkpoints ?? [];
  check(`${name} stream windows`, () => {
    if (!windows.length || !cps.length) throw new Refusal('mismatch', 'no stream windows or checkpoints');
    windows.forEach((w, i) => {
      expectEqual(`windows[${i}].leaf_index`, w.leaf_index, i);
      expectEqual(`windows[${i}].content_hash_hex`, w.content_hash_hex, toHex(sealEntry(i)));
      checkClosedAt(w.closed_at);
      if (i && !(w.window_id > windows[i - 1].window_id)) throw new Refusal('mismatch', 'window ids do not increase');
    });
    return `${windows.length} windows`;
  });
  const verified = [];
  let prev = null;
  cps.forEach((cp, j) => {
    check(`${name} checkpoint ${j} (tree_size ${cp.seal?.tree_size})`, () => {
      const sealBytes = utf8.encode(cp.seal_json);
      const seal = decodeSeal(sealBytes);
      expectEqual('seal_json (canonical JSON of seal)', canonicalize(cp.seal), cp.seal_json);
      const n = seal.tree_size;
      const sealed = windows.slice(0, n);
      expectEqual('root', seal.root, toHex(mth(leaves.slice(0, n))));
      expectEqual('stream_id', seal.stream_id, stream.stream_id);
      expectEqual('steward', seal.steward, stream.steward);
      expectEqual('first_window_id', seal.first_window_id, sealed[0].window_id);
      expectEqual('last_window_id', seal.last_window_id, sealed[sealed.length - 1].window_id);
      expectEqual('closed_at', seal.closed_at, sealed[sealed.length - 1].closed_at);
      expectEqual('final', seal.final, n === windows.length && j === cps.length - 1);
      expectEqual('subject', sealSubject(seal), cp.subject);
      const prot = sealProtected(seal, sealBytes, thumbprint(pub));
      expectEqual('protected_hex', toHex(prot), cp.protected_hex);
      const tbs = sealSigStructure(prot, hexToBytes(seal.root));
      expectEqual('to_be_signed_hex', toHex(tbs), cp.to_be_signed_hex);
      const sig = ed25519.sign(tbs, seed);
      expectEqual('signature_hex (recomputed from the test key)', toHex(sig), cp.signature_hex);
      let unprot;
      if (prev === null) {
        expectEqual('consistency', cp.consistency, null);
        unprot = new Map();
      } else {
        const m = prev.tree_size;
        const path = genSubproof(m, leaves.slice(0, n), true);
        expectEqual('consistency', sortedJson(cp.consistency), sortedJson({ first_size: m, path_hex: hexes(path), second_size: n }));
        unprot = sealUnprotected(CONSISTENCY_PROOFS, m, n, path);
      }
      expectEqual('cose_sign1_hex', toHex(sealEnvelope(prot, unprot, sig)), cp.cose_sign1_hex);
      const got = verifyCheckpoint(hexToBytes(cp.cose_sign1_hex), pub);
      expectEqual('verified seal', sortedJson(got.seal), sortedJson(seal));
      if (prev !== null) consistencyStep(prev, got.seal, got.proof);
      verified.push(got);
      return 'rebuilt byte for byte; strict Ed25519';
    });
    const prevTree = prev ? prev.tree_size : 0;
    for (const inc of cp.inclusion ?? []) {
      check(`${name} checkpoint ${j} inclusion window ${inc.window_id}`, () => {
        const i = inc.leaf_index;
        const w = windows[i];
        expectEqual('window_id', inc.window_id, w.window_id);
        const n = cp.seal.tree_size;
        if (!(prevTree <= i && i < n)) throw new Refusal('mismatch', `leaf ${i} not issued by this checkpoint [${prevTree}, ${n})`);
        const path = genPath(i, leaves.slice(0, n));
        const want = sealEnvelope(hexToBytes(cp.protected_hex), sealUnprotected(INCLUSION_PROOFS, n, i, path), hexToBytes(cp.signature_hex));
        expectEqual('cose_sign1_hex', toHex(want), inc.cose_sign1_hex);
        const got = verifyInclusionReceipt(hexToBytes(inc.cose_sign1_hex), hexToBytes(w.content_hash_hex), pub);
        expectEqual('leaf_index', got.index, i);
        return 'proof to root, strict Ed25519';
      });
    }
    try {
      prev = decodeSeal(utf8.encode(cp.seal_json));
    } catch {
      prev = null;
    }
  });
  check(`${name} stream completeness`, () => {
    const issued = cps.flatMap((cp) => (cp.inclusion ?? []).map((inc) => inc.leaf_index));
    sameList('inclusion receipts, one per window in leaf order', issued, windows.map((_, i) => i));
    if (verified.length !== cps.length) throw new Refusal('mismatch', 'a checkpoint failed');
    const receipts = windows.map((w) => ({ window_id: w.window_id, content_hash: hexToBytes(w.content_hash_hex), stream_id: stream.stream_id, steward: stream.steward }));
    expectEqual('completeness problems', sortedJson(checkStream(receipts, verified)), '[]');
    return 'complete: no problem';
  });

  for (const c of doc.negative ?? []) {
    check(`${name} negative #${c.n} ${c.kind} ${(c.description ?? '').slice(0, 40)}`, () => {
      const { kind, expect } = c;
      if (kind === 'inclusion_proof') {
        return expectRefusal(() => verifyInclusion(c.leaf_index, c.tree_size, leafHash(hexToBytes(c.entry_hex)), proofPath(c.path_hex), hexToBytes(c.root_hex)), expect);
      }
      if (kind === 'consistency_proof') {
        return expectRefusal(() => verifyConsistency(c.first_size, c.second_size, hexToBytes(c.first_root_hex), hexToBytes(c.second_root_hex), proofPath(c.path_hex)), expect);
      }
      if (kind === 'seal_json') return expectRefusal(() => decodeSeal(hexToBytes(c.input_hex)), expect);
      if (kind === 'inclusion_receipt') {
        const key = sealNegativeKey(c, pub);
        return expectRefusal(() => verifyInclusionReceipt(hexToBytes(c.cose_sign1_hex), hexToBytes(c.entry_hex), key), expect);
      }
      if (kind === 'completeness') {
        const checkpoints = c.checkpoints_hex.map((h) => verifyCheckpoint(hexToBytes(h), pub));
        const receipts = c.receipts.map((r) => ({ window_id: r.window_id, content_hash: hexToBytes(r.content_hash_hex), stream_id: r.stream_id, steward: r.steward }));
        const problems = checkStream(receipts, checkpoints);
        if (!problems.length) throw new Refusal('accepted', `stream judged complete; expected ${JSON.stringify(c.expect_problems)}`);
        expectEqual('problems', sortedJson(problems), sortedJson(c.expect_problems));
        return `problems: ${problems.map((p) => p.code).join(', ')}`;
      }
      throw new Refusal('mismatch', `unknown negative kind ${JSON.stringify(kind)}`);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// voice-turn/1 (spec/VOICE-TURN-V1.md): exact levels with BigInt, canonical documents, schema
// rules of section 5 in order
// ---------------------------------------------------------------------------------------------

const VOICE_TURN_ID = 'voice-turn/1';
const NS_PER_SAMPLE = 62_500n;
const PEAK_FLOOR = -9031;
const FULL_SCALE_POWER = 32768n * 32768n;
const VOICE_TURN_LIMITS = { documentBytes: 262_144, depth: 2, stringBytes: 32_768, arrayLen: 64 };
const VOICE_TOP_FIELDS = ['error', 'jc_voice_turn', 'measurement', 'text'];
const VOICE_MEASUREMENT_FIELDS = ['duration_ns', 'peak_dbfs_hundredths', 'rms_dbfs_hundredths', 'samples'];
const VOICE_ERROR_CODE = /^[a-z][a-z0-9_]{0,63}$/;
const VOICE_SCHEMA_CODES = new Set([
  'wrong_type', 'null', 'unknown_field', 'missing_field', 'wrong_schema', 'negative_unsigned',
  'text_and_error', 'bad_error_code', 'duration_mismatch', 'silence_mismatch',
  'level_out_of_range', 'rms_above_peak',
]);

/** 1000*log10(a/b) > k - 1/2, on a^2000 and b^2000 (BigInt; spec section 1.1). */
function levelAbove(a2000, b2000, k) {
  const e = 1n - 2n * k;
  return e >= 0n ? a2000 * 10n ** e > b2000 : a2000 > b2000 * 10n ** -e;
}

/** L(power, reference) as a BigInt, exact (there are no ties); null for silence. */
function levelHundredths(power, reference) {
  if (power === 0n) return null;
  const a2000 = power ** 2000n;
  const b2000 = reference ** 2000n;
  // A starting point only; the walks below decide with integers.
  let k = BigInt(Math.round(1000 * (Math.log10(Number(power)) - Math.log10(Number(reference)))));
  while (!levelAbove(a2000, b2000, k)) k -= 1n;
  while (levelAbove(a2000, b2000, k + 1n)) k += 1n;
  return k;
}

/** The measurement of the PCM segments, with the exact sum of squares and the peak magnitude. */
function measurePcm(pcm) {
  let n = 0n;
  let sum = 0n;
  let peak = 0n;
  for (const seg of pcm) {
    if (!Number.isSafeInteger(seg.repeat) || seg.repeat < 0) throw new Refusal('mismatch', 'bad repeat');
    const repeat = BigInt(seg.repeat);
    let segSum = 0n;
    let segPeak = 0n;
    for (const s of seg.samples) {
      if (!Number.isSafeInteger(s) || s < -32768 || s > 32767) throw new Refusal('mismatch', `sample ${s} outside 16 bits`);
      const b = BigInt(s);
      segSum += b * b;
      const m = b < 0n ? -b : b;
      if (m > segPeak) segPeak = m;
    }
    if (repeat > 0n && segPeak > peak) peak = segPeak;
    sum += segSum * repeat;
    n += BigInt(seg.samples.length) * repeat;
  }
  const show = (v) => (v === null ? 'null' : v.toString());
  const peakLevel = levelHundredths(peak * peak, FULL_SCALE_POWER);
  const rmsLevel = n > 0n ? levelHundredths(sum, n * FULL_SCALE_POWER) : null;
  return {
    measurement: `duration_ns=${n * NS_PER_SAMPLE} peak=${show(peakLevel)} rms=${show(rmsLevel)} samples=${n}`,
    sum,
    peak,
  };
}

/** A decoded measurement object, formatted like measurePcm's. */
function measurementString(m) {
  const f = (k) => (m[k] === null ? 'null' : typeof m[k] === 'number' ? String(m[k]) : `${typeof m[k]}(${JSON.stringify(m[k])})`);
  return `duration_ns=${f('duration_ns')} peak=${f('peak_dbfs_hundredths')} rms=${f('rms_dbfs_hundredths')} samples=${f('samples')}`;
}

const nullOrWrong = (v, what) => new Refusal(v === null ? 'null' : 'wrong_type', `${what} is ${v === null ? 'null' : 'of the wrong type'}`);
const isJsonInt = (v) => typeof v === 'number' && Number.isSafeInteger(v);

function voiceUint(v, what) {
  if (!isJsonInt(v)) throw nullOrWrong(v, what);
  if (v < 0) throw new Refusal('negative_unsigned', `${what} is negative`);
  return BigInt(v);
}

function voiceLevel(v, what) {
  if (v === null) return null;
  if (isJsonInt(v)) return BigInt(v);
  throw new Refusal('wrong_type', `${what} is neither an integer nor null`);
}

function voiceFields(obj, known, required, what) {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) throw new Refusal('unknown_field', `${what} has an unknown key ${JSON.stringify(k)}`);
  }
  for (const k of required) {
    if (!Object.hasOwn(obj, k)) throw new Refusal('missing_field', `${what} has no ${k}`);
  }
}

/** Spec section 5, in order: the measurement and what was heard (said, failed, unasked). */
function checkVoiceTurn(root) {
  if (!isObject(root)) throw nullOrWrong(root, 'the root');
  voiceFields(root, VOICE_TOP_FIELDS, ['jc_voice_turn', 'measurement'], 'the turn');
  if (typeof root.jc_voice_turn !== 'string') throw nullOrWrong(root.jc_voice_turn, 'jc_voice_turn');
  if (root.jc_voice_turn !== VOICE_TURN_ID) throw new Refusal('wrong_schema', `jc_voice_turn is ${JSON.stringify(root.jc_voice_turn)}`);
  const m = root.measurement;
  if (!isObject(m)) throw nullOrWrong(m, 'measurement');
  voiceFields(m, VOICE_MEASUREMENT_FIELDS, VOICE_MEASUREMENT_FIELDS, 'the measurement');
  const duration = voiceUint(m.duration_ns, 'duration_ns');
  const peak = voiceLevel(m.peak_dbfs_hundredths, 'peak_dbfs_hundredths');
  const rms = voiceLevel(m.rms_dbfs_hundredths, 'rms_dbfs_hundredths');
  const samples = voiceUint(m.samples, 'samples');
  const hasText = Object.hasOwn(root, 'text');
  const hasError = Object.hasOwn(root, 'error');
  if (hasText && typeof root.text !== 'string') throw nullOrWrong(root.text, 'text');
  if (hasError && typeof root.error !== 'string') throw nullOrWrong(root.error, 'error');
  if (hasText && hasError) throw new Refusal('text_and_error', 'both text and error');
  if (hasError && !VOICE_ERROR_CODE.test(root.error)) throw new Refusal('bad_error_code', `error ${JSON.stringify(root.error)} is not a code`);
  if (samples * NS_PER_SAMPLE !== duration) throw new Refusal('duration_mismatch', `duration_ns ${duration} is not samples * 62500`);
  if ((peak === null) !== (rms === null) || (peak !== null && samples === 0n)) throw new Refusal('silence_mismatch', 'levels and silence disagree');
  if (peak !== null) {
    const floor = levelHundredths(1n, samples * FULL_SCALE_POWER);
    if (peak < BigInt(PEAK_FLOOR) || peak > 0n || rms > 0n || rms < floor) {
      throw new Refusal('level_out_of_range', `peak ${peak} or rms ${rms} outside [${PEAK_FLOOR}, 0] / [${floor}, 0]`);
    }
    if (rms > peak) throw new Refusal('rms_above_peak', `rms ${rms} above peak ${peak}`);
  }
  return { measurement: m, heard: hasText ? 'said' : hasError ? 'failed' : 'unasked' };
}

/** Accepts exactly the canonical encoding of a valid voice-turn/1 value. */
function decodeVoiceTurn(data) {
  if (!data.length) throw new Refusal('json', 'empty input');
  return checkVoiceTurn(parseJcr1(data, VOICE_TURN_LIMITS));
}

function checkVoiceTurnFile(path, name) {
  let doc;
  check(`${name} load`, () => {
    doc = loadJsonFile(path);
    expectEqual('schema', doc.schema, VOICE_TURN_ID);
    if (!doc.levels?.length || !doc.turns?.length || !doc.negative?.length) {
      throw new Refusal('mismatch', 'levels, turns and negative must each hold vectors');
    }
  });
  check(`${name} level rule: full scale is 0, one quantum of peak is the floor, silence has none`, () => {
    expectEqual('full scale', levelHundredths(FULL_SCALE_POWER, FULL_SCALE_POWER), 0n);
    expectEqual('floor', levelHundredths(1n, FULL_SCALE_POWER), BigInt(PEAK_FLOOR));
    expectEqual('silence', levelHundredths(0n, FULL_SCALE_POWER), null);
  });
  for (const v of doc?.levels ?? []) {
    check(`${name} levels ${label(v)}`, () => {
      const got = measurePcm(v.pcm);
      expectEqual('sum_squares', got.sum.toString(), v.sum_squares);
      expectEqual('peak_abs', got.peak, BigInt(v.peak_abs));
      if (!isObject(v.expect) || !sameKeys(v.expect, VOICE_MEASUREMENT_FIELDS)) throw new Refusal('mismatch', 'expect is not a measurement object');
      expectEqual('measurement', got.measurement, measurementString(v.expect));
      return got.measurement;
    });
  }
  for (const v of doc?.turns ?? []) {
    check(`${name} turns ${label(v)}`, () => {
      const data = utf8.encode(v.canonical);
      expectEqual('content_hash', toHex(blake3(data)), v.content_hash);
      const { measurement, heard } = decodeVoiceTurn(data);
      expectEqual('heard', heard, v.heard);
      expectEqual('measurement', measurementString(measurement), measurePcm(v.pcm).measurement);
      return heard;
    });
  }
  for (const c of doc?.negative ?? []) {
    check(`${name} negative ${label(c)} (${c.expect_refusal})`, () => {
      try {
        decodeVoiceTurn(hexToBytes(c.input_hex));
      } catch (e) {
        if (!(e instanceof Refusal)) throw e;
        if (VOICE_SCHEMA_CODES.has(c.expect_refusal) && e.cls !== c.expect_refusal) {
          throw new Refusal('mismatch', `refused with ${e.message}; the spec's rule order gives ${c.expect_refusal}`);
        }
        return `refused [${e.cls}]`;
      }
      throw new Refusal('accepted', `input was ACCEPTED; expected refusal ${c.expect_refusal}`);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// structured-output (spec/STRUCTURED-OUTPUT.md): grammar digests, the projection compiled by Ajv
// (JSON Schema 2020-12), whole-document outcomes with the rules JSON Schema cannot state
// ---------------------------------------------------------------------------------------------

const NOT_JSON = 'not I-JSON';
const OVER_LIMIT = 'over a grammar limit';

/** One I-JSON text: objects as {keys, vals, dup} (members in order), numbers as {num: token}.
 * Throws NOT_JSON (strict UTF-8 is the caller's; lone surrogates, controls, BOM here). */
function soParseText(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i += 1;
  };
  const fail = () => {
    throw NOT_JSON;
  };
  const str = () => {
    i += 1; // opening quote
    let out = '';
    for (;;) {
      if (i >= text.length) fail();
      const c = text[i];
      if (c === '"') {
        i += 1;
        return out;
      }
      if (c < ' ') fail();
      if (c !== '\\') {
        out += c;
        i += 1;
        continue;
      }
      const e = text[i + 1];
      i += 2;
      const simple = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
      if (e in simple) {
        out += simple[e];
        continue;
      }
      if (e !== 'u') fail();
      const hex4 = () => {
        const h = text.slice(i, i + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(h)) fail();
        i += 4;
        return parseInt(h, 16);
      };
      const u = hex4();
      if (u >= 0xdc00 && u <= 0xdfff) fail(); // a low surrogate alone
      if (u >= 0xd800 && u <= 0xdbff) {
        if (text[i] !== '\\' || text[i + 1] !== 'u') fail();
        i += 2;
        const lo = hex4();
        if (lo < 0xdc00 || lo > 0xdfff) fail();
        out += String.fromCharCode(u, lo);
      } else {
        out += String.fromCharCode(u);
      }
    }
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === '{') {
      i += 1;
      const o = { keys: [], vals: [], dup: false };
      ws();
      if (text[i] === '}') {
        i += 1;
        return o;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        const k = str();
        if (o.keys.includes(k)) o.dup = true;
        ws();
        if (text[i] !== ':') fail();
        i += 1;
        o.keys.push(k);
        o.vals.push(value());
        ws();
        if (text[i] === ',') i += 1;
        else if (text[i] === '}') {
          i += 1;
          return o;
        } else fail();
      }
    }
    if (c === '[') {
      i += 1;
      const a = [];
      ws();
      if (text[i] === ']') {
        i += 1;
        return a;
      }
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ',') i += 1;
        else if (text[i] === ']') {
          i += 1;
          return a;
        } else fail();
      }
    }
    if (c === '"') return str();
    const m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/.exec(text.slice(i, i + 4096));
    if (m && m[0]) {
      i += m[0].length;
      return { num: m[0] };
    }
    for (const [w, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(w, i)) {
        i += w.length;
        return v;
      }
    }
    return fail();
  };
  const v = value();
  ws();
  if (i !== text.length) fail();
  return v;
}

const isSoObj = (v) => v !== null && typeof v === 'object' && Array.isArray(v.keys);
const isSoNum = (v) => v !== null && typeof v === 'object' && typeof v.num === 'string';

/** Number tokens as written, per plain object and key (for exact bounds). */
const rawNumbers = new WeakMap();

/** What Ajv validates: plain objects (the last of repeated keys), numbers as doubles. */
function soPlain(v) {
  if (isSoNum(v)) return Number(v.num);
  if (Array.isArray(v)) return v.map(soPlain);
  if (isSoObj(v)) {
    const o = {};
    const raw = {};
    v.keys.forEach((k, j) => {
      Object.defineProperty(o, k, { value: soPlain(v.vals[j]), enumerable: true, writable: true, configurable: true });
      if (isSoNum(v.vals[j])) raw[k] = v.vals[j].num;
    });
    rawNumbers.set(o, raw);
    return o;
  }
  return v;
}

function soHasDup(v) {
  if (Array.isArray(v)) return v.some(soHasDup);
  if (isSoObj(v)) return v.dup || v.vals.some(soHasDup);
  return false;
}

/** A JSON number token as [sign, digits (BigInt), exponent of ten]. */
function decimalParts(tok) {
  const m = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([-+]?[0-9]+))?$/.exec(tok);
  const frac = m[3] ?? '';
  return [m[1] ? -1n : 1n, BigInt(m[2] + frac), BigInt(m[4] ?? '0') - BigInt(frac.length)];
}

/** Exact comparison of two JSON number tokens: -1, 0 or 1. */
function decimalCmp(a, b) {
  const [sa, da, ea] = decimalParts(a);
  const [sb, db, eb] = decimalParts(b);
  const va = da === 0n ? 0n : sa;
  const vb = db === 0n ? 0n : sb;
  if (va !== vb || va === 0n) return va < vb ? -1 : va > vb ? 1 : 0;
  // Same sign, both non-zero: compare magnitudes (orders first, then scaled digits).
  const oa = BigInt(da.toString().length) + ea;
  const ob = BigInt(db.toString().length) + eb;
  let mag;
  if (oa !== ob) mag = oa < ob ? -1 : 1;
  else {
    const e = ea < eb ? ea : eb;
    const xa = da * 10n ** (ea - e);
    const xb = db * 10n ** (eb - e);
    mag = xa < xb ? -1 : xa > xb ? 1 : 0;
  }
  return va < 0n ? -mag : mag;
}

/** The oneOf tag: the first property, by code point, of the first branch that every branch
 * requires with a distinct string const (or one-member enum). */
function soTagOf(branches) {
  // By code point (UTF-8 byte order, as the compiler sorts), not by UTF-16 code unit.
  const names = Object.keys(branches[0]?.properties ?? {}).sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  for (const name of names) {
    const seen = new Set();
    const ok = branches.every((b) => {
      const p = b.properties?.[name] ?? {};
      const c = typeof p.const === 'string' ? p.const : p.enum?.length === 1 && typeof p.enum[0] === 'string' ? p.enum[0] : null;
      if (c === null || !(b.required ?? []).includes(name) || seen.has(c)) return false;
      seen.add(c);
      return true;
    });
    if (ok) return name;
  }
  throw new Refusal('mismatch', 'oneOf without a tag');
}

/** A projection's `$ref` (only `#/$defs/...` are written) resolved. */
function soResolve(root, s) {
  let x = s;
  while (x !== null && typeof x === 'object' && typeof x.$ref === 'string') x = root.$defs?.[x.$ref.split('/').pop()];
  return x;
}

/** The branches of a union flattened through nested unions (an anyOf/oneOf branch, also behind
 * a $ref), as the compiler reads them: anyOf [anyOf [A, B], C] is A, B and C. */
function soLeaves(root, branches, depth = 0) {
  return branches.flatMap((b) => {
    const x = soResolve(root, b);
    const inner = x !== null && typeof x === 'object' ? x.anyOf ?? x.oneOf : undefined;
    return Array.isArray(inner) && depth < 64 ? soLeaves(root, inner, depth + 1) : [x];
  });
}

/** A projection's free-form schema ({} or true, annotations aside): any value. */
function soFree(b) {
  return b === true || (b !== null && typeof b === 'object' && b.type === undefined && !Array.isArray(b.anyOf) && !Array.isArray(b.oneOf));
}

/** The JSON type of a parsed value (integers are numbers: the first-byte rule). */
function soType(v) {
  if (isSoNum(v)) return 'number';
  if (Array.isArray(v)) return 'array';
  if (isSoObj(v)) return 'object';
  return v === null ? 'null' : typeof v;
}

/** The kind of value a projection branch takes (integers are numbers; oneOf is an object). */
function soKind(b) {
  const t = b.type ?? (b.oneOf ? 'object' : undefined);
  return t === 'integer' ? 'number' : t;
}

/** The branches of an anyOf a value is read by side by side: several of its JSON type that are
 * not a tagged union (objects without a common tag, arrays); null otherwise. */
function soSideBySide(bs, inst) {
  const same = bs.filter((b) => soKind(b) === soType(inst));
  if (same.length < 2) return null;
  if (soType(inst) === 'object' && same.every((b) => b.type === 'object')) {
    try {
      soTagOf(same);
      return null;
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
    }
  }
  return same;
}

/** The projection as Ajv gets it: exclusive bounds are left to soExtra's exact comparison (as
 * doubles, a value just above a bound can round onto it, which Ajv would refuse). */
function soForAjv(schema) {
  return JSON.parse(JSON.stringify(schema, (k, v) => (k === 'exclusiveMinimum' || k === 'exclusiveMaximum' ? undefined : v)));
}

const soBranchAjv = new Ajv2020({ strict: false });
const soBranchValidators = new WeakMap();

/** Does Ajv accept `inst` for one branch, under the projection's definitions? */
function soBranchValid(root, branch, inst) {
  let validate = soBranchValidators.get(branch);
  if (!validate) {
    validate = soBranchAjv.compile(soForAjv(root.$defs ? { ...branch, $defs: root.$defs } : branch));
    soBranchValidators.set(branch, validate);
  }
  return validate(soPlain(inst));
}

/** True when a rule JSON Schema does not check fails: a repeated key, a oneOf object whose first
 * member is not the tag, an integer written with a fraction or exponent, a number outside its
 * bounds by exact decimal comparison (Ajv compares doubles). Unions of the JSON Schema profile
 * (anyOf) follow the branch the value's JSON type selects; several object branches are a tagged
 * union, as oneOf, or, without a common tag (and several arrays), read side by side. */
function soExtra(schemaIn, inst, root = schemaIn) {
  if (isSoObj(inst) && inst.dup) return true;
  const schema = soResolve(root, schemaIn);
  // Any value, but no key repeats at any depth inside it.
  if (soFree(schema)) return (isSoObj(inst) ? inst.vals : Array.isArray(inst) ? inst : []).some((x) => soExtra({}, x, root));
  if (schema === null || typeof schema !== 'object') return false;
  if (Array.isArray(schema.anyOf)) {
    const bs = soLeaves(root, schema.anyOf);
    // A free-form branch makes the union free-form.
    if (bs.some(soFree)) return soExtra({}, inst, root);
    // Read side by side: valid when one branch takes it, Ajv's rules and these.
    const both = soSideBySide(bs, inst);
    if (both) return !both.some((b) => !soExtra(b, inst, root) && soBranchValid(root, b, inst));
    const objs = bs.filter((b) => b.type === 'object');
    if (isSoObj(inst) && objs.length > 1) return soExtra({ oneOf: objs }, inst, root);
    const b = bs.find((x) => {
      const t = x.type ?? (x.oneOf ? 'object' : undefined);
      return t === undefined || (t === 'integer' ? 'number' : t) === soType(inst);
    });
    return b ? soExtra(b, inst, root) : false;
  }
  if (Array.isArray(schema.oneOf)) {
    if (!isSoObj(inst) || !inst.keys.length) return false;
    const branches = schema.oneOf.map((b) => soResolve(root, b));
    const tag = soTagOf(branches);
    if (inst.keys[0] !== tag) return true;
    const tv = inst.vals[inst.keys.lastIndexOf(tag)];
    const branch = branches.find((b) => b.properties?.[tag]?.const === tv);
    return branch ? soExtra(branch, inst, root) : false;
  }
  if (schema.type === 'object' && isSoObj(inst)) {
    return inst.keys.some((k, j) => (Object.hasOwn(schema.properties ?? {}, k)
      ? soExtra(schema.properties[k], inst.vals[j], root)
      : soExtra(schema.additionalProperties ?? {}, inst.vals[j], root)));
  }
  if (schema.type === 'array' && Array.isArray(inst)) return inst.some((x) => soExtra(schema.items, x, root));
  if (schema.type === 'integer' && isSoNum(inst)) {
    if (/[.eE]/.test(inst.num)) return true;
    // Bounds beyond 2^53 compared exactly.
    const raw = rawNumbers.get(schema) ?? {};
    if (raw.minimum !== undefined && BigInt(inst.num) < BigInt(raw.minimum)) return true;
    if (raw.maximum !== undefined && BigInt(inst.num) > BigInt(raw.maximum)) return true;
  }
  if (schema.type === 'number' && isSoNum(inst)) {
    const raw = rawNumbers.get(schema) ?? {};
    if (raw.minimum !== undefined && decimalCmp(inst.num, raw.minimum) < 0) return true;
    if (raw.maximum !== undefined && decimalCmp(inst.num, raw.maximum) > 0) return true;
    if (raw.exclusiveMinimum !== undefined && decimalCmp(inst.num, raw.exclusiveMinimum) <= 0) return true;
    if (raw.exclusiveMaximum !== undefined && decimalCmp(inst.num, raw.exclusiveMaximum) >= 0) return true;
  }
  return false;
}

/** Nesting depth of a parsed value (containers). */
function soDepth(v) {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(soDepth));
  if (isSoObj(v)) return 1 + Math.max(0, ...v.vals.map(soDepth));
  return 0;
}

/** 'accepted', 'schema' (JSON, refused by the schema) or 'not-json' (not I-JSON, over a limit). */
function soOutcome(g, doc) {
  if (doc.length > g.limits.max_document_bytes) return 'not-json';
  let inst;
  try {
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(doc);
    inst = soParseText(text);
  } catch (e) {
    if (e === NOT_JSON || e instanceof TypeError) return 'not-json';
    throw e;
  }
  const tooLong = (v) => (isSoNum(v) ? v.num.length > g.limits.max_number_chars
    : Array.isArray(v) ? v.some(tooLong) : isSoObj(v) ? v.vals.some(tooLong) : false);
  if (tooLong(inst)) return 'not-json';
  // The JSON Schema profile bounds nesting by max_depth (the subset's schemas bound it).
  if (g.profile === 'json_schema' && soDepth(inst) > g.limits.max_depth) return 'not-json';
  if (soExtra(g.schema, inst) || !g.validate(soPlain(inst))) return 'schema';
  return 'accepted';
}

/** The structured-output vectors, and beside them those of the JSON Schema profile. */
function checkStructuredFile(path, name) {
  checkStructuredOne(path, name);
  const profile = path.replace(/structured-output-vectors\.json$/, 'structured-output-2020-vectors.json');
  if (profile !== path && existsSync(profile)) checkStructuredOne(profile, 'structured-output-2020-vectors.json');
}

function checkStructuredOne(path, name) {
  let doc;
  check(`${name} load`, () => {
    // Number bounds with fractions: not a JCR-1 vector file. Parsed as I-JSON, no repeated key.
    const text = readFileSync(path, 'utf8');
    if (soHasDup(soParseText(text))) throw new Refusal('json', 'vector file has a repeated key');
    doc = JSON.parse(text);
    expectEqual('format', doc.format, 'jouleclaw-structured-vectors/1');
    if (!doc.grammars?.length || !doc.cases?.length) throw new Refusal('mismatch', 'no grammars or no cases');
  });
  const grammars = new Map();
  for (const g of doc?.grammars ?? []) {
    check(`${name} grammar ${g.name}`, () => {
      const digest = toHex(blake3(utf8.encode(g.canonical_form)));
      expectEqual('digest', digest, g.digest);
      expectEqual('oracle_name', g.oracle_name, `structured:${digest.slice(0, 16)}`);
      const form = soPlain(soParseText(g.canonical_form));
      expectEqual('grammar tag', form.grammar, 'jouleclaw-structured/1');
      expectEqual('canonical form members', Object.keys(form).join(','), 'grammar,limits,schema');
      expectEqual('limits', canonicalize(form.limits), canonicalize(g.limits));
      const ajv = new Ajv2020({ strict: false });
      let validate;
      try {
        validate = ajv.compile(soForAjv(form.schema));
      } catch (e) {
        throw new Refusal('mismatch', `projection is not a 2020-12 schema: ${e.message}`);
      }
      grammars.set(g.name, { schema: form.schema, limits: form.limits, validate, profile: g.profile ?? 'subset' });
      return 'digest, oracle name, limits; projection compiles as 2020-12';
    });
  }
  for (const c of doc?.cases ?? []) {
    check(`${name} case ${c.grammar}: ${c.name}`, () => {
      const g = grammars.get(c.grammar);
      if (!g) throw new Refusal('mismatch', `no usable grammar ${c.grammar}`);
      const got = soOutcome(g, Buffer.concat(c.chunks_hex.map(hexToBytes)));
      const agree = (got === 'accepted' && c.outcome === 'accepted')
        || (got === 'schema' && c.outcome === 'refused' && c.class === 'schema')
        || (got === 'not-json' && c.outcome === 'refused' && (c.class === 'syntax' || c.class === 'limit'));
      if (!agree) throw new Refusal('mismatch', `JS finds ${got}; the vector says ${c.outcome} (class ${c.class})`);
      return got;
    });
  }
}

// ---------------------------------------------------------------------------------------------
// stop-latency/1 (spec/STOP-LATENCY-V1.md): canonical documents and their schema rules in
// order, the COSE_Sign1 rebuilt byte for byte, the binding to the window receipts, the summary
// ---------------------------------------------------------------------------------------------

const SL_ID = 'stop-latency/1';
const SL_ID_V2 = 'stop-latency/2';
const SL_CONTENT_TYPE = 'application/vnd.jouleclaw.stop-latency+json';
const SL_DEADLINE_NS = 150_000_000;
const SL_LIMITS = { documentBytes: 8 << 20, depth: 3, stringBytes: 4_096, arrayLen: 16_384 };
const SL_TOP = ['barge_ins', 'deadline_ns', 'jc_stop_latency', 'receipts_root', 'steward', 'stream_id', 'window_count'];
const SL_TOP_V2 = [...SL_TOP, 'vantage'];
const SL_VANTAGE = ['excluded_buffer_ns', 'point'];
const SL_BARGE = ['audio_bytes', 'barge_in_ts_ns', 'end_ts_ns', 'ended_by', 'last_audio_ts_ns', 'late_audio_bytes', 'stop_latency_ns', 'window_id'];
const SL_SCHEMA_CODES = new Set([
  'wrong_type', 'null', 'unknown_field', 'missing_field', 'wrong_schema', 'negative_unsigned', 'empty_name',
  'bad_root', 'wrong_deadline', 'bad_ended_by', 'end_mismatch', 'latency_mismatch', 'late_mismatch', 'out_of_order',
  'bad_vantage',
]);

const slNullOrWrong = (v, what) => new Refusal(v === null ? 'null' : 'wrong_type', `${what} is ${JSON.stringify(v)}`);
function slUint(v, what) {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw slNullOrWrong(v, what);
  if (v < 0) throw new Refusal('negative_unsigned', `${what} is negative`);
  return v;
}
function slUintOrNull(v, what) {
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Refusal('wrong_type', `${what} is ${JSON.stringify(v)}`);
  if (v < 0) throw new Refusal('negative_unsigned', `${what} is negative`);
  return v;
}
function slString(v, what) {
  if (typeof v !== 'string') throw slNullOrWrong(v, what);
  return v;
}
function slFields(obj, known, what) {
  for (const k of Object.keys(obj)) if (!known.includes(k)) throw new Refusal('unknown_field', `${what} has ${k}`);
  for (const k of known) if (!(k in obj)) throw new Refusal('missing_field', `${what} lacks ${k}`);
}
function slBargeIn(b) {
  if (!isObject(b)) throw slNullOrWrong(b, 'a barge-in');
  slFields(b, SL_BARGE, 'a barge-in');
  const audio = slUint(b.audio_bytes, 'audio_bytes');
  const t = slUint(b.barge_in_ts_ns, 'barge_in_ts_ns');
  const end = slUintOrNull(b.end_ts_ns, 'end_ts_ns');
  const endedBy = slString(b.ended_by, 'ended_by');
  const last = slUintOrNull(b.last_audio_ts_ns, 'last_audio_ts_ns');
  const late = slUint(b.late_audio_bytes, 'late_audio_bytes');
  const latency = slUint(b.stop_latency_ns, 'stop_latency_ns');
  slUint(b.window_id, 'window_id');
  if (endedBy !== 'start' && endedBy !== 'stream_end') throw new Refusal('bad_ended_by', endedBy);
  if (!((endedBy === 'start' && end !== null && end >= t) || (endedBy === 'stream_end' && end === null))) {
    throw new Refusal('end_mismatch', 'ended_by and end_ts_ns disagree');
  }
  const ok = last === null
    ? latency === 0 && audio === 0
    : t <= last && (end === null || last <= end) && audio > 0 && latency === last - t;
  if (!ok) throw new Refusal('latency_mismatch', 'stop_latency_ns is not last_audio_ts_ns - barge_in_ts_ns');
  if (late > audio || (late > 0) !== (latency > SL_DEADLINE_NS)) throw new Refusal('late_mismatch', 'late_audio_bytes');
  return b;
}
function slCheckSchema(root) {
  if (!isObject(root)) throw slNullOrWrong(root, 'the document');
  // stop-latency/2 (spec section 10) adds `vantage`; the id selects the field set.
  const v2 = root.jc_stop_latency === SL_ID_V2;
  slFields(root, v2 ? SL_TOP_V2 : SL_TOP, 'the document');
  const id = slString(root.jc_stop_latency, 'jc_stop_latency');
  if (id !== SL_ID && id !== SL_ID_V2) throw new Refusal('wrong_schema', root.jc_stop_latency);
  const steward = slString(root.steward, 'steward');
  const streamId = slString(root.stream_id, 'stream_id');
  slUint(root.window_count, 'window_count');
  const deadline = slUint(root.deadline_ns, 'deadline_ns');
  const rr = slString(root.receipts_root, 'receipts_root');
  if (!Array.isArray(root.barge_ins)) throw slNullOrWrong(root.barge_ins, 'barge_ins');
  if (!steward || !streamId) throw new Refusal('empty_name', 'steward or stream_id empty');
  if (!HEX64.test(rr)) throw new Refusal('bad_root', rr);
  if (deadline !== SL_DEADLINE_NS) throw new Refusal('wrong_deadline', String(deadline));
  if (v2) {
    const v = root.vantage;
    if (!isObject(v)) throw slNullOrWrong(v, 'vantage');
    slFields(v, SL_VANTAGE, 'vantage');
    slUintOrNull(v.excluded_buffer_ns, 'excluded_buffer_ns');
    const point = slString(v.point, 'point');
    if (point !== 'sent' && point !== 'played') throw new Refusal('bad_vantage', point);
  }
  const bs = root.barge_ins.map(slBargeIn);
  for (let i = 1; i < bs.length; i += 1) {
    if (bs[i].window_id < bs[i - 1].window_id || bs[i].barge_in_ts_ns < bs[i - 1].barge_in_ts_ns) {
      throw new Refusal('out_of_order', `barge-in ${i}`);
    }
  }
  return root;
}
function slDecode(data) {
  if (!data.length) throw new Refusal('json', 'empty input');
  return slCheckSchema(parseJcr1(data, SL_LIMITS));
}

function slHead(major, n) {
  const m = major << 5;
  if (n < 24) return new Uint8Array([m | n]);
  if (n < 0x100) return new Uint8Array([m | 24, n]);
  if (n < 0x10000) return new Uint8Array([m | 25, n >> 8, n & 0xff]);
  return new Uint8Array([m | 26, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);
}
const slBstr = (b) => concat(slHead(2, b.length), b);
const slTstr = (s) => { const b = utf8.encode(s); return concat(slHead(3, b.length), b); };
/** The canonical protected header of a signed document of content type `ct` (stop-latency/1, interaction-metrics/1). */
const signedDocProtected = (ct, steward, subject, kid) => concat(
  new Uint8Array([0xa4, 0x01, 0x27, 0x03]), slTstr(ct), new Uint8Array([0x04]), slBstr(kid),
  new Uint8Array([0x0f, 0xa2, 0x01]), slTstr(steward), new Uint8Array([0x02]), slTstr(subject),
);
const slSigStructure = (prot, payload) => concat(new Uint8Array([0x84]), slTstr('Signature1'), slBstr(prot), new Uint8Array([0x40]), slBstr(payload));
const slEnvelope = (prot, payload, sig) => concat(new Uint8Array([0xd2, 0x84]), slBstr(prot), new Uint8Array([0xa0]), slBstr(payload), slBstr(sig));

/**
 * The document of a signed stop-latency/1 or interaction-metrics/1 (the same COSE_Sign1 checks, in
 * the spec's order), or a Refusal: `limit` is the document byte limit, `ct` the content type,
 * `decode` the payload decoder, `kind` the subject's suffix after `<stream_id>:`.
 */
function verifySignedDoc(data, pub, limit, ct, decode, kind) {
  if (data.length > limit + 16_384) throw new Refusal('cose_too_large', 'too large');
  if (data[0] !== 0xd2) throw new Refusal(data[0] === 0x84 ? 'cose_untagged' : (data[0] >> 5) === 6 ? 'cose_wrong_tag' : 'cose_malformed', 'not tag 18');
  let item;
  try {
    item = cborDecode(data, { ...CBOR_STRICT, tags: new Map([[18, (t) => t]]) });
  } catch (e) {
    throw new Refusal('cose_malformed', e.message);
  }
  const inner = item instanceof Tag ? item.contents : null;
  if (!Array.isArray(inner) || inner.length !== 4) throw new Refusal('cose_malformed', 'not a COSE_Sign1');
  const [prot, unprot, payload, sig] = inner;
  if (!isBytes(prot) || !(unprot instanceof Map) || !isBytes(sig)) throw new Refusal('cose_malformed', 'wrong item types');
  if (payload === null) throw new Refusal('cose_payload_detached', 'detached');
  if (!isBytes(payload)) throw new Refusal('cose_malformed', 'payload');
  if (unprot.size) throw new Refusal('cose_unprotected_not_empty', 'unprotected header');
  let header;
  try {
    header = cborDecode(prot, CBOR_STRICT);
  } catch (e) {
    throw new Refusal('cose_malformed', e.message);
  }
  if (!(header instanceof Map)) throw new Refusal('cose_malformed', 'protected header');
  if (header.get(1) !== -8) throw new Refusal('cose_alg_not_eddsa', 'alg');
  if (header.get(3) !== ct) throw new Refusal('cose_content_type_mismatch', String(header.get(3)));
  const kid = header.get(4);
  if (!isBytes(kid) || kid.length !== 32) throw new Refusal('cose_bad_kid', 'kid');
  const claims = header.get(15);
  if (!(claims instanceof Map) || claims.size !== 2 || typeof claims.get(1) !== 'string' || typeof claims.get(2) !== 'string') {
    throw new Refusal('cose_bad_cwt_claims', 'CWT claims');
  }
  const iss = claims.get(1);
  const sub = claims.get(2);
  if (!equalBytes(signedDocProtected(ct, iss, sub, kid), prot)) throw new Refusal('cose_protected_not_canonical', 'protected bytes');
  if (sig.length !== 64 || !equalBytes(slEnvelope(prot, payload, sig), data)) throw new Refusal('cose_envelope_not_canonical', 'envelope bytes');
  if (!equalBytes(kid, thumbprint(pub))) throw new Refusal('cose_unknown_kid', 'kid');
  try {
    ed25519VerifyStrict(sig, slSigStructure(prot, payload), pub);
  } catch {
    throw new Refusal('cose_bad_signature', 'signature');
  }
  const doc = decode(payload);
  if (iss !== doc.steward) throw new Refusal('cose_iss_mismatch', iss);
  if (sub !== `${doc.stream_id}:${kind}`) throw new Refusal('cose_sub_mismatch', sub);
  return doc;
}

/** The document of a signed stop-latency/1 (spec section 6, in order), or a Refusal. */
function slVerifySigned(data, pub) {
  return verifySignedDoc(data, pub, SL_LIMITS.documentBytes, SL_CONTENT_TYPE, slDecode, 'stop-latency');
}

function slBindingProblems(doc, lines) {
  const receipts = lines.map((l) => JSON.parse(l));
  const out = [];
  if (receipts.some((r) => r.steward !== doc.steward || r.stream_id !== doc.stream_id)) out.push('stream_mismatch');
  if (doc.window_count !== receipts.length) out.push('window_count_mismatch');
  if (toHex(mth(lines.map((l) => leafHash(blake3(utf8.encode(l)))))) !== doc.receipts_root) out.push('root_mismatch');
  const byWindow = new Map(receipts.map((r) => [r.window_id, r]));
  const listed = [...new Set(doc.barge_ins.map((b) => b.window_id))].sort((a, b) => a - b);
  for (const w of listed) {
    const r = byWindow.get(w);
    if (!r) { out.push('barge_in_window_missing'); continue; }
    const v = r.verdict;
    if (!((v.kind === 'yield' && v.seen_at === w) || v.kind === 'fail')) out.push('barge_in_not_yielded');
  }
  for (const r of receipts) if (r.verdict.kind === 'yield' && !listed.includes(r.window_id)) out.push('yield_unlisted');
  // Values, not only membership: what a receipt's barge_in_ignored finding states (the barge-in
  // at B, outbound past its deadline at T) must be what the first listed barge-in at B says.
  for (const r of receipts) {
    const c = r.conservation;
    if (c.kind !== 'barge_in_ignored') continue;
    const b = doc.barge_ins.find((x) => x.barge_in_ts_ns === c.barge_in_ts_ns);
    if (!b) { out.push('finding_unlisted'); continue; }
    const openThen = b.end_ts_ns === null || b.end_ts_ns >= c.outbound_ts_ns;
    const lateThen = b.late_audio_bytes > 0 && b.last_audio_ts_ns !== null && b.last_audio_ts_ns >= c.outbound_ts_ns;
    if (b.window_id > r.window_id || !openThen || !lateThen) out.push('finding_contradicted');
  }
  return out;
}

/**
 * Section 7: a stream without a document is refused (stop_latency_missing) when a receipt records
 * a barge-in: a yield verdict, or a barge_in_ignored finding whatever the verdict.
 */
const slRequired = (lines) => lines.map((l) => JSON.parse(l))
  .some((r) => r.verdict.kind === 'yield' || r.conservation.kind === 'barge_in_ignored');

/** The receipts with every yield verdict turned into a fail (a failure outranks the yield). */
const slYieldsFailed = (lines) => lines.map((l) => {
  const r = JSON.parse(l);
  if (r.verdict.kind === 'yield') r.verdict = { kind: 'fail', chain: ['barge-in-detector'] };
  return JSON.stringify(r);
});

function slSummary(doc) {
  const v = doc.barge_ins.map((b) => b.stop_latency_ns).sort((a, b) => a - b);
  if (!v.length) return null;
  const at = (p) => v[Math.max(1, Math.ceil((p * v.length) / 100)) - 1];
  return { p50_ns: at(50), p95_ns: at(95), max_ns: at(100) };
}

/**
 * The checks shared by the signed-document families (stop-latency/1, interaction-metrics/1): the
 * vector file's header, each document rebuilt and verified as a COSE_Sign1, the negative inputs
 * refused in the spec's rule order, and the tampered documents refused. `fam` names the family:
 * id, ct (content type), deadline, kind (subject suffix), decode, verify, binding, codes.
 */
function loadSignedDocFile(path, name, fam) {
  const out = {};
  check(`${name} load`, () => {
    out.doc = loadJsonFile(path);
    expectEqual('schema', out.doc.schema, fam.id);
    expectEqual('content_type', out.doc.content_type, fam.ct);
    expectEqual('deadline_ns', out.doc.deadline_ns, fam.deadline);
    out.pub = hexToBytes(out.doc.public_key);
    expectEqual('kid', toHex(thumbprint(out.pub)), out.doc.kid);
    if (!out.doc.documents?.length || !out.doc.negative?.length || !out.doc.tampered?.length) {
      throw new Refusal('mismatch', 'documents, negative and tampered must each hold vectors');
    }
  });
  return out;
}

/** A document vector decoded, its COSE_Sign1 rebuilt byte for byte and verified, bound to its receipts. */
function checkSignedDocVector(v, pub, fam) {
  const data = utf8.encode(v.canonical);
  expectEqual('content_hash', toHex(blake3(data)), v.content_hash);
  const d = fam.decode(data);
  const prot = signedDocProtected(fam.ct, d.steward, `${d.stream_id}:${fam.kind}`, thumbprint(pub));
  expectEqual('protected', toHex(prot), v.protected_hex);
  expectEqual('to_be_signed', toHex(slSigStructure(prot, data)), v.to_be_signed_hex);
  const signed = hexToBytes(v.cose_sign1_hex);
  expectEqual('envelope', toHex(slEnvelope(prot, data, signed.subarray(signed.length - 64))), v.cose_sign1_hex);
  expectEqual('verified document', canonicalize(fam.verify(signed, pub)), v.canonical);
  expectEqual('receipts_root', d.receipts_root, v.receipts_root);
  expectEqual('binding problems', fam.binding(d, v.receipts).join(','), '');
  return d;
}

function checkSignedDocRefusals(file, name, fam) {
  for (const c of file.doc?.negative ?? []) {
    check(`${name} negative ${label(c)} (${c.expect_refusal})`, () => {
      try {
        fam.decode(hexToBytes(c.input_hex));
      } catch (e) {
        if (!(e instanceof Refusal)) throw e;
        if (fam.codes.has(c.expect_refusal) && e.cls !== c.expect_refusal) {
          throw new Refusal('mismatch', `refused with ${e.message}; the spec's rule order gives ${c.expect_refusal}`);
        }
        return `refused [${e.cls}]`;
      }
      throw new Refusal('accepted', `input was ACCEPTED; expected refusal ${c.expect_refusal}`);
    });
  }
  for (const c of file.doc?.tampered ?? []) {
    check(`${name} tampered ${label(c)} (${c.expect_refusal})`, () => {
      let d;
      try {
        d = fam.verify(hexToBytes(c.cose_sign1_hex), file.pub);
      } catch (e) {
        if (!(e instanceof Refusal)) throw e;
        return `refused [${e.cls}]`;
      }
      const problems = fam.binding(d, c.receipts);
      if (!problems.length) throw new Refusal('accepted', 'a tampered document was ACCEPTED');
      expectEqual('first binding problem', problems[0], c.expect_refusal);
      return `refused [${problems[0]}]`;
    });
  }
}

const SL_FAMILY = {
  id: SL_ID, ct: SL_CONTENT_TYPE, deadline: SL_DEADLINE_NS, kind: 'stop-latency',
  decode: slDecode, verify: slVerifySigned, binding: slBindingProblems, codes: SL_SCHEMA_CODES,
};
function checkStopLatencyFile(path, name) {
  const file = loadSignedDocFile(path, name, SL_FAMILY);
  const pub = file.pub;
  for (const v of file.doc?.documents ?? []) {
    check(`${name} documents ${label(v)}`, () => {
      const d = checkSignedDocVector(v, pub, SL_FAMILY);
      // Deleting the document: refused when the call has a barge-in (each vector's document lists
      // its call's barge-ins), also when the yield verdicts are failures but a receipt records
      // barge_in_ignored.
      expectEqual('refused without the document (stop_latency_missing)', slRequired(v.receipts), d.barge_ins.length > 0);
      const findings = v.receipts.some((l) => JSON.parse(l).conservation.kind === 'barge_in_ignored');
      expectEqual('refused without the document, yields failed', slRequired(slYieldsFailed(v.receipts)), findings);
      expectEqual('summary', JSON.stringify(slSummary(d)), JSON.stringify(v.summary && { p50_ns: v.summary.p50_ns, p95_ns: v.summary.p95_ns, max_ns: v.summary.max_ns }));
      return `${d.barge_ins.length} barge-ins`;
    });
  }
  checkSignedDocRefusals(file, name, SL_FAMILY);
}

// ---------------------------------------------------------------------------------------------
// interaction-metrics/1 (spec/INTERACTION-METRICS-V1.md): canonical documents and their schema
// rules in order, the COSE_Sign1 rebuilt byte for byte (stop-latency/1's profile with its own
// content type and subject), the binding to the window receipts, the panel float for float
// ---------------------------------------------------------------------------------------------

const IM_ID = 'interaction-metrics/1';
const IM_CONTENT_TYPE = 'application/vnd.jouleclaw.interaction-metrics+json';
const IM_DEADLINE_NS = 150_000_000;
const IM_MAX_WINDOW_NS = 60_000_000_000;
const IM_LIMITS = { documentBytes: 8 << 20, depth: 3, stringBytes: 4_096, arrayLen: 65_536 };
const IM_TOP = ['config', 'counts', 'deadline_ns', 'events', 'frame_count', 'jc_interaction_metrics', 'receipts_root', 'steward', 'stream_id', 'window_count'];
const IM_CONFIG = ['backchannel_yield_window_ns', 'no_yield_window_ns', 'non_directed_response_window_ns', 'non_directed_yield_window_ns', 'tick_ns', 'vocal_tic_response_window_ns', 'vocal_tic_yield_window_ns'];
const IM_KINDS = ['response', 'no_response', 'yield', 'no_yield', 'backchannel_correct', 'backchannel_error', 'vocal_tic_correct', 'vocal_tic_error', 'non_directed_correct', 'non_directed_error', 'agent_interrupts_user'];
const IM_COUNTS = [...IM_KINDS, 'yield_within_deadline'].sort();
const IM_EVENT = ['kind', 'latency_ns', 'segment_tick', 'tick', 'window_id'];
const IM_SCHEMA_CODES = new Set([
  'wrong_type', 'null', 'unknown_field', 'missing_field', 'wrong_schema', 'negative_unsigned', 'empty_name',
  'bad_root', 'wrong_deadline', 'bad_config', 'bad_kind', 'latency_mismatch', 'tick_mismatch', 'out_of_order', 'counts_mismatch',
]);

const imWithinDeadline = (tickNs, l) => Math.max(l - 1, 0) * tickNs <= IM_DEADLINE_NS;
function imCountEvents(tickNs, events) {
  const out = {};
  for (const k of IM_KINDS) out[k] = events.filter((e) => e.kind === k).length;
  out.yield_within_deadline = events.filter((e) => e.kind === 'yield' && imWithinDeadline(tickNs, e.latency_ns / tickNs)).length;
  return out;
}
function imEvent(e, tickNs, frameCount) {
  if (!isObject(e)) throw slNullOrWrong(e, 'an event');
  slFields(e, IM_EVENT, 'an event');
  const kind = slString(e.kind, 'kind');
  const latency = slUintOrNull(e.latency_ns, 'latency_ns');
  const seg = slUint(e.segment_tick, 'segment_tick');
  const tick = slUint(e.tick, 'tick');
  slUintOrNull(e.window_id, 'window_id');
  if (!IM_KINDS.includes(kind)) throw new Refusal('bad_kind', kind);
  const has = kind === 'response' || kind === 'yield';
  if (has !== (latency !== null) || (has && (latency % tickNs !== 0 || (kind === 'yield' && latency === 0)))) {
    throw new Refusal('latency_mismatch', `${kind} latency_ns ${latency}`);
  }
  if (seg > tick || tick >= frameCount) throw new Refusal('tick_mismatch', `tick ${tick}`);
  return e;
}
function imCheckSchema(root) {
  if (!isObject(root)) throw slNullOrWrong(root, 'the document');
  slFields(root, IM_TOP, 'the document');
  if (slString(root.jc_interaction_metrics, 'jc_interaction_metrics') !== IM_ID) throw new Refusal('wrong_schema', root.jc_interaction_metrics);
  const steward = slString(root.steward, 'steward');
  const streamId = slString(root.stream_id, 'stream_id');
  slUint(root.window_count, 'window_count');
  const frameCount = slUint(root.frame_count, 'frame_count');
  const deadline = slUint(root.deadline_ns, 'deadline_ns');
  const rr = slString(root.receipts_root, 'receipts_root');
  for (const k of ['config', 'counts']) if (!isObject(root[k])) throw slNullOrWrong(root[k], k);
  if (!Array.isArray(root.events)) throw slNullOrWrong(root.events, 'events');
  if (!steward || !streamId) throw new Refusal('empty_name', 'steward or stream_id empty');
  if (!HEX64.test(rr)) throw new Refusal('bad_root', rr);
  if (deadline !== IM_DEADLINE_NS) throw new Refusal('wrong_deadline', String(deadline));
  slFields(root.config, IM_CONFIG, 'config');
  const cfg = {};
  for (const k of IM_CONFIG) cfg[k] = slUint(root.config[k], k);
  if (cfg.tick_ns === 0 || Object.values(cfg).some((v) => v > IM_MAX_WINDOW_NS)) throw new Refusal('bad_config', 'config');
  slFields(root.counts, IM_COUNTS, 'counts');
  for (const k of IM_COUNTS) slUint(root.counts[k], k);
  const events = root.events.map((e) => imEvent(e, cfg.tick_ns, frameCount));
  for (let i = 1; i < events.length; i += 1) if (events[i].tick < events[i - 1].tick) throw new Refusal('out_of_order', `event ${i}`);
  const counts = imCountEvents(cfg.tick_ns, events);
  for (const k of IM_COUNTS) if (counts[k] !== root.counts[k]) throw new Refusal('counts_mismatch', k);
  return root;
}
function imDecode(data) {
  if (!data.length) throw new Refusal('json', 'empty input');
  return imCheckSchema(parseJcr1(data, IM_LIMITS));
}
/** The document of a signed interaction-metrics/1 (spec section 5, in order), or a Refusal. */
function imVerifySigned(data, pub) {
  return verifySignedDoc(data, pub, IM_LIMITS.documentBytes, IM_CONTENT_TYPE, imDecode, 'interaction-metrics');
}

function imBindingProblems(doc, lines) {
  const receipts = lines.map((l) => JSON.parse(l));
  const out = [];
  if (receipts.some((r) => r.steward !== doc.steward || r.stream_id !== doc.stream_id)) out.push('stream_mismatch');
  if (doc.window_count !== receipts.length) out.push('window_count_mismatch');
  if (toHex(mth(lines.map((l) => leafHash(blake3(utf8.encode(l)))))) !== doc.receipts_root) out.push('root_mismatch');
  const windows = new Set(receipts.map((r) => r.window_id));
  const named = new Set();
  for (const e of doc.events) {
    if (e.window_id !== null && !windows.has(e.window_id) && !named.has(e.window_id)) {
      named.add(e.window_id);
      out.push('event_window_missing');
    }
  }
  return out;
}

/** numpy's add.reduce over a contiguous float64 array (spec section 3). */
function imPairwiseSum(a) {
  const n = a.length;
  if (n < 8) { let res = 0.0; for (const x of a) res += x; return res; }
  if (n <= 128) {
    const r = a.slice(0, 8);
    let i = 8;
    for (; i < n - (n % 8); i += 8) for (let j = 0; j < 8; j += 1) r[j] += a[i + j];
    let res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i += 1) res += a[i];
    return res;
  }
  let n2 = Math.floor(n / 2);
  n2 -= n2 % 8;
  return imPairwiseSum(a.slice(0, n2)) + imPairwiseSum(a.slice(n2));
}

function imPanel(doc) {
  const tickNs = doc.config.tick_ns;
  const t = tickNs / 1e9;
  const c = imCountEvents(tickNs, doc.events);
  const resp = [];
  const yld = [];
  for (const e of doc.events) {
    if (e.kind === 'response') {
      const end = e.tick; const s = e.segment_tick; const a = end + e.latency_ns / tickNs;
      resp.push(a * t - (s * t + (end - s) * t));
    } else if (e.kind === 'yield') {
      yld.push((e.latency_ns / tickNs) * t);
    }
  }
  const mean = (v) => (v.length ? imPairwiseSum(v) / v.length : null);
  const rate = (n, d) => (d ? n / d : null);
  const sel = (ok, err) => { const r = rate(err, ok + err); return r === null ? null : 1.0 - r; };
  const rt = c.response + c.no_response;
  const yt = c.yield + c.no_yield;
  return {
    response_latency_mean: mean(resp),
    yield_latency_mean: mean(yld),
    response_rate: rate(c.response, rt),
    yield_rate: rate(c.yield, yt),
    agent_interruption_rate: rate(c.agent_interrupts_user, rt),
    selectivity_backchannel: sel(c.backchannel_correct, c.backchannel_error),
    selectivity_vocal_tic: sel(c.vocal_tic_correct, c.vocal_tic_error),
    selectivity_non_directed: sel(c.non_directed_correct, c.non_directed_error),
    counts: {
      n_simulations: 1,
      response_total: rt,
      yield_total: yt,
      backchannel_total: c.backchannel_correct + c.backchannel_error,
      vocal_tic_total: c.vocal_tic_correct + c.vocal_tic_error,
      non_directed_total: c.non_directed_correct + c.non_directed_error,
      agent_interrupts_count: c.agent_interrupts_user,
    },
    substrate: {
      yield_rate_deadline: rate(c.yield_within_deadline, yt),
      deadline_ns: IM_DEADLINE_NS,
      yield_within_deadline_count: c.yield_within_deadline,
      response_count: c.response,
      no_response_count: c.no_response,
      yield_count: c.yield,
      no_yield_count: c.no_yield,
      backchannel_error_count: c.backchannel_error,
      vocal_tic_error_count: c.vocal_tic_error,
      non_directed_error_count: c.non_directed_error,
    },
  };
}

/** The panel as the vectors write it: each float (a rate or a mean) as the 16 hex digits of
 * its binary64 bits; integers (counts) as they are. */
function imF64Hex(v, key = '') {
  if (typeof v === 'number' && (!Number.isInteger(v) || IM_FLOAT_FIELDS.has(key))) {
    const b = new DataView(new ArrayBuffer(8));
    b.setFloat64(0, v);
    return toHex(new Uint8Array(b.buffer));
  }
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, imF64Hex(x, k)]));
  }
  return v;
}
const IM_FLOAT_FIELDS = new Set(['response_latency_mean', 'yield_latency_mean', 'response_rate', 'yield_rate',
  'agent_interruption_rate', 'selectivity_backchannel', 'selectivity_vocal_tic', 'selectivity_non_directed', 'yield_rate_deadline']);

/** Deep equality with numbers compared exactly (Object.is); key order ignored. */
function imSame(a, b) {
  if (typeof a === 'number' || typeof b === 'number') return Object.is(a, b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && imSame(a[k], b[k]));
}

const IM_FAMILY = {
  id: IM_ID, ct: IM_CONTENT_TYPE, deadline: IM_DEADLINE_NS, kind: 'interaction-metrics',
  decode: imDecode, verify: imVerifySigned, binding: imBindingProblems, codes: IM_SCHEMA_CODES,
};
function checkInteractionFile(path, name) {
  const file = loadSignedDocFile(path, name, IM_FAMILY);
  const pub = file.pub;
  for (const v of file.doc?.documents ?? []) {
    check(`${name} documents ${label(v)}`, () => {
      const d = checkSignedDocVector(v, pub, IM_FAMILY);
      const panel = imF64Hex(imPanel(d));
      if (!imSame(panel, v.panel)) {
        throw new Refusal('mismatch', `panel ${JSON.stringify(panel)} is not ${JSON.stringify(v.panel)}`);
      }
      return `${d.events.length} events`;
    });
  }
  checkSignedDocRefusals(file, name, IM_FAMILY);
}

// ---------------------------------------------------------------------------------------------
// Runner
// ---------------------------------------------------------------------------------------------

const report = { passed: 0, failed: 0 };
function check(name, fn) {
  let note;
  try {
    note = fn();
  } catch (e) {
    report.failed += 1;
    console.log(`FAIL  ${name}: ${e instanceof Refusal ? e.message : `${e.name}: ${e.message}`}`);
    return;
  }
  report.passed += 1;
  console.log(`ok    ${name}${note ? `  (${note})` : ''}`);
}
function fail(name, why) {
  report.failed += 1;
  console.log(`FAIL  ${name}: ${why}`);
}

/** Vector files: every number token must be a safe integer before JSON.parse sees it. */
function loadJsonFile(path) {
  const text = readFileSync(path, 'utf8');
  for (const tok of scanNumbers(text)) checkNumberToken(tok);
  return JSON.parse(text);
}

function expectEqual(what, got, want) {
  if (got !== want) throw new Refusal('mismatch', `${what}: computed ${JSON.stringify(got)}, file has ${JSON.stringify(want)}`);
}
const label = (v) => `#${v.n} ${(v.description ?? '').slice(0, 48)}`;

function main() {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..'));
  console.log(`js verifier: ${root}`);
  const present = {};
  for (const [k, f] of Object.entries(FILES)) {
    if (existsSync(join(root, f)) && statSync(join(root, f)).isFile()) present[k] = join(root, f);
    else console.log(`skip  ${f}: absent`);
  }
  const wgDir = join(root, 'cose-wg');
  const coseWg = existsSync(wgDir) ? readdirSync(wgDir).filter((f) => f.endsWith('.json')).sort() : [];
  if (!coseWg.length) console.log('skip  cose-wg/*.json: absent');
  if (!Object.keys(present).some((k) => k !== 'schema') && !coseWg.length) {
    fail('discovery', `no vector file in ${root}`);
    return finish();
  }
  if (present.schema) console.log(`note  ${FILES.schema}: present; the JS verifier applies the hand-written rules only`);

  for (const kind of ['receipts', 'receiptsExtended']) {
    if (!present[kind]) continue;
    const name = FILES[kind];
    let doc;
    check(`${name} header`, () => {
      doc = loadJsonFile(present[kind]);
      expectEqual('schema_id', doc.schema_id, SCHEMA_ID);
      expectEqual('vector_count', doc.vector_count, doc.vectors.length);
      if (!doc.vectors.length) throw new Refusal('mismatch', 'no vectors');
    });
    for (const v of doc?.vectors ?? []) {
      check(`${name} ${label(v)}`, () => {
        checkReceipt(v.receipt);
        const canonical = utf8.encode(canonicalize(v.receipt));
        expectEqual('content_hash', toHex(blake3(canonical)), v.content_hash);
        // Round trip: parse the canonical bytes strictly, re-encode, compare bytes.
        const parsed = checkReceiptBytes(canonical);
        if (!equalBytes(utf8.encode(canonicalize(parsed)), canonical)) throw new Refusal('mismatch', 'round trip changed the bytes');
        return `${canonical.length} canonical bytes, hash ok`;
      });
    }
  }

  if (present.windowHash) {
    const name = FILES.windowHash;
    let doc;
    check(`${name} load`, () => {
      doc = loadJsonFile(present.windowHash);
      if (!doc.vectors?.length) throw new Refusal('mismatch', 'no vectors');
    });
    for (const v of doc?.vectors ?? []) {
      check(`${name} ${label(v)}`, () => {
        const data = utf8.encode(v.canonical_json);
        parseJcr1(data); // re-canonicalizes and requires byte equality
        if (!HEX64.test(v.window_hash)) throw new Refusal('mismatch', 'window_hash is not 64 lowercase hex');
        expectEqual('window_hash', toHex(blake3(data)), v.window_hash);
      });
    }
  }

  if (present.negative) {
    const name = FILES.negative;
    let doc;
    check(`${name} load`, () => {
      doc = loadJsonFile(present.negative);
      if (!doc.cases?.length) throw new Refusal('mismatch', 'no cases');
    });
    for (const c of doc?.cases ?? []) {
      check(`${name} ${label(c)}`, () => {
        try {
          checkReceiptBytes(hexToBytes(c.input_hex));
        } catch (e) {
          if (e instanceof Refusal) return `refused [${e.cls}], rust code ${c.expect_refusal}`;
          throw e;
        }
        throw new Refusal('accepted', `input was ACCEPTED; expected refusal ${c.expect_refusal}`);
      });
    }
  }

  if (present.signed) {
    const name = FILES.signed;
    let doc;
    let seed;
    let pub;
    check(`${name} key`, () => {
      doc = loadJsonFile(present.signed);
      seed = hexToBytes(doc.key.seed_hex);
      pub = hexToBytes(doc.key.public_key_hex);
      expectEqual('public key from seed', toHex(ed25519.getPublicKey(seed)), doc.key.public_key_hex);
      expectEqual('kid (RFC 9679 thumbprint)', toHex(thumbprint(pub)), doc.key.kid_hex);
      if (!doc.vectors?.length) throw new Refusal('mismatch', 'no signed vectors');
    });
    if (seed && pub) {
      for (const v of doc.vectors ?? []) {
        check(`${name} ${label(v)}`, () => {
          const payload = hexToBytes(v.payload_hex);
          expectEqual('content_hash', toHex(blake3(payload)), v.content_hash);
          const receipt = checkReceiptBytes(payload);
          const prot = protectedHeader(thumbprint(pub), receipt.steward, receipt.id);
          expectEqual('protected_hex', toHex(prot), v.protected_hex);
          const tbs = sigStructure(prot, payload);
          expectEqual('to_be_signed_hex', toHex(tbs), v.to_be_signed_hex);
          const sig = ed25519.sign(tbs, seed);
          expectEqual('signature_hex (recomputed from the test key)', toHex(sig), v.signature_hex);
          const envelope = cborEncode(new Tag(18, [prot, new Map(), payload, sig]));
          expectEqual('cose_sign1_hex', toHex(envelope), v.cose_sign1_hex);
          verifyCose(hexToBytes(v.cose_sign1_hex), pub);
          return 'recomputed bytes equal; Ed25519 verify';
        });
      }
      for (const c of doc.negative ?? []) {
        check(`${name} negative #${c.n} ${(c.description ?? '').slice(0, 40)}`, () => {
          try {
            verifyCose(hexToBytes(c.cose_sign1_hex), pub);
          } catch (e) {
            if (e instanceof Refusal) return `refused [${e.cls}], rust code ${c.expect_refusal}`;
            throw e;
          }
          throw new Refusal('accepted', `envelope was ACCEPTED; expected refusal ${c.expect_refusal}`);
        });
      }
    }
  }

  if (present.signedExtra) {
    const name = FILES.signedExtra;
    let doc;
    check(`${name} load`, () => {
      doc = loadJsonFile(present.signedExtra);
      if (!doc.cases?.length) throw new Refusal('mismatch', 'no cases');
    });
    for (const c of doc?.cases ?? []) {
      check(`${name} #${c.n} ${c.rule}`, () => {
        try {
          verifyCose(hexToBytes(c.cose_sign1_hex), hexToBytes(c.public_key_hex));
        } catch (e) {
          if (!(e instanceof Refusal)) throw e;
          if (e.cls !== 'signature') throw new Refusal('mismatch', `refused for another reason (${e.message}); expected the signature check`);
          return `refused [${e.cls}]`;
        }
        throw new Refusal('accepted', `envelope was ACCEPTED; expected refusal by the strict rule ${c.rule}`);
      });
    }
  }

  if (present.seal) checkSealFile(present.seal, FILES.seal);
  if (present.seal2) checkSeal2File(present.seal2, FILES.seal2);
  if (present.voiceTurn) checkVoiceTurnFile(present.voiceTurn, FILES.voiceTurn);
  if (present.stopLatency) checkStopLatencyFile(present.stopLatency, FILES.stopLatency);
  if (present.interaction) checkInteractionFile(present.interaction, FILES.interaction);
  if (present.structured) checkStructuredFile(present.structured, FILES.structured);
  if (present.registry) {
    checkRegistryFile(present.registry, FILES.registry, {
      check, loadJsonFile, Refusal, verifyCheckpoint, ed25519VerifyStrict, leafHash, verifyInclusion,
      verifyConsistency, blake3, sha256, canonicalize,
    });
  }

  for (const f of coseWg) {
    check(`cose-wg/${f}`, () => {
      const c = loadJsonFile(join(wgDir, f));
      try {
        verifyCoseWg(c);
      } catch (e) {
        if (e instanceof Refusal && c.fail) return `refused as expected [${e.cls}]`;
        throw e;
      }
      if (c.fail) throw new Refusal('accepted', 'example marked fail was ACCEPTED');
      return 'verifies';
    });
  }
  return finish();
}

function finish() {
  console.log(`js: ${report.passed} passed, ${report.failed} failed`);
  return report.failed ? 1 : 0;
}

process.exitCode = main();
