//! RFC 8742 CBOR sequences of COSE_Sign1 items.

use std::io::{BufRead, BufReader, ErrorKind, Read};

use coset::cbor::value::Value;

use super::batch::verify_batch;
use super::verify::{KeyResolver, VerifiedReceipt};
use crate::error::{CoseRefusal, Jcr1Error};

/// Splits an RFC 8742 CBOR sequence into its items' bytes without interpreting them beyond
/// well-formedness. Refuses (with the index of the bad item) a sequence that ends inside an item
/// or contains bytes that are not CBOR.
pub fn split_cbor_sequence(bytes: &[u8]) -> core::result::Result<Vec<&[u8]>, usize> {
    let mut items = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut reader: &[u8] = rest;
        let parsed: core::result::Result<Value, _> = coset::cbor::de::from_reader(&mut reader);
        if parsed.is_err() {
            return Err(items.len());
        }
        let used = rest.len() - reader.len();
        if used == 0 {
            return Err(items.len());
        }
        items.push(&rest[..used]);
        rest = &rest[used..];
    }
    Ok(items)
}

/// The largest payload an item may carry: the receipt document limit
/// ([`crate::Limits::RECEIPT`], 64 KiB). A longer payload is refused from its length head,
/// before any of it is read into memory.
pub const MAX_PAYLOAD_BYTES: usize = 65_536;

/// The largest item [`SequenceReader`] stores: a 64 KiB payload plus 16 KiB for the envelope,
/// the protected header (whose steward and receipt id the receipt limits to 4,096 bytes each)
/// and the signature. Every item the profile accepts fits; a longer one is refused, and the rest
/// of it is read and dropped, not stored.
pub const MAX_ITEM_BYTES: usize = MAX_PAYLOAD_BYTES + 16_384;

/// The deepest nesting of arrays and maps [`SequenceReader`] follows while finding where an item
/// ends (the profile needs 3). A deeper item ends the sequence as `cose_malformed`.
pub const MAX_NESTING: usize = 16;

/// The most items [`verify_sequence`] gives one [`verify_batch`] call.
pub const MAX_BATCH_ITEMS: usize = 256;

/// The read buffer of [`SequenceReader`].
const READ_BUFFER_BYTES: usize = 8192;

/// The capacity an item's buffer starts with.
const ITEM_CAPACITY: usize = 1024;

/// Reads an RFC 8742 CBOR sequence of tagged COSE_Sign1 items from any [`Read`], one item at a
/// time, in memory bounded by constants: the read buffer (8 KiB), one item
/// ([`MAX_ITEM_BYTES`]) and a nesting stack of [`MAX_NESTING`] frames, whatever the input's
/// size.
///
/// Each call to [`Iterator::next`] yields:
/// - `Ok(bytes)`: a well-formed item that starts with tag 18 and fits [`MAX_ITEM_BYTES`], to be
///   verified ([`verify`], [`verify_batch`]);
/// - `Err(Jcr1Error::Cose(refusal))` for a well-formed item refused from its framing alone,
///   which is read to its end without being stored: `cose_untagged`, `cose_wrong_tag`,
///   `cose_malformed` (not a tag at all), `cose_payload_too_large`, `cose_item_too_large`;
///   the next item follows;
/// - `Err(Jcr1Error::Cose(CoseRefusal::MalformedCbor))` for bytes that are not well-formed CBOR
///   or end inside an item (also too deep a nesting); nothing after them can be delimited, so
///   the iteration then ends;
/// - `Err(Jcr1Error::Io { .. })` when reading fails; the iteration then ends.
///
/// Well-formedness is RFC 8949's (appendix C) without UTF-8 validation of text strings, which
/// verification does.
///
/// [`verify`]: super::verify
/// [`verify_batch`]: super::verify_batch
#[derive(Debug)]
pub struct SequenceReader<R: Read> {
    inner: BufReader<R>,
    done: bool,
    items: usize,
}

/// One open array or map while an item is being delimited.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// Data items still expected (`None`: indefinite length, ends at a break).
    left: Option<u64>,
    /// Children completed so far.
    seen: u64,
    /// A map (its indefinite form must close after an even number of children).
    map: bool,
}

/// Why delimiting an item stopped early.
enum Stop {
    /// Not well-formed, truncated or too deep: the sequence cannot be read further.
    Malformed,
    /// The reader failed.
    Io(std::io::Error),
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == ErrorKind::UnexpectedEof {
            Stop::Malformed
        } else {
            Stop::Io(e)
        }
    }
}

/// The bytes of the item being delimited, kept while it may still be verified.
struct Kept {
    bytes: Vec<u8>,
    refusal: Option<CoseRefusal>,
}

impl Kept {
    fn storing(&self) -> bool {
        self.refusal.is_none()
    }

    /// Refuses the item: stops storing and frees what was stored.
    fn refuse(&mut self, refusal: CoseRefusal) {
        if self.refusal.is_none() {
            self.refusal = Some(refusal);
        }
        self.bytes = Vec::new();
    }

    /// `true` when `more` further bytes still fit [`MAX_ITEM_BYTES`]; refuses the item if not.
    fn room(&mut self, more: u64) -> bool {
        if !self.storing() {
            return false;
        }
        let fits = u64::try_from(self.bytes.len())
            .ok()
            .and_then(|n| n.checked_add(more))
            .is_some_and(|n| n <= MAX_ITEM_BYTES as u64);
        if !fits {
            self.refuse(CoseRefusal::ItemTooLarge);
        }
        fits
    }

    fn push(&mut self, b: &[u8]) {
        if self.room(b.len() as u64) {
            self.bytes.extend_from_slice(b);
        }
    }
}

/// Records a completed data item in its parent, closing every container that it completes.
/// `true` when the top-level item is complete.
fn complete(stack: &mut Vec<Frame>) -> bool {
    while let Some(top) = stack.last_mut() {
        top.seen = top.seen.saturating_add(1);
        match top.left.as_mut() {
            Some(left) => {
                *left = left.saturating_sub(1);
                if *left > 0 {
                    return false;
                }
                stack.pop();
            }
            None => return false,
        }
    }
    true
}

impl<R: Read> SequenceReader<R> {
    /// A reader over `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner: BufReader::with_capacity(READ_BUFFER_BYTES, inner),
            done: false,
            items: 0,
        }
    }

    /// How many items (accepted or refused) have been yielded.
    pub fn items(&self) -> usize {
        self.items
    }

    fn read_u8(&mut self) -> Result<u8, Stop> {
        let mut b = [0u8; 1];
        self.inner.read_exact(&mut b)?;
        Ok(b[0])
    }

    /// Reads a head's argument after its first byte; `None` for indefinite length (31).
    fn argument(&mut self, first: u8, kept: &mut Kept) -> Result<Option<u64>, Stop> {
        let width = match first & 0x1f {
            n @ 0..=23 => return Ok(Some(u64::from(n))),
            24 => 1,
            25 => 2,
            26 => 4,
            27 => 8,
            31 => return Ok(None),
            _ => return Err(Stop::Malformed),
        };
        let mut arg = [0u8; 8];
        let slot = arg.get_mut(8 - width..).ok_or(Stop::Malformed)?;
        self.inner.read_exact(slot)?;
        kept.push(slot);
        Ok(Some(u64::from_be_bytes(arg)))
    }

    /// Reads `len` content bytes into the item if they fit, else drops them.
    fn contents(&mut self, len: u64, kept: &mut Kept) -> Result<(), Stop> {
        if kept.room(len) {
            // `room` bounds the item at MAX_ITEM_BYTES, so `len` fits a usize and the buffer;
            // an input that ends first is `UnexpectedEof`, that is `Stop::Malformed`.
            let start = kept.bytes.len();
            let end = usize::try_from(len)
                .ok()
                .and_then(|n| start.checked_add(n))
                .ok_or(Stop::Malformed)?;
            kept.bytes.resize(end, 0);
            let slot = kept.bytes.get_mut(start..).ok_or(Stop::Malformed)?;
            self.inner.read_exact(slot)?;
            return Ok(());
        }
        let got = std::io::copy(&mut (&mut self.inner).take(len), &mut std::io::sink())?;
        if got == len {
            Ok(())
        } else {
            Err(Stop::Malformed)
        }
    }

    /// Delimits one item whose first byte is `first`, storing it in `kept` while it may still
    /// be verified.
    fn delimit(&mut self, first: u8, kept: &mut Kept) -> Result<(), Stop> {
        kept.push(&[first]);
        let mut stack: Vec<Frame> = Vec::with_capacity(MAX_NESTING);
        let mut head = first;
        loop {
            // The payload: the third element of the top-level array.
            let payload = stack.len() == 1 && stack.first().is_some_and(|f| f.seen == 2);
            let major = head >> 5;
            let done = if head == 0xff {
                // A break closes the innermost indefinite-length container.
                match stack.pop() {
                    Some(Frame {
                        left: None,
                        seen,
                        map,
                    }) if !map || seen % 2 == 0 => complete(&mut stack),
                    _ => return Err(Stop::Malformed),
                }
            } else {
                let arg = self.argument(head, kept)?;
                match (major, arg) {
                    (0 | 1, Some(_)) => complete(&mut stack),
                    (2 | 3, Some(len)) => {
                        if payload && major == 2 && len > MAX_PAYLOAD_BYTES as u64 {
                            kept.refuse(CoseRefusal::PayloadTooLarge);
                        }
                        self.contents(len, kept)?;
                        complete(&mut stack)
                    }
                    (2 | 3, None) => {
                        // Indefinite-length string: definite chunks of the same major type.
                        let mut total = 0u64;
                        loop {
                            let b = self.read_u8()?;
                            kept.push(&[b]);
                            if b == 0xff {
                                break;
                            }
                            if b >> 5 != major {
                                return Err(Stop::Malformed);
                            }
                            let len = self.argument(b, kept)?.ok_or(Stop::Malformed)?;
                            total = total.saturating_add(len);
                            if payload && major == 2 && total > MAX_PAYLOAD_BYTES as u64 {
                                kept.refuse(CoseRefusal::PayloadTooLarge);
                            }
                            self.contents(len, kept)?;
                        }
                        complete(&mut stack)
                    }
                    (4 | 5, Some(0)) => complete(&mut stack),
                    (4 | 5, n) => {
                        if stack.len() >= MAX_NESTING {
                            return Err(Stop::Malformed);
                        }
                        let left = match (major, n) {
                            (5, Some(n)) => Some(n.checked_mul(2).ok_or(Stop::Malformed)?),
                            _ => n,
                        };
                        stack.push(Frame {
                            left,
                            seen: 0,
                            map: major == 5,
                        });
                        false
                    }
                    // A tag applies to the data item that follows.
                    (6, Some(_)) => false,
                    // Two-byte simple values below 32 are not well-formed.
                    (7, Some(v)) if head & 0x1f == 24 && v < 32 => return Err(Stop::Malformed),
                    (7, Some(_)) => complete(&mut stack),
                    _ => return Err(Stop::Malformed),
                }
            };
            if done {
                return Ok(());
            }
            head = self.read_u8()?;
            kept.push(&[head]);
        }
    }
}

impl<R: Read> Iterator for SequenceReader<R> {
    type Item = Result<Vec<u8>, Jcr1Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let first = match self.read_u8() {
            Ok(b) => b,
            Err(Stop::Malformed) => {
                // End of input between items: the sequence is complete.
                self.done = true;
                return None;
            }
            Err(Stop::Io(e)) => {
                self.done = true;
                return Some(Err(Jcr1Error::io("reading the CBOR sequence", &e)));
            }
        };
        self.items += 1;
        let mut kept = Kept {
            // Room for a receipt's item (about 700 bytes) without growing; longer ones grow.
            bytes: Vec::with_capacity(ITEM_CAPACITY),
            refusal: None,
        };
        if first != 0xd2 {
            kept.refuse(match first {
                0x84 => CoseRefusal::Untagged,
                b if b >> 5 == 6 => CoseRefusal::WrongTag,
                _ => CoseRefusal::MalformedCbor,
            });
        }
        match self.delimit(first, &mut kept) {
            Ok(()) => Some(match kept.refusal {
                Some(r) => Err(Jcr1Error::Cose(r)),
                None => Ok(kept.bytes),
            }),
            Err(Stop::Malformed) => {
                self.done = true;
                Some(Err(Jcr1Error::Cose(CoseRefusal::MalformedCbor)))
            }
            Err(Stop::Io(e)) => {
                self.done = true;
                Some(Err(Jcr1Error::io("reading the CBOR sequence", &e)))
            }
        }
    }
}

/// Reads one tagged COSE_Sign1 from `reader` (a `receipt verify` input file) in memory bounded
/// by [`MAX_ITEM_BYTES`]: the item as [`SequenceReader`] yields it, then the end of the input.
/// Refuses what [`SequenceReader`] refuses, an empty input and any byte after the item
/// (`cose_malformed`, as [`verify`](super::verify) refuses trailing bytes), without reading the
/// rest.
pub fn read_single_item<R: Read>(reader: R) -> Result<Vec<u8>, Jcr1Error> {
    let mut items = SequenceReader::new(reader);
    let item = items
        .next()
        .unwrap_or(Err(Jcr1Error::Cose(CoseRefusal::MalformedCbor)))?;
    match items.inner.fill_buf() {
        Ok([]) => Ok(item),
        Ok(_) => Err(Jcr1Error::Cose(CoseRefusal::MalformedCbor)),
        Err(e) => Err(Jcr1Error::io("reading the COSE_Sign1", &e)),
    }
}

/// Verifies every item of a CBOR sequence read from `reader`, `batch` items at a time
/// (clamped to `1..=`[`MAX_BATCH_ITEMS`]) through [`verify_batch`], and hands each item's
/// result to `each(index, result)` in order. Items refused from their framing (see
/// [`SequenceReader`]) are reported with their refusal; bytes that cannot be delimited are
/// reported as one last `cose_malformed` item.
///
/// Memory is bounded by `batch` items: at most `batch * 2 * MAX_ITEM_BYTES` bytes of items and
/// Sig_structures plus the decoded receipts of one batch, whatever the input's size.
///
/// Returns the number of items, or the I/O error that stopped the reading (after every item
/// before it was reported).
///
/// [`verify_batch`]: super::verify_batch
pub fn verify_sequence<R: Read>(
    reader: R,
    resolver: &dyn KeyResolver,
    batch: usize,
    mut each: impl FnMut(usize, Result<VerifiedReceipt, CoseRefusal>),
) -> Result<usize, Jcr1Error> {
    let batch = batch.clamp(1, MAX_BATCH_ITEMS);
    let mut reader = SequenceReader::new(reader);
    let mut pending: Vec<Result<Vec<u8>, CoseRefusal>> = Vec::with_capacity(batch);
    let mut index = 0usize;
    let mut flush = |pending: &mut Vec<Result<Vec<u8>, CoseRefusal>>, index: &mut usize| {
        let items: Vec<&[u8]> = pending
            .iter()
            .filter_map(|p| p.as_ref().ok().map(Vec::as_slice))
            .collect();
        let mut verified = verify_batch(&items, resolver).into_iter();
        for p in pending.drain(..) {
            let result = match p {
                Ok(_) => verified.next().unwrap_or(Err(CoseRefusal::MalformedCbor)),
                Err(r) => Err(r),
            };
            each(*index, result);
            *index += 1;
        }
    };
    for item in &mut reader {
        match item {
            Ok(bytes) => pending.push(Ok(bytes)),
            Err(Jcr1Error::Cose(r)) => pending.push(Err(r)),
            Err(e) => {
                flush(&mut pending, &mut index);
                return Err(e);
            }
        }
        if pending.len() >= batch {
            flush(&mut pending, &mut index);
        }
    }
    flush(&mut pending, &mut index);
    Ok(index)
}
