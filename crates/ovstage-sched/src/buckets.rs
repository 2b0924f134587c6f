//! Values keyed by ordinal (or by op id), for keys that mostly arrive in
//! increasing order and mostly leave oldest first: a sorted deque.
//!
//! Every mutation files itself under its ordinal when it is submitted and
//! unfiles itself when it completes; a handle's many pending users are
//! filed by op id the same way. A B-tree costs a search, a node
//! allocation now and then and a rebalance on both; here the common cases
//! (a new highest ordinal, the oldest one leaving) are a push and a pop.
//! An entry emptied in the middle stays as a tombstone until it reaches an
//! end, or until tombstones make up half the deque and one pass drops them
//! all, so removal never shifts the deque and stays amortised O(1).

use std::collections::VecDeque;

use ovstage_types::sorted;

/// A value that can be empty (a tombstone once emptied).
pub(crate) trait Vacant: Default {
    fn is_vacant(&self) -> bool;
}

pub(crate) struct OrdinalDeque<V> {
    entries: VecDeque<(u64, V)>,
    /// How many entries are vacant.
    vacant: usize,
}

impl<V> Default for OrdinalDeque<V> {
    fn default() -> Self {
        OrdinalDeque { entries: VecDeque::new(), vacant: 0 }
    }
}

impl<V: Vacant> OrdinalDeque<V> {
    fn position(&self, ordinal: u64) -> Result<usize, usize> {
        // Keys mostly arrive densely (ordinals and op ids counting up):
        // first the slot the key would have if no key were missing since
        // the front, then the ends and a binary search.
        if let Some(&(first, _)) = self.entries.front()
            && let Some(guess) = ordinal.checked_sub(first).and_then(|g| usize::try_from(g).ok())
            && self.entries.get(guess).is_some_and(|(o, _)| *o == ordinal)
        {
            return Ok(guess);
        }
        sorted::position(&self.entries, ordinal, |(o, _)| *o)
    }

    /// The value at `ordinal`, created empty when missing. The caller fills
    /// it, or calls [`OrdinalDeque::vacated`] if it leaves it empty.
    pub(crate) fn entry(&mut self, ordinal: u64) -> &mut V {
        let at = match self.position(ordinal) {
            Ok(at) => {
                if self.entries[at].1.is_vacant() {
                    // Filled again: no longer counted as a tombstone.
                    self.vacant -= 1;
                }
                at
            }
            // Appending is the usual case: `push_back` skips the general
            // insert's shifting logic.
            Err(at) if at == self.entries.len() => {
                self.entries.push_back((ordinal, V::default()));
                at
            }
            Err(at) => {
                self.entries.insert(at, (ordinal, V::default()));
                at
            }
        };
        &mut self.entries[at].1
    }

    /// The value at `ordinal`, if present and not vacant.
    pub(crate) fn get_mut(&mut self, ordinal: u64) -> Option<&mut V> {
        let at = self.position(ordinal).ok()?;
        let v = &mut self.entries[at].1;
        (!v.is_vacant()).then_some(v)
    }

    /// Call after emptying the value at `ordinal`: drops it, or leaves a
    /// tombstone when it is not at an end.
    pub(crate) fn vacated(&mut self, ordinal: u64) {
        let Ok(at) = self.position(ordinal) else { return };
        if !self.entries[at].1.is_vacant() {
            return;
        }
        self.vacant += 1;
        while self.entries.front().is_some_and(|(_, v)| v.is_vacant()) {
            self.entries.pop_front();
            self.vacant -= 1;
        }
        while self.entries.back().is_some_and(|(_, v)| v.is_vacant()) {
            self.entries.pop_back();
            self.vacant -= 1;
        }
        if self.vacant * 2 > self.entries.len() {
            self.entries.retain(|(_, v)| !v.is_vacant());
            self.vacant = 0;
        }
    }

    /// Every non-vacant value, by increasing ordinal.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v).filter(|v| !v.is_vacant())
    }

    /// The non-vacant values at ordinals `lower..=upper`, increasing.
    pub(crate) fn range(&self, lower: u64, upper: u64) -> impl Iterator<Item = &V> {
        let from = self.entries.partition_point(|(o, _)| *o < lower);
        self.entries.range(from..).take_while(move |(o, _)| *o <= upper).map(|(_, v)| v).filter(|v| !v.is_vacant())
    }

    /// Whether no value is held. (Ends are never vacant: `vacated` drops
    /// them.)
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries held, tombstones included.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug, PartialEq)]
    struct Count(u32);

    impl Vacant for Count {
        fn is_vacant(&self) -> bool {
            self.0 == 0
        }
    }

    fn fill(d: &mut OrdinalDeque<Count>, ordinal: u64) {
        d.entry(ordinal).0 += 1;
    }

    fn empty(d: &mut OrdinalDeque<Count>, ordinal: u64) {
        d.get_mut(ordinal).expect("present").0 = 0;
        d.vacated(ordinal);
    }

    fn live(d: &OrdinalDeque<Count>) -> Vec<u64> {
        d.entries.iter().filter(|(_, v)| !v.is_vacant()).map(|(o, _)| *o).collect()
    }

    #[test]
    fn keeps_ordinals_sorted_whatever_the_arrival_order() {
        let mut d = OrdinalDeque::default();
        for o in [5, 9, 1, 7, 5, 3, 9] {
            fill(&mut d, o);
        }
        assert_eq!(live(&d), vec![1, 3, 5, 7, 9]);
        assert_eq!(d.get_mut(5), Some(&mut Count(2)));
        assert_eq!(d.get_mut(4), None);
        let in_range: Vec<u32> = d.range(3, 7).map(|c| c.0).collect();
        assert_eq!(in_range, vec![1, 2, 1]);
    }

    #[test]
    fn emptied_middle_entries_are_skipped_then_dropped() {
        let mut d = OrdinalDeque::default();
        for o in 1..=10 {
            fill(&mut d, o);
        }
        empty(&mut d, 4);
        assert_eq!(d.held(), 10, "a middle entry stays as a tombstone");
        assert_eq!(d.get_mut(4), None);
        assert_eq!(d.range(3, 5).count(), 2);
        assert_eq!(d.values().count(), 9);
        // Refilling a tombstone makes it live again.
        fill(&mut d, 4);
        assert_eq!(d.range(3, 5).count(), 3);
        for o in [2, 3, 4, 5, 6, 7] {
            empty(&mut d, o);
        }
        assert!(d.held() < 10, "tombstones are compacted once they are half the deque");
        assert_eq!(live(&d), vec![1, 8, 9, 10]);
        // Emptying the ends pops them and the tombstones behind them.
        for o in [1, 10, 9, 8] {
            empty(&mut d, o);
        }
        assert_eq!(d.held(), 0);
        assert_eq!(d.vacant, 0);
    }

    #[test]
    fn matches_a_btree_model_on_random_sequences() {
        use std::collections::BTreeMap;
        // A small deterministic generator: the sequence is the same on every run.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut d = OrdinalDeque::default();
        let mut model: BTreeMap<u64, u32> = BTreeMap::new();
        for _ in 0..5000 {
            let o = next(64);
            if next(2) == 0 {
                fill(&mut d, o);
                *model.entry(o).or_default() += 1;
            } else if model.remove(&o).is_some() {
                empty(&mut d, o);
            }
            let (lo, hi) = (next(64), next(64));
            let want: Vec<u32> = model.range(lo.min(hi)..=lo.max(hi)).map(|(_, v)| *v).collect();
            let got: Vec<u32> = d.range(lo.min(hi), lo.max(hi)).map(|c| c.0).collect();
            assert_eq!(got, want);
            assert_eq!(live(&d), model.keys().copied().collect::<Vec<_>>());
            assert!(d.vacant * 2 <= d.held().max(1));
            // Lookups by key: hits, tombstones and gaps.
            let k = next(66);
            assert_eq!(d.get_mut(k).map(|c| c.0), model.get(&k).copied(), "key {k}");
        }
    }
}
