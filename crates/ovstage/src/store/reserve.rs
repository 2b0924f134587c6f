//! Large buffers freed anywhere in the process, kept for a moment for the
//! next write that needs one.
//!
//! A fresh multi-megabyte allocation costs the kernel a page fault per
//! 4 KiB on first touch (about 1.5 us a page on a VM: 12 MB of values take
//! 4-5 ms to fault in and 0.6 ms to copy), and the allocator gives such
//! buffers back to the kernel when they are freed. The per-column pool
//! covers a write loop inside one instance; this reserve covers a buffer
//! freed by one column, or by a destroyed instance, and needed by another
//! (a stage torn down and built again, as an episode reset does).
//!
//! Bounded twice: at most [`limit`] bytes (`OVSTAGE_RESERVE_MB`, default
//! 256, 0 keeps nothing), and nothing kept longer than [`KEEP_FOR`]: a
//! thread of ours frees what nobody took and exits once the reserve is
//! empty, so an idle process holds nothing for long.

use super::buf::{Buf, Words};
use ovstage_types::sync::lock;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Buffers smaller than this are left to the allocator (they come from its
/// heap, already mapped).
pub(crate) const MIN_BYTES: usize = 1 << 20;

/// How long a freed buffer is kept.
pub(crate) const KEEP_FOR: Duration = Duration::from_secs(1);

/// Default for `OVSTAGE_RESERVE_MB`.
const DEFAULT_LIMIT_MB: usize = 256;

/// Freed buffers, oldest first.
#[derive(Default)]
pub(crate) struct Reserve {
    kept: Vec<Kept>,
    bytes: usize,
}

struct Kept {
    words: Words,
    freed: Instant,
}

impl Reserve {
    /// An empty reserve.
    pub(crate) const fn new() -> Reserve {
        Reserve { kept: Vec::new(), bytes: 0 }
    }

    /// Keeps a freed buffer's `words` (freed at `now`) unless they are
    /// too small or alone over `limit`; the oldest kept buffers make room.
    /// Returns what is not kept, for the caller to free outside any lock.
    pub(crate) fn keep(&mut self, words: Words, now: Instant, limit: usize) -> Vec<Words> {
        let size = words.bytes();
        if size < MIN_BYTES || size > limit {
            return vec![words];
        }
        let mut out = Vec::new();
        while self.bytes + size > limit {
            out.push(self.pop_oldest());
        }
        self.bytes += size;
        self.kept.push(Kept { words, freed: now });
        out
    }

    /// A kept buffer of `len` bytes (contents unspecified) that wastes at
    /// most half of itself; the most recently freed is preferred.
    pub(crate) fn take(&mut self, len: usize) -> Option<Buf> {
        let pos = self.kept.iter().rposition(|k| k.words.fits(len))?;
        let kept = self.kept.remove(pos);
        self.bytes -= kept.words.bytes();
        Some(Buf::reusing(kept.words, len))
    }

    /// Removes the buffers freed before `now - KEEP_FOR`; returns them and
    /// when the next one expires.
    pub(crate) fn expire(&mut self, now: Instant) -> (Vec<Words>, Option<Instant>) {
        let mut out = Vec::new();
        while self.kept.first().is_some_and(|k| now.saturating_duration_since(k.freed) >= KEEP_FOR) {
            out.push(self.pop_oldest());
        }
        (out, self.kept.first().map(|k| k.freed + KEEP_FOR))
    }

    fn pop_oldest(&mut self) -> Words {
        let kept = self.kept.remove(0);
        self.bytes -= kept.words.bytes();
        kept.words
    }

    /// Bytes kept.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The process's reserve and whether its reaper thread runs.
struct Shared {
    reserve: Mutex<(Reserve, Reaper)>,
    wake: Condvar,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Reaper {
    Absent,
    /// In the process with this id (a child forked meanwhile has no
    /// reaper: it starts its own).
    Running(u32),
}

static SHARED: Shared = Shared { reserve: Mutex::new((Reserve::new(), Reaper::Absent)), wake: Condvar::new() };

/// The most bytes kept: `OVSTAGE_RESERVE_MB` megabytes, read once.
pub(crate) fn limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        let mb = std::env::var("OVSTAGE_RESERVE_MB").ok().and_then(|v| v.trim().parse::<usize>().ok());
        mb.unwrap_or(DEFAULT_LIMIT_MB).saturating_mul(1 << 20)
    })
}

/// Offers a freed buffer's words to the process's reserve (too small, or
/// a reserve of size 0: freed at once).
pub(crate) fn offer(words: Words) {
    let limit = limit();
    if words.bytes() < MIN_BYTES || words.bytes() > limit {
        return;
    }
    let spawn = {
        let mut guard = lock(&SHARED.reserve);
        let (reserve, reaper) = &mut *guard;
        let evicted = reserve.keep(words, Instant::now(), limit);
        let pid = std::process::id();
        let spawn = *reaper != Reaper::Running(pid);
        if spawn {
            *reaper = Reaper::Running(pid);
        }
        drop(guard);
        drop(evicted);
        spawn
    };
    if spawn {
        let started = std::thread::Builder::new().name("ovstage-reserve".into()).spawn(reap);
        if started.is_err() {
            // No thread to free what nobody takes: keep nothing.
            let mut guard = lock(&SHARED.reserve);
            let (reserve, reaper) = &mut *guard;
            *reaper = Reaper::Absent;
            let all = std::mem::take(reserve);
            drop(guard);
            drop(all);
        }
    }
}

/// A buffer of `len` bytes from the process's reserve, if one fits.
pub(crate) fn take(len: usize) -> Option<Buf> {
    if len < MIN_BYTES / 2 {
        return None;
    }
    lock(&SHARED.reserve).0.take(len)
}

/// The reaper: frees each buffer nobody took once it has been kept
/// [`KEEP_FOR`], and exits when nothing is left.
fn reap() {
    let mut guard = lock(&SHARED.reserve);
    loop {
        let (expired, next) = guard.0.expire(Instant::now());
        if !expired.is_empty() {
            drop(guard);
            drop(expired);
            guard = lock(&SHARED.reserve);
            continue;
        }
        let Some(next) = next else {
            guard.1 = Reaper::Absent;
            return;
        };
        let wait = next.saturating_duration_since(Instant::now());
        guard = SHARED.wake.wait_timeout(guard, wait).map(|(g, _)| g).unwrap_or_else(|e| e.into_inner().0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(len: usize, byte: u8) -> Words {
        Words::filled(len, byte)
    }

    /// Whether the process's reserve keeps a buffer of exactly `len` bytes.
    fn holds(len: usize) -> bool {
        lock(&SHARED.reserve).0.kept.iter().any(|k| k.words.bytes() == len)
    }

    #[test]
    fn a_kept_buffer_is_handed_to_the_next_writer_that_fits() {
        let mut r = Reserve::new();
        let now = Instant::now();
        let big = filled(4 << 20, 7);
        let at = big.as_ptr();
        assert!(r.keep(big, now, 64 << 20).is_empty());
        assert_eq!(r.bytes(), 4 << 20);
        // Too large, or so small it would waste more than half: not handed out.
        assert!(r.take((4 << 20) + 8).is_none());
        assert!(r.take(1 << 20).is_none());
        let again = r.take(3 << 20).expect("fits");
        assert_eq!(again.bytes().as_ptr(), at, "the same memory, already mapped");
        assert_eq!(again.len(), 3 << 20);
        assert_eq!(r.bytes(), 0);
        assert!(r.take(3 << 20).is_none(), "handed out once");
    }

    #[test]
    fn small_buffers_and_buffers_over_the_limit_are_not_kept() {
        let mut r = Reserve::new();
        let now = Instant::now();
        assert_eq!(r.keep(filled(MIN_BYTES - 8, 1), now, 64 << 20).len(), 1);
        assert_eq!(r.keep(filled(8 << 20, 1), now, 4 << 20).len(), 1);
        assert_eq!(r.keep(filled(2 << 20, 1), now, 0).len(), 1, "a limit of 0 keeps nothing");
        assert_eq!(r.bytes(), 0);
    }

    #[test]
    fn the_oldest_buffers_make_room_and_expire_first() {
        let mut r = Reserve::new();
        let t0 = Instant::now();
        assert!(r.keep(filled(2 << 20, 1), t0, 5 << 20).is_empty());
        assert!(r.keep(filled(2 << 20, 2), t0 + Duration::from_millis(10), 5 << 20).is_empty());
        // A third does not fit under 5 MiB: the oldest goes.
        let out = r.keep(filled(2 << 20, 3), t0 + Duration::from_millis(20), 5 << 20);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].first_byte(), 1);
        assert_eq!(r.bytes(), 4 << 20);
        // Nothing has been kept for KEEP_FOR yet.
        let (gone, next) = r.expire(t0 + Duration::from_millis(30));
        assert!(gone.is_empty());
        assert_eq!(next, Some(t0 + Duration::from_millis(10) + KEEP_FOR));
        // The second one has; the third not yet.
        let (gone, next) = r.expire(t0 + Duration::from_millis(15) + KEEP_FOR);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].first_byte(), 2);
        assert_eq!(next, Some(t0 + Duration::from_millis(20) + KEEP_FOR));
        let (gone, next) = r.expire(t0 + Duration::from_secs(10));
        assert_eq!(gone.len(), 1);
        assert_eq!(next, None);
        assert_eq!(r.bytes(), 0);
    }

    /// Through the process's reserve: a dropped buffer serves the next
    /// pool that misses, and what nobody takes is freed after
    /// [`KEEP_FOR`]. (37 MiB: no other test of this crate asks for a
    /// buffer of about that size, so none takes this one meanwhile.)
    #[test]
    fn a_dropped_buffer_serves_another_pool_then_expires() {
        const LEN: usize = 37 << 20;
        let first = Buf::try_gather([&[5u8; 64][..], &vec![9u8; LEN - 64][..]], LEN).expect("37 MiB");
        let at = first.bytes().as_ptr();
        drop(first);
        assert!(holds(LEN), "kept when dropped");
        let pool = super::super::buf::BufPool::with_limit(1 << 20);
        let again = pool.try_gather([&[1u8; 8][..], &vec![2u8; LEN - 8][..]], LEN).expect("37 MiB");
        assert!(!holds(LEN), "taken by the pool that missed");
        assert_eq!(again.bytes().as_ptr(), at, "the dropped buffer's memory, reused");
        assert_eq!(&again.bytes()[..9], &[1, 1, 1, 1, 1, 1, 1, 1, 2], "holding only the new bytes");
        drop(again);
        assert!(holds(LEN), "kept again");
        std::thread::sleep(KEEP_FOR + Duration::from_millis(500));
        assert!(!holds(LEN), "freed once kept for KEEP_FOR");
    }

    #[test]
    fn the_most_recently_freed_fitting_buffer_is_taken() {
        let mut r = Reserve::new();
        let now = Instant::now();
        assert!(r.keep(filled(2 << 20, 1), now, 64 << 20).is_empty());
        assert!(r.keep(filled(2 << 20, 2), now, 64 << 20).is_empty());
        assert_eq!(r.take(2 << 20).expect("fits").bytes()[0], 2);
        assert_eq!(r.take(2 << 20).expect("fits").bytes()[0], 1);
    }
}
