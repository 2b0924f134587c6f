//! Row sets (bitsets over a column's rows) and row lists (the rows one write,
//! delete or query touches, in element order).

use std::borrow::Cow;
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

/// The bits of word `w` that lie in rows `start..end` (0 when none do).
fn word_mask(w: u32, start: u32, end: u32) -> u64 {
    let lo = (u64::from(w) * 64).max(u64::from(start)) as u32;
    let hi = ((u64::from(w) + 1) * 64).min(u64::from(end)) as u32;
    word_masks(lo, hi).next().map_or(0, |(_, mask)| mask)
}

/// A set of rows as a bitset. Dense sets are words indexed by `row / 64`
/// (sets of up to 128 rows live inline: a mutation of a few prims records
/// one in admission and one in its part without a heap allocation); sparse
/// ones are their non-zero words with their indices, so that a few hundred
/// rows spread over a million-row column cost a few kilobytes to build,
/// copy and combine instead of the column's size. Bulk construction
/// ([`RowSet::insert_all`], unions) picks the representation; single
/// inserts keep a dense set dense.
#[derive(Default)]
pub(crate) struct RowSet {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    /// Word `i` holds rows `64 i..64 i + 63`; absent words are zero.
    Dense(SmallVec<[u64; 2]>),
    /// `(word index, word)`, sorted by index, without zero words.
    Sparse(Vec<(u32, u64)>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::Dense(SmallVec::new())
    }
}

/// Below this many words a set stays dense whatever it holds.
const SPARSE_MIN_WORDS: usize = 64;

/// A set becomes sparse when fewer than one in `SPARSE_RATIO` of its words
/// would be non-zero, and dense again when more than one in
/// `DENSE_RATIO` are (the gap keeps a set near the edge from flipping).
const SPARSE_RATIO: usize = 8;
const DENSE_RATIO: usize = 4;

impl Clone for RowSet {
    /// One copy of the words (`SmallVec`'s own clone extends word by word).
    fn clone(&self) -> RowSet {
        let repr = match &self.repr {
            Repr::Dense(words) => Repr::Dense(SmallVec::from_slice(words)),
            Repr::Sparse(entries) => Repr::Sparse(entries.clone()),
        };
        RowSet { repr }
    }
}

impl PartialEq for RowSet {
    /// Equal when they hold the same rows, whatever their representation.
    fn eq(&self, other: &RowSet) -> bool {
        self.nonzero().eq(other.nonzero())
    }
}

impl Eq for RowSet {}

impl std::fmt::Debug for RowSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// The non-zero words of a set in index order, whatever its representation.
enum NonZero<'a> {
    Dense(std::iter::Enumerate<std::slice::Iter<'a, u64>>),
    Sparse(std::slice::Iter<'a, (u32, u64)>),
}

impl Iterator for NonZero<'_> {
    type Item = (u32, u64);

    fn next(&mut self) -> Option<(u32, u64)> {
        match self {
            NonZero::Dense(it) => it.find(|(_, w)| **w != 0).map(|(i, w)| (i as u32, *w)),
            NonZero::Sparse(it) => it.next().copied(),
        }
    }
}

/// The union of two sorted word lists.
fn merge_or(a: impl Iterator<Item = (u32, u64)>, b: impl Iterator<Item = (u32, u64)>) -> Vec<(u32, u64)> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    let mut out = Vec::with_capacity(a.size_hint().0 + b.size_hint().0);
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(&(i, x)), Some(&(j, y))) if i == j => {
                a.next();
                b.next();
                (i, x | y)
            }
            (Some(&(i, _)), Some(&(j, _))) if i < j => a.next().unwrap_or_default(),
            (Some(_), Some(_)) => b.next().unwrap_or_default(),
            (Some(_), None) => a.next().unwrap_or_default(),
            (None, Some(_)) => b.next().unwrap_or_default(),
            (None, None) => return out,
        };
        out.push(next);
    }
}

/// `rows` as sorted `(word index, word)` pairs.
fn words_of(rows: &[u32]) -> Vec<(u32, u64)> {
    // Rows assigned in the order of their prims' creation come sorted.
    let sorted: Cow<'_, [u32]> = if rows.is_sorted() {
        Cow::Borrowed(rows)
    } else {
        let mut v = rows.to_vec();
        v.sort_unstable();
        Cow::Owned(v)
    };
    let mut out: Vec<(u32, u64)> = Vec::with_capacity(sorted.len());
    for &r in sorted.iter() {
        let (w, bit) = (r / 64, 1u64 << (r % 64));
        match out.last_mut() {
            Some((last, word)) if *last == w => *word |= bit,
            _ => out.push((w, bit)),
        }
    }
    out
}

impl RowSet {
    pub(crate) fn new() -> RowSet {
        RowSet::default()
    }

    /// Empties the set, keeping a dense set's words for reuse (a recycled
    /// version's sets, refilled by the next write).
    pub(crate) fn clear(&mut self) {
        match &mut self.repr {
            Repr::Dense(words) => words.clear(),
            Repr::Sparse(_) => self.repr = Repr::default(),
        }
    }

    /// `0..n`.
    pub(crate) fn full(n: u32) -> RowSet {
        let mut s = RowSet::new();
        s.insert_range(0, n);
        s
    }

    /// A set of sorted, non-zero words, in the representation that suits it.
    fn from_entries(entries: Vec<(u32, u64)>) -> RowSet {
        let mut s = RowSet { repr: Repr::Sparse(entries) };
        s.settle();
        s
    }

    /// Turns a sparse set dense once enough of its words are set.
    fn settle(&mut self) {
        if let Repr::Sparse(entries) = &self.repr {
            let span = self.span();
            if span <= SPARSE_MIN_WORDS || entries.len() * DENSE_RATIO > span {
                self.make_dense();
            }
        }
    }

    fn make_dense(&mut self) {
        if let Repr::Sparse(entries) = &self.repr {
            let mut words: SmallVec<[u64; 2]> = SmallVec::from_elem(0, self.span());
            for &(i, w) in entries {
                words[i as usize] = w;
            }
            self.repr = Repr::Dense(words);
        }
    }

    /// The non-zero words in index order.
    fn nonzero(&self) -> NonZero<'_> {
        match &self.repr {
            Repr::Dense(words) => NonZero::Dense(words.iter().enumerate()),
            Repr::Sparse(entries) => NonZero::Sparse(entries.iter()),
        }
    }

    /// Word `w` (zero when absent).
    fn word(&self, w: usize) -> u64 {
        match &self.repr {
            Repr::Dense(words) => words.get(w).copied().unwrap_or(0),
            Repr::Sparse(entries) => {
                entries.binary_search_by_key(&(w as u64), |e| u64::from(e.0)).map_or(0, |i| entries[i].1)
            }
        }
    }

    /// One past the highest word index that may be non-zero.
    fn span(&self) -> usize {
        match &self.repr {
            Repr::Dense(words) => words.len(),
            Repr::Sparse(entries) => entries.last().map_or(0, |e| e.0 as usize + 1),
        }
    }

    /// The end of rows `start..start + len`, cut at the set's span.
    fn end_within(&self, start: u32, len: u32) -> u32 {
        (u64::from(start) + u64::from(len)).min(self.span() as u64 * 64).min(u64::from(u32::MAX)) as u32
    }

    /// Applies `f` to every word and drops the sparse words it zeroes.
    fn map_words(&mut self, mut f: impl FnMut(usize, u64) -> u64) {
        match &mut self.repr {
            Repr::Dense(words) => words.iter_mut().enumerate().for_each(|(i, w)| *w = f(i, *w)),
            Repr::Sparse(entries) => entries.retain_mut(|(i, w)| {
                *w = f(*i as usize, *w);
                *w != 0
            }),
        }
    }

    fn grow(words: &mut SmallVec<[u64; 2]>, row: u32) {
        let w = row as usize / 64;
        if w >= words.len() {
            if words.is_empty() && words.capacity() <= w {
                // One zeroed allocation (SmallVec's resize pushes a word
                // at a time, growing as it goes).
                *words = SmallVec::from_elem(0, w + 1);
            } else {
                // Growing, or refilling a cleared set's words.
                words.reserve_exact(w + 1 - words.len());
                words.resize(w + 1, 0);
            }
        }
    }

    pub(crate) fn insert(&mut self, row: u32) {
        let (w, bit) = (row / 64, 1u64 << (row % 64));
        match &mut self.repr {
            Repr::Dense(words) => {
                Self::grow(words, row);
                words[w as usize] |= bit;
            }
            Repr::Sparse(entries) => {
                match entries.binary_search_by_key(&w, |e| e.0) {
                    Ok(i) => entries[i].1 |= bit,
                    Err(i) => entries.insert(i, (w, bit)),
                }
                self.settle();
            }
        }
    }

    pub(crate) fn remove(&mut self, row: u32) {
        let (w, bit) = (row / 64, 1u64 << (row % 64));
        match &mut self.repr {
            Repr::Dense(words) => {
                if let Some(word) = words.get_mut(w as usize) {
                    *word &= !bit;
                }
            }
            Repr::Sparse(entries) => {
                if let Ok(i) = entries.binary_search_by_key(&w, |e| e.0) {
                    entries[i].1 &= !bit;
                    if entries[i].1 == 0 {
                        entries.remove(i);
                    }
                }
            }
        }
    }

    /// How many rows the set holds.
    pub(crate) fn count(&self) -> usize {
        self.nonzero().map(|(_, w)| w.count_ones() as usize).sum()
    }

    pub(crate) fn contains(&self, row: u32) -> bool {
        self.word(row as usize / 64) & (1 << (row % 64)) != 0
    }

    pub(crate) fn insert_range(&mut self, start: u32, len: u32) {
        if len == 0 {
            return;
        }
        match &mut self.repr {
            Repr::Dense(words) => {
                // The edge words masked, the words between filled whole
                // (a fill, not a mask per word: writes of thousands of
                // rows insert their run into a version's set).
                let last_row = start + (len - 1);
                Self::grow(words, last_row);
                let (first, last) = (start as usize / 64, last_row as usize / 64);
                let low = u64::MAX << (start % 64);
                let high = u64::MAX >> (63 - last_row % 64);
                if first == last {
                    words[first] |= low & high;
                } else {
                    words[first] |= low;
                    words[first + 1..last].fill(u64::MAX);
                    words[last] |= high;
                }
            }
            Repr::Sparse(entries) => {
                let range = word_masks(start, start + len).map(|(w, m)| (w as u32, m));
                *self = RowSet::from_entries(merge_or(entries.iter().copied(), range));
            }
        }
    }

    pub(crate) fn insert_rows(&mut self, rows: &Rows) {
        match rows {
            Rows::Run { start, len } => self.insert_range(*start, *len),
            Rows::List(list) => self.insert_all(list),
        }
    }

    /// Inserts every row of `rows`. A dense set that would have to grow is
    /// grown once to the highest of them, unless the rows are too few for
    /// the words that takes: then the set becomes sparse.
    pub(crate) fn insert_all(&mut self, rows: &[u32]) {
        let Some(&max) = rows.iter().max() else { return };
        let need = max as usize / 64 + 1;
        if let Repr::Dense(words) = &mut self.repr
            && (need <= words.len() || need <= SPARSE_MIN_WORDS || rows.len() * SPARSE_RATIO >= need)
        {
            Self::grow(words, max);
            rows.iter().for_each(|&r| words[r as usize / 64] |= 1 << (r % 64));
        } else if self.is_empty() {
            *self = RowSet::from_entries(words_of(rows));
        } else {
            *self = RowSet::from_entries(merge_or(self.nonzero(), words_of(rows).into_iter()));
        }
    }

    pub(crate) fn remove_rows(&mut self, rows: &Rows) {
        match rows {
            Rows::Run { start, len } => self.remove_range(*start, *len),
            Rows::List(list) => list.iter().for_each(|r| self.remove(*r)),
        }
    }

    fn remove_range(&mut self, start: u32, len: u32) {
        let end = self.end_within(start, len);
        match &mut self.repr {
            Repr::Dense(words) => {
                for (w, mask) in word_masks(start, end) {
                    words[w] &= !mask;
                }
            }
            Repr::Sparse(_) => self.map_words(|i, w| w & !word_mask(i as u32, start, end)),
        }
    }

    pub(crate) fn union_with(&mut self, other: &RowSet) {
        match (&mut self.repr, &other.repr) {
            (Repr::Dense(a), Repr::Dense(b)) => {
                if b.len() > a.len() {
                    a.resize(b.len(), 0);
                }
                for (x, y) in a.iter_mut().zip(b) {
                    *x |= y;
                }
            }
            (Repr::Dense(a), Repr::Sparse(b)) if a.len() >= other.span() => {
                for &(i, w) in b {
                    a[i as usize] |= w;
                }
            }
            _ => *self = RowSet::from_entries(merge_or(self.nonzero(), other.nonzero())),
        }
    }

    /// Keeps only the rows also in `other`.
    pub(crate) fn intersect_with(&mut self, other: &RowSet) {
        match (&mut self.repr, &other.repr) {
            (Repr::Dense(a), Repr::Dense(b)) => {
                a.truncate(b.len());
                for (x, y) in a.iter_mut().zip(b) {
                    *x &= y;
                }
            }
            (Repr::Dense(a), Repr::Sparse(b)) => {
                let kept = b
                    .iter()
                    .filter_map(|&(i, w)| {
                        let both = a.get(i as usize).copied().unwrap_or(0) & w;
                        (both != 0).then_some((i, both))
                    })
                    .collect();
                *self = RowSet::from_entries(kept);
            }
            (Repr::Sparse(_), _) => self.map_words(|i, w| w & other.word(i)),
        }
    }

    /// Whether some row is in both sets.
    pub(crate) fn intersects(&self, other: &RowSet) -> bool {
        self.first_common(other).is_some()
    }

    /// The rows in the set, in increasing order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.nonzero().flat_map(|(i, w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros();
                    w &= w - 1;
                    i * 64 + bit
                })
            })
        })
    }

    pub(crate) fn subtract(&mut self, other: &RowSet) {
        match (&mut self.repr, &other.repr) {
            (Repr::Dense(a), Repr::Dense(b)) => {
                for (x, y) in a.iter_mut().zip(b) {
                    *x &= !y;
                }
            }
            (Repr::Dense(a), Repr::Sparse(b)) => {
                for &(i, w) in b {
                    if let Some(x) = a.get_mut(i as usize) {
                        *x &= !w;
                    }
                }
            }
            (Repr::Sparse(_), _) => self.map_words(|i, w| w & !other.word(i)),
        }
    }

    /// Whether every row of `start..start + len` is in the set.
    pub(crate) fn contains_range(&self, start: u32, len: u32) -> bool {
        if len == 0 {
            return true;
        }
        let last_row = start + (len - 1);
        let (first, last) = (start as usize / 64, last_row as usize / 64);
        let head = u64::MAX << (start % 64);
        let tail = u64::MAX >> (63 - last_row % 64);
        match &self.repr {
            Repr::Dense(words) => {
                if last >= words.len() {
                    return false;
                }
                if first == last {
                    let mask = head & tail;
                    return words[first] & mask == mask;
                }
                // The full words in between are and-ed without an early
                // exit, which vectorizes: a latest read of 100k live rows
                // checks them in about 100 ns.
                words[first] & head == head
                    && words[last] & tail == tail
                    && words[first + 1..last].iter().fold(u64::MAX, |acc, w| acc & w) == u64::MAX
            }
            Repr::Sparse(entries) => {
                // Every word of the range must be present, so the range's
                // entries are consecutive from the first one.
                let at = entries.partition_point(|e| (e.0 as usize) < first);
                let Some(run) = entries.get(at..at + (last - first + 1)) else { return false };
                run.iter().enumerate().all(|(k, &(i, w))| {
                    let mut mask = u64::MAX;
                    if k == 0 {
                        mask &= head;
                    }
                    if k == last - first {
                        mask &= tail;
                    }
                    i as usize == first + k && w & mask == mask
                })
            }
        }
    }

    /// The first element index `i` whose row is in the set.
    pub(crate) fn first_hit(&self, rows: &Rows) -> Option<usize> {
        if self.span() == 0 {
            // The usual case for the dead rows of a column: none.
            return None;
        }
        match rows {
            Rows::Run { start, len } => {
                let end = self.end_within(*start, *len);
                let hit_at = |w: usize, mask: u64| {
                    let hit = self.word(w) & mask;
                    (hit != 0).then(|| (w as u32 * 64 + hit.trailing_zeros() - start) as usize)
                };
                match &self.repr {
                    Repr::Dense(_) => word_masks(*start, end).find_map(|(w, mask)| hit_at(w, mask)),
                    Repr::Sparse(entries) => {
                        // Only the words present: a long run over a sparse
                        // set costs its entries, not its words.
                        let (first, last) = (*start / 64, end.saturating_sub(1) / 64);
                        let at = entries.partition_point(|e| e.0 < first);
                        entries[at..]
                            .iter()
                            .take_while(|e| e.0 <= last)
                            .find_map(|&(i, _)| hit_at(i as usize, word_mask(i, *start, end)))
                    }
                }
            }
            Rows::List(list) => list.iter().position(|r| self.contains(*r)),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.nonzero().next().is_none()
    }

    /// The lowest row in the set.
    pub(crate) fn first(&self) -> Option<u32> {
        self.nonzero().next().map(|(i, w)| i * 64 + w.trailing_zeros())
    }

    /// The lowest row in both sets.
    pub(crate) fn first_common(&self, other: &RowSet) -> Option<u32> {
        let common = |(i, w): (u32, u64), other: &RowSet| {
            let both = w & other.word(i as usize);
            (both != 0).then(|| i * 64 + both.trailing_zeros())
        };
        match (&self.repr, &other.repr) {
            (Repr::Dense(a), Repr::Dense(b)) => a
                .iter()
                .zip(b)
                .enumerate()
                .find(|(_, (x, y))| *x & *y != 0)
                .map(|(i, (x, y))| i as u32 * 64 + (x & y).trailing_zeros()),
            (Repr::Sparse(_), _) => self.nonzero().find_map(|e| common(e, other)),
            (Repr::Dense(_), Repr::Sparse(_)) => other.nonzero().find_map(|e| common(e, self)),
        }
    }

    /// Whether the set is held sparse (tests of the representation).
    #[cfg(test)]
    pub(crate) fn is_sparse(&self) -> bool {
        matches!(self.repr, Repr::Sparse(_))
    }

    #[cfg(test)]
    pub(crate) fn ones(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

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
    fn a_cleared_set_is_empty_and_refills_in_its_own_words() {
        let mut s = RowSet::new();
        s.insert_range(0, 1000);
        let Repr::Dense(words) = &s.repr else { panic!("dense") };
        let at = words.as_ptr();
        s.clear();
        assert!(s.is_empty() && !s.contains(0) && !s.contains(999));
        s.insert_range(70, 3);
        assert!((0..1000).all(|r| s.contains(r) == (70..73).contains(&r)));
        let Repr::Dense(words) = &s.repr else { panic!("dense") };
        assert_eq!(words.as_ptr(), at, "the words were reused");
        // A sparse set clears to an empty dense one.
        let mut sparse = RowSet::new();
        sparse.insert_all(&[3, 1 << 20]);
        assert!(matches!(sparse.repr, Repr::Sparse(_)));
        sparse.clear();
        assert!(sparse.is_empty() && matches!(sparse.repr, Repr::Dense(_)));
        sparse.insert(5);
        assert!(sparse.contains(5) && !sparse.contains(3));
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

    /// One operation of the model test, on rows drawn from a range wide
    /// enough that sets of a few rows are held sparse.
    #[derive(Clone, Debug)]
    enum Op {
        Insert(u32),
        Remove(u32),
        InsertAll(Vec<u32>),
        InsertRange(u32, u32),
        RemoveRange(u32, u32),
        RemoveList(Vec<u32>),
        Union(Vec<u32>, u32, u32),
        Intersect(Vec<u32>, u32, u32),
        Subtract(Vec<u32>, u32, u32),
    }

    fn row() -> impl Strategy<Value = u32> {
        // Clustered low rows (dense words), scattered high ones (sparse).
        prop_oneof![0u32..300, 0u32..200_000, 4_000_000u32..4_000_100]
    }

    fn op() -> impl Strategy<Value = Op> {
        let list = || proptest::collection::vec(row(), 0..40);
        let len = || prop_oneof![0u32..5, 0u32..200, 0u32..5000];
        prop_oneof![
            row().prop_map(Op::Insert),
            row().prop_map(Op::Remove),
            list().prop_map(Op::InsertAll),
            // Sorted, as rows assigned in creation order come.
            list().prop_map(|mut v| {
                v.sort_unstable();
                Op::InsertAll(v)
            }),
            (row(), len()).prop_map(|(s, l)| Op::InsertRange(s, l.min(u32::MAX - s))),
            (row(), len()).prop_map(|(s, l)| Op::RemoveRange(s, l.min(u32::MAX - s))),
            list().prop_map(Op::RemoveList),
            (list(), row(), len()).prop_map(|(v, s, l)| Op::Union(v, s, l.min(u32::MAX - s))),
            (list(), row(), len()).prop_map(|(v, s, l)| Op::Intersect(v, s, l.min(u32::MAX - s))),
            (list(), row(), len()).prop_map(|(v, s, l)| Op::Subtract(v, s, l.min(u32::MAX - s))),
        ]
    }

    /// A set holding `list` and the range, built either way (dense or sparse).
    fn operand(list: &[u32], start: u32, len: u32) -> (RowSet, BTreeSet<u32>) {
        let mut s = RowSet::new();
        s.insert_all(list);
        s.insert_range(start, len);
        let model = list.iter().copied().chain(start..start + len).collect();
        (s, model)
    }

    fn check(s: &RowSet, model: &BTreeSet<u32>, probes: &[u32]) -> Result<(), TestCaseError> {
        prop_assert_eq!(s.ones(), model.iter().copied().collect::<Vec<_>>());
        prop_assert_eq!(s.count(), model.len());
        prop_assert_eq!(s.is_empty(), model.is_empty());
        prop_assert_eq!(s.first(), model.first().copied());
        for &p in probes {
            prop_assert_eq!(s.contains(p), model.contains(&p), "row {}", p);
            for len in [0u32, 1, 3, 64, 130, 1000] {
                let len = len.min(u32::MAX - p);
                let naive = model.range(p..p + len).count() == len as usize;
                prop_assert_eq!(s.contains_range(p, len), naive, "range {} + {}", p, len);
                let run = Rows::Run { start: p, len };
                let hit = model.range(p..p + len).next().map(|r| (r - p) as usize);
                prop_assert_eq!(s.first_hit(&run), hit, "first hit in {} + {}", p, len);
            }
        }
        let list = Rows::List(probes.to_vec().into());
        prop_assert_eq!(s.first_hit(&list), probes.iter().position(|p| model.contains(p)));
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Every operation agrees with a `BTreeSet`, whichever
        /// representation the sets involved are in at the time.
        #[test]
        fn row_set_matches_a_sorted_set(ops in proptest::collection::vec(op(), 1..30),
                                        probes in proptest::collection::vec(row(), 1..12)) {
            let mut s = RowSet::new();
            let mut model = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Insert(r) => { s.insert(r); model.insert(r); }
                    Op::Remove(r) => { s.remove(r); model.remove(&r); }
                    Op::InsertAll(v) => { s.insert_all(&v); model.extend(v); }
                    Op::InsertRange(a, l) => {
                        s.insert_rows(&Rows::Run { start: a, len: l });
                        model.extend(a..a + l);
                    }
                    Op::RemoveRange(a, l) => {
                        s.remove_rows(&Rows::Run { start: a, len: l });
                        model.retain(|r| !(a..a + l).contains(r));
                    }
                    Op::RemoveList(v) => {
                        s.remove_rows(&Rows::List(v.clone().into()));
                        v.iter().for_each(|r| { model.remove(r); });
                    }
                    Op::Union(v, a, l) => {
                        let (o, m) = operand(&v, a, l);
                        prop_assert_eq!(s.intersects(&o), !model.is_disjoint(&m));
                        prop_assert_eq!(s.first_common(&o), model.intersection(&m).next().copied());
                        s.union_with(&o);
                        model.extend(m);
                    }
                    Op::Intersect(v, a, l) => {
                        let (o, m) = operand(&v, a, l);
                        s.intersect_with(&o);
                        model.retain(|r| m.contains(r));
                    }
                    Op::Subtract(v, a, l) => {
                        let (o, m) = operand(&v, a, l);
                        s.subtract(&o);
                        model.retain(|r| !m.contains(r));
                    }
                }
                check(&s, &model, &probes)?;
                let copy = s.clone();
                prop_assert!(copy == s);
            }
        }
    }

    #[test]
    fn few_rows_over_a_wide_range_are_held_sparse() {
        // 500 rows, one every 2000: a dense set would take 125 KB.
        let rows: Vec<u32> = (0..500).map(|i| i * 2000).collect();
        let mut s = RowSet::new();
        s.insert_all(&rows);
        assert!(s.is_sparse());
        assert_eq!(s.ones(), rows);
        // Filling the range makes it dense again.
        s.insert_range(0, 1_000_000);
        assert!(!s.is_sparse());
        assert!(s.contains_range(0, 1_000_000));
        // A dense set equals a sparse one holding the same rows.
        let mut d = RowSet::full(64 * 100);
        d.remove_range(1, 64 * 100 - 1);
        let mut sp = RowSet::new();
        sp.insert_all(&[0]);
        assert_eq!(d, sp);
        // Single inserts keep a dense set dense.
        let mut one = RowSet::new();
        one.insert(900_000);
        assert!(!one.is_sparse());
    }

    #[test]
    fn rows_shapes() {
        assert_eq!(Rows::from_vec(vec![4, 5, 6]), Rows::Run { start: 4, len: 3 });
        assert!(matches!(Rows::from_vec(vec![4, 6]), Rows::List(_)));
        assert!(Rows::from_vec(vec![0, 1]).covers_all(2));
        assert_eq!(Rows::from_vec(vec![]).len(), 0);
    }
}
