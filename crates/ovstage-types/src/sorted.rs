//! Lookups in deques kept sorted by an ordinal (or op id) key, whose keys
//! mostly arrive at the back and leave from the front: the pending-op
//! records of the scheduler and the stage, a column's versions. Both ends
//! are checked before a binary search, whose probes are cache misses when
//! thousands of entries are pending.

use std::collections::VecDeque;

/// How many leading items satisfy `before` (which holds for a prefix of
/// the items, as in `partition_point`).
pub fn prefix_len<T>(items: &VecDeque<T>, before: impl Fn(&T) -> bool) -> usize {
    match (items.front(), items.back()) {
        (Some(first), _) if !before(first) => 0,
        (_, Some(last)) if before(last) => items.len(),
        (None, _) | (_, None) => 0,
        _ => items.partition_point(before),
    }
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
}
