//! Lookups in deques kept sorted by an ordinal (or op id) key, whose keys
//! mostly arrive at the back and leave from the front: the pending-op
//! records of the scheduler and the stage, a column's versions. Both ends
//! are checked first, then the search gallops inwards from both ends, so
//! an answer a few items from either end costs a few probes: the items
//! are often boxed, and each probe of a plain binary search over a
//! thousand of them is a cache miss.

use std::collections::VecDeque;

/// How many leading items satisfy `before` (which holds for a prefix of
/// the items, as in `partition_point`).
pub fn prefix_len<T>(items: &VecDeque<T>, before: impl Fn(&T) -> bool) -> usize {
    let n = items.len();
    if n == 0 || !before(&items[0]) {
        return 0;
    }
    if before(&items[n - 1]) {
        return n;
    }
    // `before` holds at `lo` and not at `hi`: the answer is in `lo + 1..=hi`.
    let (mut lo, mut hi) = (0, n - 1);
    let mut step = 1;
    while step < n && hi - lo > 1 {
        let back = n - 1 - step;
        if back > lo && back < hi {
            if before(&items[back]) {
                lo = back;
                break;
            }
            hi = back;
        }
        if step > lo && step < hi {
            if !before(&items[step]) {
                hi = step;
                break;
            }
            lo = step;
        }
        step *= 2;
    }
    let mut first = lo + 1;
    while first < hi {
        let mid = first + (hi - first) / 2;
        if before(&items[mid]) {
            first = mid + 1;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Where `key` is among items sorted by `key_of`: `Ok(index)` when present,
/// else `Err(index)` where it would be inserted.
pub fn position<T>(items: &VecDeque<T>, key: u64, key_of: impl Fn(&T) -> u64) -> Result<usize, usize> {
    let at = prefix_len(items, |t| key_of(t) < key);
    match items.get(at) {
        Some(t) if key_of(t) == key => Ok(at),
        _ => Err(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_a_binary_search_at_the_ends_and_between() {
        let empty: VecDeque<u64> = VecDeque::new();
        assert_eq!(position(&empty, 3, |k| *k), Err(0));
        // Wrapped around, so the deque is two slices.
        let mut d: VecDeque<u64> = VecDeque::with_capacity(8);
        d.extend([0, 0, 0]);
        d.drain(..3);
        d.extend([2, 4, 6, 8, 10]);
        d.push_front(1);
        for key in 0..13 {
            let want = d.binary_search(&key);
            assert_eq!(position(&d, key, |k| *k), want, "key {key}");
            assert_eq!(prefix_len(&d, |k| *k <= key), d.partition_point(|k| *k <= key), "key {key}");
        }
    }

    #[test]
    fn galloping_agrees_with_partition_point_for_every_split_and_length() {
        for n in (0..70u64).chain([1000, 4096]) {
            // Pushed at both ends, so the deque wraps for most lengths.
            let mut d: VecDeque<u64> = VecDeque::with_capacity(4);
            for k in (0..n / 2).rev() {
                d.push_front(k);
            }
            for k in n / 2..n {
                d.push_back(k);
            }
            for split in 0..=n {
                let probes = std::cell::Cell::new(0u32);
                let got = prefix_len(&d, |k| {
                    probes.set(probes.get() + 1);
                    *k < split
                });
                assert_eq!(got, split as usize, "n {n}, split {split}");
                // Near either end, a few probes: two for the ends, then
                // about two per doubling of the distance, and a binary
                // search inside the last doubling.
                let near = split.min(n - split) + 1;
                let bound = 2 + 4 * (u64::BITS - near.leading_zeros());
                assert!(probes.get() <= bound, "n {n}, split {split}: {} probes, bound {bound}", probes.get());
            }
        }
    }
}
