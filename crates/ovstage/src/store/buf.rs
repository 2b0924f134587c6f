//! Storage buffers: 8-byte aligned bytes (aligned for every DLPack scalar
//! up to 64 bits), and a per-column pool of freed buffers so steady-state
//! write loops do not go back to the allocator.
//!
//! Buffers whose size a client chose (a write's payload, a map session's
//! group) are allocated with [`BufPool::try_take`]: a failed allocation is
//! an `OUT_OF_MEMORY` error of the op, never an abort of the process.

use super::{reserve, spread};
use ovstage_types::sync::lock;
use std::sync::Mutex;

/// A buffer of the requested size could not be allocated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct AllocFailed {
    /// The bytes requested.
    pub(crate) bytes: usize,
}

impl std::fmt::Display for AllocFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not allocate {} bytes", self.bytes)
    }
}

/// An immutable-once-published byte buffer. A large one goes to the
/// process's [`reserve`] when dropped.
#[derive(Debug, Default)]
pub(crate) struct Buf {
    words: Vec<u64>,
    len: usize,
}

impl Drop for Buf {
    fn drop(&mut self) {
        if self.words.len() * 8 >= reserve::MIN_BYTES {
            reserve::offer(Words(std::mem::take(&mut self.words)));
        }
    }
}

/// The memory of a freed buffer, as the reserve keeps it (dropping it
/// frees it).
pub(crate) struct Words(Vec<u64>);

impl Words {
    /// Bytes it holds.
    pub(crate) fn bytes(&self) -> usize {
        self.0.len() * 8
    }

    /// Whether a buffer of `len` bytes fits without wasting more than half.
    pub(crate) fn fits(&self, len: usize) -> bool {
        fits(self.bytes(), len)
    }

    #[cfg(test)]
    pub(crate) fn filled(len: usize, byte: u8) -> Words {
        Words(vec![u64::from_ne_bytes([byte; 8]); len.div_ceil(8)])
    }

    #[cfg(test)]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.0.as_ptr().cast()
    }

    #[cfg(test)]
    pub(crate) fn first_byte(&self) -> u8 {
        self.0[0].to_ne_bytes()[0]
    }
}

/// Whether memory of `held` bytes serves a buffer of `len` bytes without
/// wasting more than half of it (the pool's and the reserve's rule).
fn fits(held: usize, len: usize) -> bool {
    held >= len && held <= len.saturating_mul(2).saturating_add(64)
}

/// Sizes from which a zeroed allocation costs no pass over the memory
/// (glibc maps them fresh and skips the fill), so copying into one with
/// `memcpy` beats the word-by-word gather.
const FRESH_PAGES: usize = 256 << 10;

/// Pieces shorter than this (judged by the first) are gathered into a
/// zeroed buffer instead of word by word.
const SMALL_PIECE: usize = 32;

impl Buf {
    /// A zero-filled buffer of `len` bytes. Large zeroed allocations come
    /// from the OS already zeroed, so this costs no pass over the memory.
    pub(crate) fn zeroed(len: usize) -> Buf {
        Buf { words: vec![0; len.div_ceil(8)], len }
    }

    /// As [`Buf::zeroed`], but a failed allocation (or a size no allocation
    /// can have) is an error instead of an abort.
    pub(crate) fn try_zeroed(len: usize) -> Result<Buf, AllocFailed> {
        let words =
            bytemuck::allocation::try_zeroed_vec::<u64>(len.div_ceil(8)).map_err(|()| AllocFailed { bytes: len })?;
        Ok(Buf { words, len })
    }

    /// `pieces` back to back, `len` bytes in all, written once. Below
    /// [`FRESH_PAGES`] the heap's zero fill would be a pass over the memory
    /// more, so the words are appended (8-aligned pieces by `memcpy`, others
    /// word by word); from it, the zeroed allocation is fresh pages, filled
    /// by `memcpy` whatever the pieces' alignment. Pieces shorter than
    /// [`SMALL_PIECE`] (judged by the first: a pick of scalar cells) go into
    /// a zeroed buffer too, as a word's carry per piece costs more than the
    /// fill. A failed allocation is an error.
    pub(crate) fn try_gather<'a, I>(pieces: I, len: usize) -> Result<Buf, AllocFailed>
    where
        I: IntoIterator<Item = &'a [u8]>,
        I::IntoIter: Clone + Send,
    {
        let pieces = pieces.into_iter();
        let small = || pieces.clone().next().is_some_and(|p| p.len() < SMALL_PIECE);
        if len >= FRESH_PAGES || small() {
            let mut buf = Buf::try_zeroed(len)?;
            spread::write_pieces(buf.bytes_mut(), pieces);
            return Ok(buf);
        }
        let mut words = Vec::new();
        words.try_reserve_exact(len.div_ceil(8)).map_err(|_| AllocFailed { bytes: len })?;
        // Bytes of a word begun by the previous piece.
        let mut carry = [0u8; 8];
        let mut held = 0;
        for mut piece in pieces {
            if held > 0 {
                let n = (8 - held).min(piece.len());
                carry[held..held + n].copy_from_slice(&piece[..n]);
                held += n;
                piece = &piece[n..];
                if held < 8 {
                    continue;
                }
                words.push(u64::from_ne_bytes(carry));
            }
            let (body, tail) = piece.split_at(piece.len() & !7);
            match bytemuck::try_cast_slice::<u8, u64>(body) {
                // The usual case (client memory is 8-aligned): a memcpy.
                Ok(aligned) => words.extend_from_slice(aligned),
                Err(_) => {
                    words.extend(body.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes"))))
                }
            }
            carry[..tail.len()].copy_from_slice(tail);
            held = tail.len();
        }
        if held > 0 {
            carry[held..].fill(0);
            words.push(u64::from_ne_bytes(carry));
        }
        debug_assert_eq!(words.len(), len.div_ceil(8), "the pieces are len bytes");
        Ok(Buf { words, len })
    }

    /// A buffer of `len` bytes (contents unspecified) in reserved memory
    /// that [`Words::fits`] it.
    pub(crate) fn reusing(words: Words, len: usize) -> Buf {
        debug_assert!(words.fits(len));
        Buf { words: words.0, len }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }

    /// Resizes to `len` bytes; new bytes are zero.
    pub(crate) fn resize(&mut self, len: usize) {
        let words = len.div_ceil(8);
        if words > self.words.len() {
            self.words.resize(words, 0);
        }
        if len > self.len {
            // Bytes past the old end inside the last old word may hold data
            // from an earlier use; clear them.
            let old = self.len;
            self.len = len;
            self.bytes_mut()[old..].fill(0);
        } else {
            self.len = len;
        }
    }

    fn capacity(&self) -> usize {
        self.words.len() * 8
    }
}

/// Freed buffers of one column, reused by later writes: a reused buffer's
/// pages are already mapped (a fresh multi-megabyte allocation costs a page
/// fault per 4 KiB on first touch) and, when recently freed, still cached.
pub(crate) struct BufPool {
    free: Mutex<Vec<Buf>>,
    /// Most bytes kept (one buffer is kept whatever its size).
    max_bytes: usize,
}

/// Buffers kept per column; more are dropped.
const POOL_LIMIT: usize = 8;

impl BufPool {
    /// A pool keeping at most [`POOL_LIMIT`] buffers and `max_bytes` bytes
    /// (or one buffer of any size).
    pub(crate) fn with_limit(max_bytes: usize) -> BufPool {
        BufPool { free: Mutex::default(), max_bytes }
    }

    /// A buffer of `len` bytes whose contents are unspecified (the caller
    /// overwrites all of it). The most recently freed fitting buffer is
    /// preferred: it is the likeliest to be in cache.
    ///
    /// For sizes derived from what the store already holds; sizes a client
    /// chose go through [`BufPool::try_take`].
    pub(crate) fn take(&self, len: usize) -> Buf {
        self.reuse(len).unwrap_or_else(|| Buf::zeroed(len))
    }

    /// As [`BufPool::take`], but a failed allocation is an error.
    pub(crate) fn try_take(&self, len: usize) -> Result<Buf, AllocFailed> {
        match self.reuse(len) {
            Some(buf) => Ok(buf),
            None => Buf::try_zeroed(len),
        }
    }

    /// A buffer holding a copy of `src`: a kept one when one fits, else a
    /// new one written once.
    pub(crate) fn try_copy(&self, src: &[u8]) -> Result<Buf, AllocFailed> {
        self.try_gather([src], src.len())
    }

    /// A buffer holding `pieces` back to back (`len` bytes in all): a kept
    /// one when one fits, else a new one written once.
    pub(crate) fn try_gather<'a, I>(&self, pieces: I, len: usize) -> Result<Buf, AllocFailed>
    where
        I: IntoIterator<Item = &'a [u8]>,
        I::IntoIter: Clone + Send,
    {
        let Some(mut buf) = self.reuse(len) else {
            return Buf::try_gather(pieces, len);
        };
        spread::write_pieces(buf.bytes_mut(), pieces.into_iter());
        Ok(buf)
    }

    /// A kept buffer that fits `len` bytes without wasting more than half:
    /// this column's, else one freed elsewhere in the process.
    fn reuse(&self, len: usize) -> Option<Buf> {
        let mut free = lock(&self.free);
        let Some(pos) = free.iter().rposition(|b| fits(b.capacity(), len)) else {
            drop(free);
            return reserve::take(len);
        };
        let mut buf = free.remove(pos);
        buf.len = len;
        Some(buf)
    }

    /// Keeps `buf` for reuse when there is room; the oldest buffers make
    /// room for it when the byte limit would be exceeded.
    pub(crate) fn put(&self, buf: Buf) {
        if buf.capacity() == 0 {
            return;
        }
        let mut free = lock(&self.free);
        let mut bytes: usize = free.iter().map(Buf::capacity).sum::<usize>() + buf.capacity();
        while !free.is_empty() && (free.len() >= POOL_LIMIT || bytes > self.max_bytes) {
            bytes -= free.remove(0).capacity();
        }
        free.push(buf);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.free).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resize_clears_new_bytes() {
        let mut b = Buf::zeroed(5);
        b.bytes_mut().copy_from_slice(&[1, 2, 3, 4, 5]);
        b.resize(3);
        b.resize(8);
        assert_eq!(b.bytes(), &[1, 2, 3, 0, 0, 0, 0, 0]);
        assert_eq!(b.bytes().as_ptr() as usize % 8, 0);
    }

    #[test]
    fn an_impossible_allocation_is_an_error_not_an_abort() {
        let pool = BufPool::with_limit(1 << 20);
        // More than any address space holds: the layout itself is refused.
        assert_eq!(Buf::try_zeroed(usize::MAX).err(), Some(AllocFailed { bytes: usize::MAX }));
        // Addressable but far beyond this machine (64 TiB): the allocator
        // refuses it (on Linux, as an overcommit of more than RAM and swap).
        let huge = 1usize << 46;
        let err = pool.try_take(huge).expect_err("64 TiB");
        assert_eq!(err.bytes, huge);
        assert_eq!(err.to_string(), "could not allocate 70368744177664 bytes");
        assert_eq!(pool.try_take(24).expect("small").len(), 24);
    }

    #[test]
    fn copies_hold_the_bytes_whatever_the_length() {
        let pool = BufPool::with_limit(1 << 20);
        for n in [0usize, 1, 7, 8, 9, 4000, 4003] {
            let src: Vec<u8> = (0..n).map(|i| (i * 7 + 1) as u8).collect();
            let b = Buf::try_gather([&src[..]], n).expect("small");
            assert_eq!(b.bytes(), &src[..]);
            assert_eq!(b.bytes().as_ptr() as usize % 8, 0);
            // Reused buffers hold exactly the new bytes.
            pool.put(b);
            let again = pool.try_copy(&src).expect("small");
            assert_eq!(again.bytes(), &src[..]);
        }
    }

    #[test]
    fn gathers_hold_the_pieces_whatever_their_lengths() {
        let pool = BufPool::with_limit(1 << 20);
        // 8-aligned backing, so pieces cut at multiples of 8 take the memcpy
        // path and the others the word-by-word one.
        let backing: Vec<u64> = (0..9u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        let all: &[u8] = bytemuck::cast_slice(&backing);
        // Pieces that start and end at every offset within a word, from an
        // aligned source and from misaligned ones.
        for (base, cuts) in [0, 1, 3].into_iter().flat_map(|base| {
            [
                vec![],
                vec![0],
                vec![3],
                vec![8],
                vec![1, 2, 3],
                vec![5, 13, 13, 21, 40, 63],
                vec![7, 15, 16, 17],
                vec![16, 24],
                // Pieces of the common cell sizes (4, 8, 12 and 16 bytes).
                vec![4, 12, 24, 40, 44, 52],
            ]
            .into_iter()
            .map(move |c| (base, c))
        }) {
            let src = &all[base..base + 64];
            let mut pieces = Vec::new();
            let mut at = 0;
            for c in cuts.iter().copied().chain([src.len()]) {
                pieces.push(&src[at..c]);
                at = c;
            }
            let fresh = Buf::try_gather(pieces.iter().copied(), src.len()).expect("small");
            assert_eq!(fresh.bytes(), src, "base {base}, cuts {cuts:?}");
            pool.put(fresh);
            let reused = pool.try_gather(pieces.iter().copied(), src.len()).expect("small");
            assert_eq!(reused.bytes(), src, "base {base}, cuts {cuts:?}, reused");
        }
        assert_eq!(Buf::try_gather([&all[..5], &all[5..11]], 11).expect("small").bytes(), &all[..11]);
    }

    #[test]
    fn large_gathers_hold_the_pieces_too() {
        // Past FRESH_PAGES the gather copies into a zeroed allocation.
        let pieces: Vec<Vec<u8>> =
            (0..7).map(|i| (0..(FRESH_PAGES / 3 + i * 5)).map(|j| (j * 13 + i) as u8).collect()).collect();
        let len = pieces.iter().map(Vec::len).sum::<usize>();
        assert!(len >= FRESH_PAGES);
        let b = Buf::try_gather(pieces.iter().map(Vec::as_slice), len).expect("a few MB");
        assert_eq!(b.bytes(), pieces.concat());
    }

    #[test]
    fn pool_reuses() {
        let pool = BufPool::with_limit(1 << 20);
        let b = pool.take(100);
        let ptr = b.bytes().as_ptr();
        pool.put(b);
        let again = pool.take(96);
        assert_eq!(again.bytes().as_ptr(), ptr);
        assert_eq!(again.len(), 96);
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn pool_keeps_the_newest_within_its_limit() {
        let pool = BufPool::with_limit(256);
        for _ in 0..3 {
            pool.put(Buf::zeroed(100));
        }
        assert_eq!(pool.len(), 2, "a third buffer of 100 bytes would exceed 256");
        // One buffer is kept whatever its size, replacing the others.
        pool.put(Buf::zeroed(1000));
        assert_eq!(pool.len(), 1);
        assert_eq!(pool.take(1000).len(), 1000);
        assert_eq!(pool.len(), 0);
        for _ in 0..POOL_LIMIT + 3 {
            pool.put(Buf::zeroed(8));
        }
        assert_eq!(pool.len(), POOL_LIMIT);
    }
}
