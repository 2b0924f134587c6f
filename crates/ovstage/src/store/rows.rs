//! Row sets (bitsets over a column's rows) and row lists (the rows one write,
//! delete or query touches, in element order).

use std::sync::Arc;

use smallvec::SmallVec;

/// The rows a part or a query touches, in element order. Duplicates are
/// allowed (a path list may name a prim twice); the last one wins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Rows {
    /// `start, start + 1, ..., start + len - 1`.
    Run { start: u32, len: u32 },
    /// Arbitrary rows.
    List(Arc<[u32]>),
}

impl Rows {
    pub(crate) fn from_vec(rows: Vec<u32>) -> Rows {
        match rows.first() {
            Some(&start) if rows.iter().enumerate().all(|(i, r)| *r == start + i as u32) => {
                Rows::Run { start, len: rows.len() as u32 }
            }
            None => Rows::Run { start: 0, len: 0 },
            _ => Rows::List(rows.into()),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Rows::Run { len, .. } => *len as usize,
            Rows::List(rows) => rows.len(),
        }
    }

    pub(crate) fn get(&self, i: usize) -> u32 {
        match self {
            Rows::Run { start, .. } => start + i as u32,
            Rows::List(rows) => rows[i],
        }
    }

    /// The last index at which `row` appears.
    pub(crate) fn last_position(&self, row: u32) -> Option<usize> {
        match self {
            Rows::Run { start, len } => (row >= *start && row - start < *len).then(|| (row - start) as usize),
            Rows::List(rows) => rows.iter().rposition(|r| *r == row),
        }
    }

    /// Heap bytes of the row list (none for a run).
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Rows::Run { .. } => 0,
            Rows::List(rows) => std::mem::size_of_val(&**rows),
        }
    }

    /// Whether these rows are exactly `0..nrows` in order.
    pub(crate) fn covers_all(&self, nrows: u32) -> bool {
        matches!(self, Rows::Run { start: 0, len } if *len == nrows)
    }
}

/// The `(word index, bit mask)` pairs covering rows `start..end`.
fn word_masks(start: u32, end: u32) -> impl Iterator<Item = (usize, u64)> {
    let mut r = start;
    std::iter::from_fn(move || {
        if r >= end {
            return None;
        }
        let bit = r % 64;
        let n = (64 - bit).min(end - r);
        let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << bit };
        let item = (r as usize / 64, mask);
        r += n;
        Some(item)
    })
}

/// A set of rows as a bitset. Grows on insertion; absent words are zero.
/// Sets of up to 128 rows live inline: a mutation of a few prims records
/// one in admission and one in its part without a heap allocation.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct RowSet {
    words: SmallVec<[u64; 2]>,
}

impl Clone for RowSet {
    /// One copy of the words (`SmallVec`'s own clone extends word by word).
    fn clone(&self) -> RowSet {
        RowSet { words: SmallVec::from_slice(&self.words) }
    }
}

impl RowSet {
    pub(crate) fn new() -> RowSet {
        RowSet::default()
    }

    /// `0..n`.
    pub(crate) fn full(n: u32) -> RowSet {
        let mut s = RowSet::new();
        s.insert_range(0, n);
        s
    }

    fn grow(&mut self, row: u32) {
        let w = row as usize / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
    }

    pub(crate) fn insert(&mut self, row: u32) {
        self.grow(row);
        self.words[row as usize / 64] |= 1 << (row % 64);
    }

    pub(crate) fn remove(&mut self, row: u32) {
        if let Some(w) = self.words.get_mut(row as usize / 64) {
            *w &= !(1 << (row % 64));
        }
    }

    /// How many rows the set holds.
    pub(crate) fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub(crate) fn contains(&self, row: u32) -> bool {
        self.words.get(row as usize / 64).is_some_and(|w| w & (1 << (row % 64)) != 0)
    }

    pub(crate) fn insert_range(&mut self, start: u32, len: u32) {
        if len == 0 {
            return;
        }
        self.grow(start + len - 1);
        for (w, mask) in word_masks(start, start + len) {
            self.words[w] |= mask;
        }
    }

    pub(crate) fn insert_rows(&mut self, rows: &Rows) {
        match rows {
            Rows::Run { start, len } => self.insert_range(*start, *len),
            Rows::List(list) => self.insert_all(list),
        }
    }

    /// Inserts every row of `rows`, the set grown once to the highest of
    /// them (not word by word, a copy of the set at each growth).
    pub(crate) fn insert_all(&mut self, rows: &[u32]) {
        if let Some(max) = rows.iter().max() {
            self.grow(*max);
        }
        rows.iter().for_each(|r| self.insert(*r));
    }

    pub(crate) fn remove_rows(&mut self, rows: &Rows) {
        match rows {
            Rows::Run { start, len } => self.remove_range(*start, *len),
            Rows::List(list) => list.iter().for_each(|r| self.remove(*r)),
        }
    }

    fn remove_range(&mut self, start: u32, len: u32) {
        let end = (start + len).min(self.words.len() as u32 * 64);
        for (w, mask) in word_masks(start, end) {
            self.words[w] &= !mask;
        }
    }

    pub(crate) fn union_with(&mut self, other: &RowSet) {
        if other.words.len() > self.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// Keeps only the rows also in `other`.
    pub(crate) fn intersect_with(&mut self, other: &RowSet) {
        self.words.truncate(other.words.len());
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }

    /// Whether some row is in both sets.
    pub(crate) fn intersects(&self, other: &RowSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// The rows in the set, in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, w)| {
            let mut w = *w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros();
                    w &= w - 1;
                    i as u32 * 64 + bit
                })
            })
        })
    }

    pub(crate) fn subtract(&mut self, other: &RowSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
    }

    /// Whether every row of `start..start + len` is in the set.
    pub(crate) fn contains_range(&self, start: u32, len: u32) -> bool {
        if len == 0 {
            return true;
        }
        let last_row = start + (len - 1);
        let (first, last) = (start as usize / 64, last_row as usize / 64);
        if last >= self.words.len() {
            return false;
        }
        let head = u64::MAX << (start % 64);
        let tail = u64::MAX >> (63 - last_row % 64);
        if first == last {
            let mask = head & tail;
            return self.words[first] & mask == mask;
        }
        // The full words in between are and-ed without an early exit, which
        // vectorizes: a latest read of 100k live rows checks them in about
        // 100 ns.
        self.words[first] & head == head
            && self.words[last] & tail == tail
            && self.words[first + 1..last].iter().fold(u64::MAX, |acc, w| acc & w) == u64::MAX
    }

    /// The first element index `i` whose row is in the set.
    pub(crate) fn first_hit(&self, rows: &Rows) -> Option<usize> {
        if self.words.is_empty() {
            // The usual case for the dead rows of a column: none.
            return None;
        }
        match rows {
            Rows::Run { start, len } => word_masks(*start, start + len).find_map(|(w, mask)| {
                let hit = self.words.get(w).copied().unwrap_or(0) & mask;
                (hit != 0).then(|| (w as u32 * 64 + hit.trailing_zeros() - start) as usize)
            }),
            Rows::List(list) => list.iter().position(|r| self.contains(*r)),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// The lowest row in the set.
    pub(crate) fn first(&self) -> Option<u32> {
        self.words.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| i as u32 * 64 + w.trailing_zeros())
    }

    /// The lowest row in both sets.
    pub(crate) fn first_common(&self, other: &RowSet) -> Option<u32> {
        self.words
            .iter()
            .zip(&other.words)
            .enumerate()
            .find(|(_, (a, b))| *a & *b != 0)
            .map(|(i, (a, b))| i as u32 * 64 + (a & b).trailing_zeros())
    }

    #[cfg(test)]
    pub(crate) fn ones(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_range_agrees_with_contains() {
        let mut s = RowSet::new();
        s.insert_range(5, 300);
        s.remove_rows(&Rows::List(vec![70, 200].into()));
        for start in 0..330u32 {
            for len in [0u32, 1, 2, 58, 59, 60, 64, 65, 128, 129, 190, 300] {
                let naive = (start..start + len).all(|r| s.contains(r));
                assert_eq!(s.contains_range(start, len), naive, "start {start}, len {len}");
            }
        }
    }

    #[test]
    fn ranges_and_lists() {
        let mut s = RowSet::new();
        s.insert_range(3, 130);
        assert!(s.contains(3) && s.contains(132) && !s.contains(133) && !s.contains(2));
        assert!(s.contains_range(3, 130) && !s.contains_range(2, 3));
        s.remove_rows(&Rows::List(vec![64, 65].into()));
        assert!(!s.contains_range(3, 130));
        let mut u = RowSet::full(200);
        u.remove_rows(&Rows::Run { start: 10, len: 120 });
        assert_eq!(u.ones().len(), 80);
        assert!(u.contains(9) && !u.contains(10) && !u.contains(129) && u.contains(130));
        u.remove_rows(&Rows::Run { start: 150, len: 1000 });
        assert!(!u.contains(199) && u.contains(149));
        assert_eq!(s.first_hit(&Rows::Run { start: 64, len: 10 }), Some(2));
        assert_eq!(s.first_hit(&Rows::Run { start: 200, len: 10 }), None);
        assert_eq!(s.first_hit(&Rows::List(vec![1, 500, 7].into())), Some(2));
        let mut i = RowSet::full(70);
        i.intersect_with(&RowSet::full(66));
        i.intersect_with(&s);
        assert!(i.intersects(&s) && !i.intersects(&RowSet::full(3)));
        assert_eq!(i.ones(), (3..64).collect::<Vec<_>>());
        let mut t = RowSet::full(5);
        t.subtract(&s);
        assert_eq!(t.ones(), vec![0, 1, 2]);
        t.union_with(&RowSet::full(70));
        assert!(t.contains_range(0, 70));
        assert!(RowSet::new().is_empty());
    }

    #[test]
    fn rows_shapes() {
        assert_eq!(Rows::from_vec(vec![4, 5, 6]), Rows::Run { start: 4, len: 3 });
        assert!(matches!(Rows::from_vec(vec![4, 6]), Rows::List(_)));
        assert!(Rows::from_vec(vec![0, 1]).covers_all(2));
        assert_eq!(Rows::from_vec(vec![]).len(), 0);
    }
}
