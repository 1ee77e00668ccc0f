//! Prefix tries over the member texts of the grammar's nodes (an object's property names, a
//! `oneOf`'s tag values, a string's `enum` members), built once when a grammar is compiled.
//!
//! The streaming validator reads a key, tag value or enum string as a walk from the node's
//! root state: one edge per decoded byte. A state stands for every member whose text starts
//! with the bytes so far, so the member set the validator used to narrow by comparing each
//! member's byte is the state's set, its size the state's `count` (the work a byte costs) and
//! the member whose text ends here the state's `exact`. The tries are derived from the nodes
//! and are not part of the canonical form or the digest.

use crate::grammar::{Bits, Kind, NONE, Node, bit};

/// One state: the bytes so far are a prefix of `count` members (all of set `set`).
#[derive(Debug, Clone, Copy)]
struct State {
    /// First edge in `edge_bytes` / `edge_to`.
    edge: u32,
    /// Number of edges (at most 256).
    edges: u16,
    /// Members with this prefix (at most [`crate::MAX_MEMBERS`]).
    count: u16,
    /// The member whose text is exactly this prefix, or `u16::MAX`.
    exact: u16,
    /// Index of the member set in [`Tries::sets`].
    set: u32,
    /// With one member (`count == 1`): the rest of its text after this prefix is
    /// `tails[tail..tail_end]`, and the state after `k` more of its bytes is this one plus `k`
    /// (a single member's states are built one after another).
    tail: u32,
    tail_end: u32,
    /// Every member text of the trie is made of plain string bytes (printable ASCII but `"`
    /// and backslash): then a walk stops at any other byte by itself.
    plain: bool,
}

/// No child (or no next sibling) of a state under construction.
const NO_CHILD: usize = usize::MAX;

/// Length of the common prefix of `a` and `b`.
#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

/// Every node's trie, in one arena.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tries {
    /// Per node: the root state of its trie, or [`NONE`] (nodes without member texts).
    root: Vec<u32>,
    states: Vec<State>,
    edge_bytes: Vec<u8>,
    edge_to: Vec<u32>,
    /// Distinct member sets: a state shares its parent's set when it has as many members.
    sets: Vec<Bits>,
    /// The member texts, one after another (see [`State::tail`]).
    tails: Vec<u8>,
}

/// A trie under construction: the byte that leads to it, its first child and next sibling (a
/// list, in the order they were added: no allocation per state), members with the prefix,
/// exact member, and the last member through it with its depth.
struct Building {
    byte: u8,
    first_child: usize,
    next_sibling: usize,
    set: Bits,
    count: u16,
    exact: u16,
    member: usize,
    depth: usize,
}

/// The buffers one [`Tries::add`] works in, kept from one trie to the next.
#[derive(Default)]
struct Scratch {
    building: Vec<Building>,
    starts: Vec<usize>,
    set_of: Vec<u32>,
    children: Vec<(u8, usize)>,
}

/// The member texts of `node` into `out` (cleared first); `false` for a node without any.
fn member_texts<'a>(node: &'a Node, out: &mut Vec<&'a [u8]>) -> bool {
    out.clear();
    match &node.kind {
        Kind::Object { props, .. } => out.extend(props.iter().map(|p| p.name.as_bytes())),
        Kind::OneOf { branches, .. } => {
            out.extend(branches.iter().map(|b| b.tag_value.as_bytes()));
        }
        Kind::String {
            allowed: Some(a), ..
        } => out.extend(a.iter().map(String::as_bytes)),
        _ => return false,
    }
    true
}

impl Tries {
    /// The tries of `nodes`, indexed like them.
    pub(crate) fn build(nodes: &[Node]) -> Tries {
        let mut t = Tries::default();
        let mut texts = Vec::new();
        // The arenas' sizes, reserved once: at most a state per member byte and one root per
        // trie, an edge per member byte; about a set per root and two per member (a state has
        // a set of its own only where a member ends or members part).
        let (mut tries, mut members, mut bytes) = (0usize, 0usize, 0usize);
        // The largest trie: its members and its member bytes, for the scratch buffers.
        let (mut most_members, mut most_bytes) = (0usize, 0usize);
        for node in nodes {
            if member_texts(node, &mut texts) {
                let len = texts.iter().map(|text| text.len()).sum::<usize>();
                tries += 1;
                members += texts.len();
                bytes += len;
                most_members = most_members.max(texts.len());
                most_bytes = most_bytes.max(len);
            }
        }
        t.root.reserve_exact(nodes.len());
        t.states.reserve_exact(tries + bytes);
        t.edge_bytes.reserve_exact(bytes);
        t.edge_to.reserve_exact(bytes);
        t.sets.reserve_exact(tries + 2 * members);
        t.tails.reserve_exact(bytes);
        let mut scratch = Scratch {
            building: Vec::with_capacity(1 + most_bytes),
            starts: Vec::with_capacity(most_members),
            set_of: Vec::with_capacity(1 + most_bytes),
            children: Vec::with_capacity(most_members.min(256)),
        };
        texts.reserve(most_members);
        for node in nodes {
            let root = if member_texts(node, &mut texts) {
                t.add_in(&mut scratch, &texts)
            } else {
                NONE
            };
            t.root.push(root);
        }
        t
    }

    /// Adds the trie of `texts` (at most 256 of them, distinct); returns its root state.
    #[cfg(test)]
    fn add(&mut self, texts: Vec<&[u8]>) -> u32 {
        self.add_in(&mut Scratch::default(), &texts)
    }

    /// [`Tries::add`] in `scratch`'s buffers.
    fn add_in(&mut self, scratch: &mut Scratch, texts: &[&[u8]]) -> u32 {
        let Scratch {
            building: b,
            starts,
            set_of,
            children,
        } = scratch;
        b.clear();
        b.push(Building {
            byte: 0,
            first_child: NO_CHILD,
            next_sibling: NO_CHILD,
            set: [0; 4],
            count: 0,
            exact: u16::MAX,
            member: 0,
            depth: 0,
        });
        starts.clear();
        for (i, text) in texts.iter().enumerate() {
            starts.push(self.tails.len());
            self.tails.extend_from_slice(text);
            let m = bit(i);
            let mut at = 0;
            for (w, x) in b[at].set.iter_mut().zip(m) {
                *w |= x;
            }
            b[at].count += 1;
            b[at].member = i;
            for (depth, &byte) in text.iter().enumerate() {
                let mut child = b[at].first_child;
                while child != NO_CHILD && b[child].byte != byte {
                    child = b[child].next_sibling;
                }
                let next = if child != NO_CHILD {
                    child
                } else {
                    let n = b.len();
                    // Appended last among its siblings, as the byte order of the edges is
                    // sorted below.
                    b.push(Building {
                        byte,
                        first_child: NO_CHILD,
                        next_sibling: NO_CHILD,
                        set: [0; 4],
                        count: 0,
                        exact: u16::MAX,
                        member: i,
                        depth: depth + 1,
                    });
                    match b[at].first_child {
                        NO_CHILD => b[at].first_child = n,
                        first => {
                            let mut last = first;
                            while b[last].next_sibling != NO_CHILD {
                                last = b[last].next_sibling;
                            }
                            b[last].next_sibling = n;
                        }
                    }
                    n
                };
                at = next;
                for (w, x) in b[at].set.iter_mut().zip(m) {
                    *w |= x;
                }
                b[at].count += 1;
                b[at].member = i;
            }
            // At most 256 members.
            b[at].exact = i as u16;
        }
        // States are numbered as built (a parent before its children); the arena is bounded
        // by the schema's size (at most 1 MiB of member text), far below u32::MAX.
        let base = self.states.len() as u32;
        let plain = texts.iter().all(|t| {
            t.iter()
                .all(|&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\')
        });
        set_of.clear();
        set_of.resize(b.len(), 0);
        for (k, s) in b.iter().enumerate() {
            if k == 0 {
                self.sets.push(s.set);
                set_of[0] = (self.sets.len() - 1) as u32;
            }
            children.clear();
            let mut child = s.first_child;
            while child != NO_CHILD {
                children.push((b[child].byte, child));
                child = b[child].next_sibling;
            }
            children.sort_unstable_by_key(|&(c, _)| c);
            let edge = self.edge_bytes.len() as u32;
            for &(c, n) in children.iter() {
                self.edge_bytes.push(c);
                self.edge_to.push(base + n as u32);
                set_of[n] = if b[n].count == s.count {
                    set_of[k]
                } else {
                    self.sets.push(b[n].set);
                    (self.sets.len() - 1) as u32
                };
            }
            let (tail, tail_end) = match (s.count, texts.get(s.member), starts.get(s.member)) {
                // Bounded by the schema's size, like the states.
                (1, Some(t), Some(&at)) => ((at + s.depth) as u32, (at + t.len()) as u32),
                _ => (0, 0),
            };
            self.states.push(State {
                edge,
                // At most 256 distinct bytes.
                edges: children.len() as u16,
                count: s.count,
                exact: s.exact,
                set: set_of[k],
                tail,
                tail_end,
                plain,
            });
        }
        base
    }

    /// The root state of `node`'s trie ([`NONE`] when it has none).
    #[inline]
    pub(crate) fn root(&self, node: u32) -> u32 {
        self.root.get(node as usize).copied().unwrap_or(NONE)
    }

    /// How many members have the prefix of state `s` (0 for [`NONE`]).
    #[inline]
    pub(crate) fn count(&self, s: u32) -> u64 {
        self.states
            .get(s as usize)
            .map_or(0, |st| u64::from(st.count))
    }

    /// The member whose text is exactly the prefix of state `s`.
    #[inline]
    pub(crate) fn exact(&self, s: u32) -> Option<usize> {
        match self.states.get(s as usize)?.exact {
            u16::MAX => None,
            i => Some(usize::from(i)),
        }
    }

    /// The state after `byte` from `s`, or `None` when no member continues with it.
    #[inline]
    pub(crate) fn next(&self, s: u32, byte: u8) -> Option<u32> {
        self.next_from(self.states.get(s as usize)?, byte)
    }

    #[inline]
    fn next_from(&self, st: &State, byte: u8) -> Option<u32> {
        let (lo, n) = (st.edge as usize, usize::from(st.edges));
        let bytes = self.edge_bytes.get(lo..lo + n)?;
        let i = bytes.iter().position(|&c| c == byte)?;
        self.edge_to.get(lo + i).copied()
    }

    /// Follows `bytes` from state `s` as far as members continue with them, at most `room`
    /// bytes, and (when `seen` is given) only while some member with the prefix is not in
    /// `seen`. Returns how many bytes were followed, the state reached and the work: for each
    /// byte, the members of the state it left (every member with the prefix is compared
    /// against it). The state `s` itself must have a member outside `seen`.
    #[inline]
    pub(crate) fn walk(
        &self,
        mut s: u32,
        bytes: &[u8],
        mut room: usize,
        seen: Option<&Bits>,
    ) -> (usize, u32, u64) {
        let (mut k, mut work) = (0usize, 0u64);
        while let Some(st) = self.states.get(s as usize) {
            if st.count == 1 {
                // One member left: the rest of its text, one unit of work per byte; its
                // states follow one another, and its set stays the one already checked.
                let tail = self
                    .tails
                    .get(st.tail as usize..st.tail_end as usize)
                    .unwrap_or_default();
                // The common prefix of the two cut to `room` is the common prefix, at most
                // `room`.
                let n = common_prefix(bytes.get(k..).unwrap_or_default(), tail).min(room);
                // At most the tail's length (a member text of at most 1 MiB).
                return (k + n, s + n as u32, work + n as u64);
            }
            let (Some(&b), true) = (bytes.get(k), room > 0) else {
                break;
            };
            let Some(next) = self.next_from(st, b) else {
                break;
            };
            if let (Some(seen), Some(ns)) = (seen, self.states.get(next as usize))
                && ns.set != st.set
                && self
                    .sets
                    .get(ns.set as usize)
                    .is_none_or(|m| (0..4).all(|w| m[w] & !seen[w] == 0))
            {
                break;
            }
            work += u64::from(st.count);
            s = next;
            k += 1;
            room -= 1;
        }
        (k, s, work)
    }

    /// Whether every member text of the trie of state `s` is plain (see [`State::plain`]).
    #[inline]
    pub(crate) fn plain(&self, s: u32) -> bool {
        self.states.get(s as usize).is_some_and(|st| st.plain)
    }

    /// The members with the prefix of state `s` (none for [`NONE`]).
    #[inline]
    pub(crate) fn set(&self, s: u32) -> Bits {
        self.states
            .get(s as usize)
            .and_then(|st| self.sets.get(st.set as usize))
            .copied()
            .unwrap_or([0; 4])
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_is_the_first_difference() {
        for len in 0..20 {
            let a: Vec<u8> = (0..len as u8).collect();
            assert_eq!(common_prefix(&a, &a), len);
            for at in 0..len {
                let mut b = a.clone();
                b[at] ^= 0x80;
                assert_eq!(common_prefix(&a, &b), at, "{len} {at}");
            }
        }
    }

    fn walk(t: &Tries, root: u32, text: &[u8]) -> Option<u32> {
        text.iter().try_fold(root, |s, &b| t.next(s, b))
    }

    /// Each state's set, count and exact member are what comparing every member's bytes
    /// gives, for every prefix of every member and a byte past each.
    #[test]
    fn states_are_the_members_with_the_prefix() {
        let texts: Vec<&[u8]> = vec![b"city", b"cit", b"country", b"", b"c\xc3\xa9", b"zone"];
        let mut t = Tries::default();
        let root = t.add(texts.clone());
        assert!(!t.plain(root));
        let plain = t.add(vec![b"city", b"zone"]);
        assert!(t.plain(plain) && !t.plain(root));
        let quote = t.add(vec![b"a\"b"]);
        let backslash = t.add(vec![b"a\\b"]);
        assert!(!t.plain(quote) && !t.plain(backslash));
        let mut prefixes: Vec<Vec<u8>> = vec![b"x".to_vec(), b"ci".to_vec(), b"cx".to_vec()];
        for m in &texts {
            for end in 0..=m.len() {
                prefixes.push(m[..end].to_vec());
                let mut past = m[..end].to_vec();
                past.push(b'y');
                prefixes.push(past);
            }
        }
        for p in prefixes {
            let want: Vec<usize> = (0..texts.len())
                .filter(|&i| texts[i].starts_with(&p))
                .collect();
            match walk(&t, root, &p) {
                None => assert!(want.is_empty(), "{p:?}: no state, members {want:?}"),
                Some(s) => {
                    let set = t.set(s);
                    let got: Vec<usize> = (0..256)
                        .filter(|&i| set[i / 64] & (1 << (i % 64)) != 0)
                        .collect();
                    assert_eq!(got, want, "{p:?}");
                    assert_eq!(t.count(s), want.len() as u64, "{p:?}");
                    let exact = texts.iter().position(|m| *m == p.as_slice());
                    assert_eq!(t.exact(s), exact, "{p:?}");
                    // A walk over the rest of any member (and a byte past it) is the walk
                    // one byte at a time, its work the members of each state left.
                    for m in &want {
                        let mut rest = texts[*m][p.len()..].to_vec();
                        rest.push(b'y');
                        let (mut at, mut work, mut n) = (s, 0, 0);
                        while let Some(x) = rest.get(n).and_then(|&b| t.next(at, b)) {
                            work += t.count(at);
                            at = x;
                            n += 1;
                        }
                        assert_eq!(t.walk(s, &rest, usize::MAX, None), (n, at, work), "{p:?}");
                        let short = n.saturating_sub(1);
                        assert_eq!(t.walk(s, &rest, short, None).0, short, "{p:?}");
                    }
                }
            }
        }
    }
}
