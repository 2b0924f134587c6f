//! Buffers of released path lists, kept for the next list of their length.
//!
//! A loop that creates and destroys path lists (a per-step selection)
//! would allocate and free a buffer per list. A released list's buffer
//! that nothing else holds is kept instead: one per length up to
//! [`SMALL_MAX`] paths (at most about 64 KiB in all), so lists whose
//! lengths vary from step to step reuse them too, and one buffer of any
//! longer length. The buffers live under the path-list table's lock (see
//! `PathDictionary::lists`); [`SpareHint`] mirrors which lengths have one,
//! readable without the lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use ovstage_types::PrimPath;

/// The longest list length kept one buffer per length.
pub(crate) const SMALL_MAX: usize = 127;

/// The kept buffers; changed only under the path-list table's lock.
#[derive(Default)]
pub(crate) struct Spares {
    /// At most one buffer per length up to [`SMALL_MAX`], at its length.
    small: Vec<Option<Arc<[PrimPath]>>>,
    /// At most one buffer of a longer length.
    large: Option<Arc<[PrimPath]>>,
}

impl Spares {
    /// Takes the kept buffer of length `len`, if any.
    pub(crate) fn take(&mut self, len: usize) -> Option<Arc<[PrimPath]>> {
        if len <= SMALL_MAX {
            self.small.get_mut(len).and_then(Option::take)
        } else {
            self.large.take_if(|b| b.len() == len)
        }
    }

    /// Keeps `buffer` unless one is kept in its place already; returns the
    /// one not kept.
    pub(crate) fn put(&mut self, buffer: Arc<[PrimPath]>) -> Option<Arc<[PrimPath]>> {
        let len = buffer.len();
        let slot = if len <= SMALL_MAX {
            if self.small.is_empty() {
                self.small.resize(SMALL_MAX + 1, None);
            }
            &mut self.small[len]
        } else {
            &mut self.large
        };
        match slot {
            Some(_) => Some(buffer),
            None => {
                *slot = Some(buffer);
                None
            }
        }
    }

    /// The lengths kept, shortest first.
    #[cfg(test)]
    pub(crate) fn lengths(&self) -> Vec<usize> {
        self.small.iter().chain(std::iter::once(&self.large)).flatten().map(|b| b.len()).collect()
    }
}

/// Which lengths [`Spares`] holds a buffer of: written only under the
/// table's lock (so it matches the buffers there), read without it as a
/// hint (a list of a length not kept, the common case, costs a load).
pub(crate) struct SpareHint {
    /// Bit `len` set: a buffer of `len` paths is kept (`len` <= [`SMALL_MAX`]).
    small: [AtomicU64; 2],
    /// The length of the kept longer buffer, 0 when there is none.
    large: AtomicUsize,
}

impl SpareHint {
    pub(crate) const fn new() -> SpareHint {
        SpareHint { small: [AtomicU64::new(0), AtomicU64::new(0)], large: AtomicUsize::new(0) }
    }

    /// Whether a buffer of `len` paths is kept (as of now).
    #[inline(always)]
    pub(crate) fn has(&self, len: usize) -> bool {
        if len <= SMALL_MAX {
            self.small[len / 64].load(Ordering::Relaxed) & (1 << (len % 64)) != 0
        } else {
            self.large.load(Ordering::Relaxed) == len
        }
    }

    /// Whether a buffer of `len` paths would be kept (as of now): none of
    /// its length is, or, past [`SMALL_MAX`], no longer one at all (the
    /// rule [`Spares::put`] applies).
    #[inline(always)]
    pub(crate) fn room_for(&self, len: usize) -> bool {
        if len <= SMALL_MAX { !self.has(len) } else { self.large.load(Ordering::Relaxed) == 0 }
    }

    /// Records that a buffer of `len` paths is kept or not. Only under the
    /// table's lock, so a load and a store suffice (no atomic
    /// read-modify-write).
    pub(crate) fn set(&self, len: usize, kept: bool) {
        if len <= SMALL_MAX {
            let word = &self.small[len / 64];
            let bit = 1 << (len % 64);
            let was = word.load(Ordering::Relaxed);
            word.store(if kept { was | bit } else { was & !bit }, Ordering::Relaxed);
        } else {
            self.large.store(if kept { len } else { 0 }, Ordering::Relaxed);
        }
    }

    /// Forgets every kept length (with the buffers dropped under the lock).
    #[cfg(test)]
    pub(crate) fn clear(&self) {
        for w in &self.small {
            w.store(0, Ordering::Relaxed);
        }
        self.large.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(len: usize) -> Arc<[PrimPath]> {
        vec![PrimPath::from_raw(1).unwrap(); len].into()
    }

    /// One buffer per length up to SMALL_MAX and one longer one; the hint
    /// follows what is kept.
    #[test]
    fn one_buffer_is_kept_per_short_length_and_one_longer() {
        let mut s = Spares::default();
        let h = SpareHint::new();
        for len in [9, 63, 64, 65, SMALL_MAX, 5000] {
            assert!(!h.has(len));
            assert!(s.put(buffer(len)).is_none(), "{len}: kept");
            h.set(len, true);
            assert!(h.has(len));
        }
        assert_eq!(s.lengths(), [9, 63, 64, 65, SMALL_MAX, 5000]);
        assert!(s.put(buffer(64)).is_some(), "a second of one length is refused");
        assert!(s.put(buffer(SMALL_MAX + 1)).is_some(), "one longer buffer at most");
        assert!(!h.room_for(64) && !h.room_for(SMALL_MAX + 1) && h.room_for(10), "room_for says what put keeps");
        assert!(s.take(10).is_none());
        assert_eq!(s.take(64).map(|b| b.len()), Some(64));
        h.set(64, false);
        assert!(!h.has(64) && h.has(63) && h.has(65));
        assert!(s.take(64).is_none(), "taken once");
        assert!(s.take(4999).is_none(), "the longer one only by its length");
        assert_eq!(s.take(5000).map(|b| b.len()), Some(5000));
        h.set(5000, false);
        assert!(!h.has(5000));
        h.clear();
        assert!(!h.has(9));
    }
}
