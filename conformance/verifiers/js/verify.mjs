#!/usr/bin/env node
// Independent verifier for stream-window/1 receipts and their COSE_Sign1 envelopes (Node 20, ESM).
//
// Usage: node verify.mjs [CONFORMANCE_DIR]   (default: the conformance/ directory two levels up)
//
// Checks every vector file it finds in CONFORMANCE_DIR (formats in ../../README.md), prints one
// line per check and closes with `js: N passed, N failed`. Exit status is 0 only if every check
// passed and at least one vector file was present.
//
// Libraries: @noble/curves (Ed25519, P-256), @noble/hashes (BLAKE3, SHA-256), cbor2 (CBOR),
// canonicalize (RFC 8785).

import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { sha256 } from '@noble/hashes/sha2.js';
import canonicalize from 'canonicalize';
import { Tag, decode as cborDecode, encode as cborEncode } from 'cbor2';

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
