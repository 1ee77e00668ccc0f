//! The validator's per-document stores: the stack of open containers (the first few frames
//! inline, so a shallow document allocates nothing) and the texts of the open objects' other
//! properties (one arena).

use std::collections::HashSet;

/// Frames kept inline before the stack spills to the heap.
const INLINE: usize = 4;

/// Other properties of one object at most compared one by one; past that a hash set finds a
/// duplicate in constant time.
const SCAN: usize = 16;

/// A stack of `T` whose first [`INLINE`] entries live in the value itself.
#[derive(Debug, Clone)]
pub(crate) struct Stack<T: Copy> {
    low: [T; INLINE],
    len: usize,
    high: Vec<T>,
}

impl<T: Copy> Stack<T> {
    pub(crate) const fn new(fill: T) -> Self {
        Self {
            low: [fill; INLINE],
            len: 0,
            high: Vec::new(),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            None
        } else if i < INLINE {
            self.low.get(i)
        } else {
            self.high.get(i - INLINE)
        }
    }

    #[inline]
    pub(crate) fn last(&self) -> Option<&T> {
        if self.len <= INLINE {
            self.low.get(self.len.wrapping_sub(1))
        } else {
            self.high.last()
        }
    }

    #[inline]
    pub(crate) fn last_mut(&mut self) -> Option<&mut T> {
        let i = self.len.checked_sub(1)?;
        if i < INLINE {
            self.low.get_mut(i)
        } else {
            self.high.get_mut(i - INLINE)
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, x: T) {
        if let Some(slot) = self.low.get_mut(self.len) {
            *slot = x;
        } else {
            self.high.push(x);
        }
        self.len += 1;
    }

    #[inline]
    pub(crate) fn pop(&mut self) {
        if self.len > INLINE {
            self.high.pop();
        }
        self.len = self.len.saturating_sub(1);
    }
}

/// The other properties (keys no declared name matches) of the open objects, innermost last,
/// and the text of the key being read when it needs keeping. Bounded by the document.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExtraKeys {
    /// The committed keys' texts, then the pending key's.
    text: Vec<u8>,
    /// (stack depth, start, end) per committed key.
    keys: Vec<(u32, usize, usize)>,
    /// (depth, text) of every committed key, once there are more than [`SCAN`].
    set: Option<HashSet<(u32, Box<[u8]>)>>,
}

impl ExtraKeys {
    fn committed(&self) -> usize {
        self.keys.last().map_or(0, |k| k.2)
    }

    /// Starts a pending key (forgets any earlier pending text).
    #[inline]
    pub(crate) fn begin(&mut self) {
        let end = self.committed();
        self.text.truncate(end);
    }

    /// Appends to the pending key.
    #[inline]
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
    }

    /// Appends one byte to the pending key.
    #[inline]
    pub(crate) fn push(&mut self, byte: u8) {
        self.text.push(byte);
    }

    /// The pending key's text.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> &[u8] {
        self.text.get(self.committed()..).unwrap_or_default()
    }

    /// Commits the pending key as a property of the object at `depth`: its index, or `None`
    /// when that object already has it.
    pub(crate) fn commit(&mut self, depth: u32) -> Option<usize> {
        let start = self.committed();
        let key = self.text.get(start..).unwrap_or_default();
        let duplicate = match &self.set {
            Some(set) => set.contains(&(depth, Box::from(key))),
            None => self
                .keys
                .iter()
                .rev()
                .take_while(|k| k.0 == depth)
                .any(|&(_, s, e)| self.text.get(s..e) == Some(key)),
        };
        if duplicate {
            return None;
        }
        let entry = (depth, start, self.text.len());
        if let Some(set) = &mut self.set {
            set.insert((depth, Box::from(key)));
        } else if self.keys.len() >= SCAN {
            let mut set = HashSet::new();
            for &(d, s, e) in self.keys.iter().chain([&entry]) {
                set.insert((d, Box::from(self.text.get(s..e).unwrap_or_default())));
            }
            self.set = Some(set);
        }
        self.keys.push(entry);
        Some(self.keys.len() - 1)
    }

    /// Forgets the keys of the object at `depth` (it closed).
    #[inline]
    pub(crate) fn pop_depth(&mut self, depth: u32) {
        if self.keys.last().is_some_and(|k| k.0 == depth) {
            self.pop_keys(depth);
        }
    }

    fn pop_keys(&mut self, depth: u32) {
        while let Some(&(d, s, e)) = self.keys.last()
            && d == depth
        {
            if let Some(set) = &mut self.set
                && let Some(t) = self.text.get(s..e)
            {
                set.remove(&(d, Box::from(t)));
            }
            self.keys.pop();
            self.text.truncate(s);
        }
    }

    /// The text of committed key `i`.
    pub(crate) fn text(&self, i: usize) -> Option<&[u8]> {
        let &(_, s, e) = self.keys.get(i)?;
        self.text.get(s..e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_spills_past_its_inline_frames_and_comes_back() {
        let mut s = Stack::new(0u32);
        for i in 0..20 {
            assert_eq!(s.len(), i as usize);
            s.push(i);
            assert_eq!(s.last(), Some(&i));
        }
        for i in 0..20 {
            assert_eq!(s.get(i), Some(&(i as u32)));
        }
        assert_eq!(s.get(20), None);
        for i in (0..20).rev() {
            assert_eq!(s.last(), Some(&i));
            *s.last_mut().unwrap_or(&mut 0) += 100;
            assert_eq!(s.last(), Some(&(i + 100)));
            s.pop();
        }
        assert!(s.is_empty());
        assert_eq!(s.last(), None);
    }

    /// Duplicates are found per object, before and after the hash set takes over, and a
    /// closed object's keys are forgotten.
    #[test]
    fn duplicates_are_found_per_object_at_any_count() {
        for n in [3usize, 40] {
            let mut x = ExtraKeys::default();
            for i in 0..n {
                x.begin();
                x.extend(format!("k{i}").as_bytes());
                assert_eq!(x.commit(1), Some(i));
            }
            // The same text in an inner object is no duplicate; closing it forgets it.
            x.begin();
            x.extend(b"k0");
            assert!(x.commit(2).is_some());
            x.begin();
            x.extend(b"k0");
            assert_eq!(x.commit(2), None, "n={n}");
            x.pop_depth(2);
            x.begin();
            x.push(b'k');
            x.push(b'0');
            assert_eq!(x.pending(), b"k0");
            assert_eq!(x.commit(1), None, "n={n}");
            x.begin();
            x.extend(b"k");
            assert!(x.commit(1).is_some(), "n={n}");
            assert_eq!(x.text(0), Some(&b"k0"[..]));
            x.pop_depth(1);
            x.begin();
            x.extend(b"k0");
            assert_eq!(x.commit(1), Some(0), "n={n}");
        }
    }
}
