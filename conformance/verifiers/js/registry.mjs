// The call registry (spec/CALL-REGISTRY.md) for verify.mjs: C2SP signed notes (Ed25519, type
// 0x01), cosignature/v1 lines (type 0x04), c2sp.org/tlog-proof@v1 files whose extra data is the
// call's final stream-seal/1 checkpoint, witness policies with a quorum, forks.
//
// verify.mjs passes its own primitives (`ctx`): check, loadJsonFile, Refusal, verifyCheckpoint
// (stream-seal/1), ed25519VerifyStrict, leafHash, verifyInclusion, verifyConsistency, blake3,
// sha256, canonicalize.

const B64 = (s) => {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4) throw new Error('not standard base64');
  const b = Uint8Array.from(Buffer.from(s, 'base64'));
  if (Buffer.from(b).toString('base64') !== s) throw new Error('not canonical base64');
  return b;
};
const hex = (b) => Buffer.from(b).toString('hex');
const MAX_NOTE_SIGNATURES = 64;
const MAX_WITNESSES = 63;
const utf8 = new TextEncoder();

export function checkRegistryFile(path, name, ctx) {
  const { check, loadJsonFile, Refusal } = ctx;
  const refuse = (code, detail = '') => new Refusal(code, detail);

  const keyId = (nameStr, alg, key) => {
    const d = ctx.sha256(new Uint8Array([...utf8.encode(`${nameStr}\n`), alg, ...key]));
    return ((d[0] << 24) >>> 0) + (d[1] << 16) + (d[2] << 8) + d[3];
  };
  const validName = (n) => n.length > 0 && utf8.encode(n).length <= 255 && !/[\s+\u0000-\u001f]/u.test(n);
  const parseVkey = (vkey, alg) => {
    const i = vkey.indexOf('+');
    const j = vkey.indexOf('+', i + 1);
    if (i < 0 || j < 0 || j - i !== 9) throw refuse('verifier_key_invalid', vkey);
    const n = vkey.slice(0, i);
    const id = parseInt(vkey.slice(i + 1, j), 16);
    const raw = B64(vkey.slice(j + 1));
    if (!validName(n) || raw.length !== 33 || raw[0] !== alg) throw refuse('verifier_key_invalid', vkey);
    if (keyId(n, alg, raw.subarray(1)) !== id) throw refuse('verifier_key_invalid', 'hash is not the key ID');
    return { name: n, id, key: raw.subarray(1) };
  };
  const parsePolicy = (text) => {
    let log = null;
    let quorum = null;
    const witnesses = [];
    text.split('\n').forEach((line, k) => {
      const f = line.split(/\s+/).filter(Boolean);
      const bad = (why) => refuse('policy_malformed', `line ${k + 1}: ${why}`);
      try {
        if (!f.length || f[0].startsWith('#')) return;
        if (f[0] === 'log' && f.length === 2 && !log) log = parseVkey(f[1], 0x01);
        else if (f[0] === 'witness' && (f.length === 2 || f.length === 3)) {
          if (witnesses.length === MAX_WITNESSES) throw bad(`more than ${MAX_WITNESSES} witnesses`);
          const w = parseVkey(f[1], 0x04);
          if (witnesses.some((o) => o.name === w.name || hex(o.key) === hex(w.key))) throw bad('repeated witness');
          if (f.length === 3 && !/^https?:\/\//.test(f[2])) throw bad('URL');
          witnesses.push(w);
        } else if (f[0] === 'quorum' && f.length === 2 && quorum === null && /^[0-9]+$/.test(f[1])) quorum = Number(f[1]);
        else throw bad('not a log, witness or quorum line');
      } catch (e) {
        throw e.cls === 'policy_malformed' ? e : bad(e.message);
      }
    });
    if (!log || quorum === null || quorum < 1 || quorum > witnesses.length) throw refuse('policy_malformed', 'log and quorum');
    // More than half: any two quorums share a witness (else two forks can each reach one).
    if (quorum * 2 <= witnesses.length) throw refuse('policy_malformed', 'the quorum is more than half the witnesses');
    if (witnesses.some((w) => hex(w.key) === hex(log.key))) throw refuse('policy_malformed', "a witness key is the log's key");
    return { log, witnesses, quorum };
  };
  const parseBody = (text) => {
    const lines = text.split('\n');
    if (lines.length !== 4 || lines[3] !== '') throw refuse('checkpoint_malformed', 'exactly three lines');
    const [origin, size, root] = lines;
    if (!validName(origin) || !/^(0|[1-9][0-9]*)$/.test(size)) throw refuse('checkpoint_malformed', 'origin or size');
    const r = B64(root);
    if (r.length !== 32) throw refuse('checkpoint_malformed', 'root');
    return { origin, size: BigInt(size), root: r };
  };
  const strictOk = (sig, msg, key) => {
    try {
      ctx.ed25519VerifyStrict(sig, msg, key);
      return true;
    } catch {
      return false;
    }
  };
  const openNote = (note, log, witnesses) => {
    const end = note.lastIndexOf('\n\n');
    if (end < 0 || !note.endsWith('\n')) throw refuse('note_malformed', 'framing');
    const text = note.slice(0, end + 1);
    const body = parseBody(text);
    if (body.origin !== log.name) throw refuse('origin_mismatch', body.origin);
    const textBytes = utf8.encode(text);
    let stewardOk = false;
    const cosigners = new Map();
    const sigLines = note.slice(end + 2, -1).split('\n');
    if (sigLines.length > MAX_NOTE_SIGNATURES) throw refuse('note_malformed', `more than ${MAX_NOTE_SIGNATURES} signature lines`);
    for (const line of sigLines) {
      if (!line.startsWith('\u2014 ')) throw refuse('note_malformed', 'signature line');
      const [n, b64] = line.slice(2).split(' ');
      let raw;
      try {
        raw = B64(b64);
      } catch (e) {
        throw refuse('note_malformed', e.message);
      }
      const id = ((raw[0] << 24) >>> 0) + (raw[1] << 16) + (raw[2] << 8) + raw[3];
      const sig = raw.subarray(4);
      if (n === log.name && id === log.id) {
        if (!strictOk(sig, textBytes, log.key)) throw refuse('signature_invalid', n);
        stewardOk = true;
        continue;
      }
      const w = witnesses.find((x) => x.name === n && x.id === id);
      if (!w) continue;
      if (sig.length !== 72) throw refuse('signature_invalid', n);
      const t = Buffer.from(sig.subarray(0, 8)).readBigUInt64BE();
      const msg = new Uint8Array([...utf8.encode(`cosignature/v1\ntime ${t}\n`), ...textBytes]);
      if (t > 2n ** 63n - 1n || !strictOk(sig.subarray(8), msg, w.key)) throw refuse('signature_invalid', n);
      // Every line of a trusted witness verified; it counts once, at its earliest time.
      if (!cosigners.has(n) || t < cosigners.get(n)) cosigners.set(n, t);
    }
    if (!stewardOk) throw refuse('steward_signature_missing');
    return { ...body, cosigners };
  };
  const leafOfSeal = (seal) => {
    if (seal.final !== true) throw refuse('seal_invalid', 'not final');
    const doc = utf8.encode(ctx.canonicalize(seal));
    return utf8.encode(ctx.canonicalize({
      jc_registry: 'registry-leaf/1',
      seal_hash: hex(ctx.blake3(doc)),
      seal_root: seal.root,
      seal_tree_size: seal.tree_size,
      steward: seal.steward,
      stream_id: seal.stream_id,
    }));
  };
  const parseProof = (text) => {
    const cut = text.indexOf('\n\n');
    if (cut < 0) throw refuse('proof_malformed', 'framing');
    const lines = text.slice(0, cut).split('\n');
    if (lines.length < 3 || lines[0] !== 'c2sp.org/tlog-proof@v1' || !lines[1].startsWith('extra ') || !lines[2].startsWith('index ')) {
      throw refuse('proof_malformed', 'header, extra and index lines');
    }
    const idx = lines[2].slice(6);
    if (!/^(0|[1-9][0-9]*)$/.test(idx)) throw refuse('proof_malformed', 'index');
    const path = lines.slice(3).map(B64);
    if (path.some((h) => h.length !== 32)) throw refuse('proof_malformed', 'hash');
    return { seal: B64(lines[1].slice(6)), index: BigInt(idx), path, note: text.slice(cut + 2) };
  };
  const verifyProof = (text, policyText) => {
    const pol = parsePolicy(policyText);
    const p = parseProof(text);
    let seal;
    try {
      ({ seal } = ctx.verifyCheckpoint(p.seal, pol.log.key));
    } catch (e) {
      throw refuse('seal_invalid', e.message);
    }
    const entry = ctx.blake3(leafOfSeal(seal));
    const cp = openNote(p.note, pol.log, pol.witnesses);
    const have = pol.witnesses.filter((w) => cp.cosigners.has(w.name)).length;
    if (have < pol.quorum) throw refuse('quorum_not_met', `${have} of ${pol.quorum}`);
    try {
      ctx.verifyInclusion(p.index, cp.size, ctx.leafHash(entry), p.path, cp.root);
    } catch {
      throw refuse('inclusion_invalid');
    }
    // When the quorum had cosigned: the quorum-th earliest of the policy witnesses' times.
    const times = pol.witnesses.filter((w) => cp.cosigners.has(w.name)).map((w) => cp.cosigners.get(w.name));
    times.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return { seal, cp, index: p.index, quorumTime: times[pol.quorum - 1] };
  };
  const outcome = (fn) => {
    try {
      fn();
      return 'valid';
    } catch (e) {
      return e.cls ?? `malformed (${e.message})`;
    }
  };
  const equal = (what, got, want) => {
    if (got !== want) throw refuse('mismatch', `${what}: computed ${got}, file has ${want}`);
  };

  const doc = loadJsonFile(path);
  const steward = parseVkey(doc.steward_vkey, 0x01);
  doc.leaves.forEach((l, i) => check(`${name} leaf ${i}`, () => {
    const { seal } = ctx.verifyCheckpoint(Uint8Array.from(Buffer.from(l.seal_cose_hex, 'hex')), steward.key);
    const leaf = leafOfSeal(seal);
    equal('canonical', Buffer.from(leaf).toString('utf8'), l.canonical);
    const entry = ctx.blake3(leaf);
    equal('entry', hex(entry), l.entry_hex);
    equal('leaf hash', hex(ctx.leafHash(entry)), l.leaf_hash_hex);
  }));
  doc.checkpoints.forEach((c, i) => check(`${name} checkpoint ${i}`, () => {
    const cp = openNote(c.note, steward, []);
    equal('size', cp.size, BigInt(c.size));
    equal('root', hex(cp.root), c.root_hex);
  }));
  doc.valid_proofs.forEach((p, i) => check(`${name} valid proof ${i}`, () => {
    const got = verifyProof(p.proof, p.policy);
    equal('stream', got.seal.stream_id, p.stream_id);
    equal('index', got.index, BigInt(p.index));
    equal('cosigners', [...got.cp.cosigners.keys()].sort().join(','), [...p.cosigners].sort().join(','));
    equal('earliest', [...got.cp.cosigners.values()].reduce((a, b) => (a < b ? a : b)), BigInt(p.earliest_cosignature));
    if (p.quorum_time !== undefined) equal('quorum time', got.quorumTime, BigInt(p.quorum_time));
  }));
  doc.negative_proofs.forEach((n, i) => check(`${name} negative proof ${i}: ${n.what.slice(0, 48)}`, () => {
    const got = outcome(() => verifyProof(n.proof, n.policy));
    if ((got === 'valid') !== (n.expect === 'valid')) throw refuse('mismatch', `got ${got}, expected ${n.expect}`);
    return got;
  }));
  doc.forks.forEach((f, i) => check(`${name} fork ${i}`, () => {
    let a = openNote(f.a, steward, []);
    let b = openNote(f.b, steward, []);
    if (a.size > b.size) [a, b] = [b, a];
    let got = 'consistent';
    if (a.size === b.size) {
      if (hex(a.root) !== hex(b.root)) got = 'fork';
    } else {
      try {
        ctx.verifyConsistency(a.size, b.size, a.root, b.root, f.consistency_hex.map((h) => Uint8Array.from(Buffer.from(h, 'hex'))));
      } catch {
        got = 'fork';
      }
    }
    equal(f.what, got, f.expect);
    return got;
  }));
  doc.policies.forEach((p, i) => check(`${name} policy ${i}`, () => {
    const got = outcome(() => parsePolicy(p.policy));
    equal('policy outcome', got, p.expect);
    return got;
  }));
}
