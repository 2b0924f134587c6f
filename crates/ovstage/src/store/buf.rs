//! Storage buffers: 8-byte aligned bytes (aligned for every DLPack scalar
//! up to 64 bits), and a per-column pool of freed buffers so steady-state
//! write loops do not go back to the allocator.

use std::sync::Mutex;

/// An immutable-once-published byte buffer.
#[derive(Debug, Default)]
pub(crate) struct Buf {
    words: Vec<u64>,
    len: usize,
}

impl Buf {
    /// A zero-filled buffer of `len` bytes. Large zeroed allocations come
    /// from the OS already zeroed, so this costs no pass over the memory.
    pub(crate) fn zeroed(len: usize) -> Buf {
        Buf { words: vec![0; len.div_ceil(8)], len }
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
    pub(crate) fn take(&self, len: usize) -> Buf {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pos) = free.iter().rposition(|b| b.capacity() >= len && b.capacity() <= len.saturating_mul(2) + 64)
        {
            let mut buf = free.remove(pos);
            buf.len = len;
            return buf;
        }
        drop(free);
        Buf::zeroed(len)
    }

    /// Keeps `buf` for reuse when there is room; the oldest buffers make
    /// room for it when the byte limit would be exceeded.
    pub(crate) fn put(&self, buf: Buf) {
        if buf.capacity() == 0 {
            return;
        }
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let mut bytes: usize = free.iter().map(Buf::capacity).sum::<usize>() + buf.capacity();
        while !free.is_empty() && (free.len() >= POOL_LIMIT || bytes > self.max_bytes) {
            bytes -= free.remove(0).capacity();
        }
        free.push(buf);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).len()
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
