//! Large copies spread over several cores.
//!
//! Filling a fresh multi-megabyte buffer costs a page fault per 4 KiB, far
//! more than the copy itself: on this project's VMs about 0.35 ms a MiB,
//! and about 2.7 ms a MiB when the host has taken the pages back (a
//! 205 MB write then takes over half a second on one core). Faults taken
//! on different cores are served in parallel, so a copy of at least
//! [`SPREAD_BYTES`] is cut into contiguous parts of the destination, each
//! filled by its own scoped thread (the caller fills the first). Spawning
//! a thread costs tens of microseconds, well under a millisecond's copy.
//!
//! A thread that cannot be spawned leaves its part to the caller; nothing
//! here spins or outlives the copy.

use ovstage_sched::cores;
use ovstage_types::sync::lock;
use std::sync::Mutex;

/// Copies from this size are spread.
pub(crate) const SPREAD_BYTES: usize = 8 << 20;

/// The least each part holds.
const PART_BYTES: usize = 4 << 20;

/// The most parts (threads, the caller's included) a copy is cut into.
const MAX_PARTS: usize = 8;

/// How many parts a copy of `len` bytes is cut into on `cores()` cores
/// (asked only for a copy large enough to spread).
fn parts(len: usize, cores: impl FnOnce() -> usize) -> usize {
    if len < SPREAD_BYTES {
        return 1;
    }
    (len / PART_BYTES).clamp(1, MAX_PARTS).min(cores().max(1))
}

/// Writes `pieces` back to back over `dst`, which they fill exactly;
/// large copies are spread over cores (see the module's documentation).
pub(crate) fn write_pieces<'a, I>(dst: &mut [u8], pieces: I)
where
    I: Iterator<Item = &'a [u8]> + Clone + Send,
{
    write_in_parts(dst, pieces, parts(dst.len(), cores));
}

/// [`write_pieces`] cut into `n` parts (the copy is serial for `n` <= 1).
fn write_in_parts<'a, I>(dst: &mut [u8], pieces: I, n: usize)
where
    I: Iterator<Item = &'a [u8]> + Clone + Send,
{
    if n <= 1 || dst.len() < n {
        write_serial(dst, pieces, 0);
        return;
    }
    // Each part starts at a byte of the destination: the piece holding it
    // is found by a pass over the piece lengths (no bytes are read), and
    // each thread walks its own clone of the iterator to that piece.
    let starts = part_starts(pieces.clone(), dst.len(), n);
    let mut jobs = Vec::with_capacity(n);
    let mut rest = dst;
    // Back to front: each part is the tail left past its start.
    for start in starts.iter().rev() {
        let (head, part) = std::mem::take(&mut rest).split_at_mut(start.at);
        rest = head;
        jobs.push(Mutex::new(Some(Part { dst: part, pieces: pieces.clone().skip(start.piece), skip: start.skip })));
    }
    std::thread::scope(|scope| {
        // `jobs` runs back to front: the caller takes the first part.
        let (first, others) = jobs.split_last().expect("n > 1 parts");
        for job in others {
            // A part whose thread cannot be started is written here.
            if std::thread::Builder::new().name("ovstage-copy".into()).spawn_scoped(scope, || run(job)).is_err() {
                run(job);
            }
        }
        run(first);
    });
}

/// One part of a spread copy.
struct Part<'d, I> {
    dst: &'d mut [u8],
    pieces: I,
    /// Bytes of the first piece that precede the part.
    skip: usize,
}

/// Writes a part, unless it was written already.
fn run<'a, I: Iterator<Item = &'a [u8]>>(job: &Mutex<Option<Part<'_, I>>>) {
    if let Some(p) = lock(job).take() {
        write_serial(p.dst, p.pieces, p.skip);
    }
}

/// Where a part of a spread copy starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Start {
    /// Its first byte in the destination.
    at: usize,
    /// The piece that byte comes from.
    piece: usize,
    /// That byte's offset in the piece.
    skip: usize,
}

/// The starts of `n` equal parts of a `len`-byte destination (the last
/// takes the remainder).
fn part_starts<'a>(pieces: impl Iterator<Item = &'a [u8]>, len: usize, n: usize) -> Vec<Start> {
    let step = len / n;
    let mut starts = Vec::with_capacity(n);
    let mut at = 0;
    for (i, piece) in pieces.enumerate() {
        // Every part that starts inside this piece (an empty piece holds
        // no byte, so no part starts in it).
        while starts.len() < n && starts.len() * step < at + piece.len() {
            let part_at = starts.len() * step;
            starts.push(Start { at: part_at, piece: i, skip: part_at - at });
        }
        at += piece.len();
        if starts.len() == n {
            break;
        }
    }
    debug_assert_eq!(starts.len(), n, "the pieces fill the destination");
    starts
}

/// Writes `pieces` (the first from byte `skip` on) back to back over
/// `dst`, stopping once it is full.
fn write_serial<'a>(dst: &mut [u8], pieces: impl Iterator<Item = &'a [u8]>, mut skip: usize) {
    let mut at = 0;
    for piece in pieces {
        let piece = &piece[std::mem::take(&mut skip)..];
        let n = piece.len().min(dst.len() - at);
        copy_piece(&mut dst[at..at + n], &piece[..n]);
        at += n;
        if at == dst.len() {
            break;
        }
    }
    debug_assert_eq!(at, dst.len(), "the pieces fill the buffer");
}

/// `dst.copy_from_slice(src)`, with the common cell sizes as moves of a
/// known size: a gather of picked scalar cells is a piece of 4 to 16
/// bytes each, for which a call to `memcpy` costs more than the copy.
#[inline]
fn copy_piece(dst: &mut [u8], src: &[u8]) {
    match src.len() {
        4 => dst[..4].copy_from_slice(&src[..4]),
        8 => dst[..8].copy_from_slice(&src[..8]),
        12 => dst[..12].copy_from_slice(&src[..12]),
        16 => dst[..16].copy_from_slice(&src[..16]),
        _ => dst.copy_from_slice(src),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bytes` cut into pieces at `cuts` (offsets, ascending; repeats
    /// make empty pieces).
    fn pieces_of<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let mut at = 0;
        for &c in cuts.iter().chain([&bytes.len()]) {
            out.push(&bytes[at..c]);
            at = c;
        }
        out
    }

    #[test]
    fn every_cut_of_the_pieces_gives_the_same_bytes() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 31 + 7) as u8).collect();
        let cut_sets: [&[usize]; 7] = [
            &[],
            &[0, 0, 500, 500],
            &[1, 2, 3, 999],
            &[250, 500, 750],
            &[333, 334, 666],
            &[100, 100, 100, 900],
            &[10, 20, 30, 40, 50, 60, 70, 80, 90, 991],
        ];
        for cuts in cut_sets {
            let pieces = pieces_of(&bytes, cuts);
            for n in [1, 2, 3, 4, 5, 7, 8] {
                let mut dst = vec![0u8; bytes.len()];
                write_in_parts(&mut dst, pieces.iter().copied(), n);
                assert_eq!(dst, bytes, "cuts {cuts:?}, {n} parts");
            }
        }
    }

    #[test]
    fn parts_start_where_the_destination_is_cut() {
        let bytes = [0u8; 10];
        // Parts of 3 bytes (the last 4) over pieces of 4, 0, 6 bytes.
        let pieces = pieces_of(&bytes, &[4, 4]);
        let start = |at, piece, skip| Start { at, piece, skip };
        assert_eq!(part_starts(pieces.into_iter(), 10, 3), vec![start(0, 0, 0), start(3, 0, 3), start(6, 2, 2)]);
        // A part starting exactly where a piece does starts at its byte 0,
        // never at the end of the previous or inside an empty piece.
        let pieces = pieces_of(&bytes, &[5, 5]);
        assert_eq!(part_starts(pieces.into_iter(), 10, 2), vec![start(0, 0, 0), start(5, 2, 0)]);
    }

    #[test]
    fn small_copies_stay_on_the_caller() {
        assert_eq!(parts(SPREAD_BYTES, || 8), SPREAD_BYTES / PART_BYTES);
        assert_eq!(parts(1 << 30, || 2), 2, "no more parts than cores");
        assert_eq!(parts(1 << 30, || 64), MAX_PARTS);
        assert_eq!(parts(1 << 30, || 0), 1);
    }

    /// Regression: the first read of the core count costs tens of
    /// microseconds (cgroup files), and it landed inside the first small
    /// pooled copy of a process: a 16-byte read took 50 us.
    #[test]
    fn small_copies_never_ask_for_the_core_count() {
        assert_eq!(parts(0, || panic!("a small copy asked for the core count")), 1);
        assert_eq!(parts(SPREAD_BYTES - 1, || panic!("a small copy asked for the core count")), 1);
    }

    #[test]
    fn a_large_copy_is_exact_whatever_the_cores() {
        // Past SPREAD_BYTES, ragged pieces (odd lengths, one empty) and one
        // piece longer than a part.
        let bytes: Vec<u8> = (0..SPREAD_BYTES + 12_345).map(|i| (i % 251) as u8).collect();
        let cuts = [3, 3, 4097, 4_000_001, 4_000_002, SPREAD_BYTES];
        let pieces = pieces_of(&bytes, &cuts);
        let mut dst = vec![0u8; bytes.len()];
        write_pieces(&mut dst, pieces.iter().copied());
        assert!(dst == bytes, "the spread copy differs");
    }
}
