//! Image materialisation: building a column version's full state (its
//! *image*: every row's bytes and which rows are live) from the parts of
//! the versions up to it, and the byte-level work on parts and buffers
//! (folding a part onto an image, compacting merged parts, copying and
//! recycling buffers). Which versions exist, what is merged and what is
//! trimmed is the version policy's business (`column.rs`); this module only
//! turns parts into bytes.

use std::sync::Arc;

use ovstage_types::Device;
use smallvec::SmallVec;

use super::backend::{Buffer, ColumnMemory, StorageBackend};
use super::buf::Buf;
use super::column::{ColumnGuard, Part, Parts};
use super::rows::{RowSet, Rows};
use crate::schema::ValueKind;

/// The full state of a column at one version.
#[derive(Debug)]
pub(crate) struct Image {
    /// Fixed-size columns: `nrows * row_bytes` bytes; rows that are not live
    /// hold stale bytes. Empty for array columns.
    pub(crate) data: Arc<Buffer>,
    /// Array columns: where each row's elements are.
    pub(crate) arrays: Option<ArrayIndex>,
    pub(crate) live: RowSet,
    pub(crate) nrows: u32,
    /// Where the bytes are.
    pub(crate) device: Device,
}

impl Image {
    /// Whether rows `first..first + len` are all in the image and live (a
    /// read can then hand out a view of them).
    pub(crate) fn holds_live(&self, first: u32, len: u32) -> bool {
        first.checked_add(len).is_some_and(|end| end <= self.nrows) && self.live.contains_range(first, len)
    }

    /// An image of `nrows` fixed-size rows computed on the host (reserved
    /// metadata such as prim ids): every row live.
    pub(crate) fn host_fixed(values: &[u8], nrows: u32) -> Image {
        let mut buf = Buf::zeroed(values.len());
        buf.bytes_mut().copy_from_slice(values);
        Image { data: Arc::new(buf), arrays: None, live: RowSet::full(nrows), nrows, device: Device::Host }
    }

    /// An image of array rows computed on the host: row `i` is
    /// `values[offsets[i]..offsets[i + 1]]`, every row live.
    pub(crate) fn host_arrays(values: &[u8], offsets: &[u64]) -> Image {
        let mut image = Image::host_fixed(values, offsets.len().saturating_sub(1) as u32);
        let refs = offsets.windows(2).map(|w| ArrayRef { buf: 0, start: w[0], len: w[1] - w[0] }).collect();
        let data = std::mem::replace(&mut image.data, Arc::new(Buf::zeroed(0)));
        image.arrays = Some(ArrayIndex { bufs: vec![data], refs, kept: 1 });
        image
    }

    /// A host view of a fixed-size image's bytes: `nrows * row_bytes`,
    /// stale bytes in rows that are not live.
    pub(crate) fn fixed_bytes(&self) -> &[u8] {
        self.data.bytes()
    }

    /// Where each row's elements are (array images; empty otherwise).
    pub(crate) fn array_refs(&self) -> Vec<ArrayRef> {
        self.arrays.as_ref().map(|index| index.refs.clone()).unwrap_or_default()
    }

    /// A host view of one array row's elements.
    pub(crate) fn array_row(&self, r: ArrayRef) -> &[u8] {
        self.arrays.as_ref().map_or(&[], |index| index.bytes(r))
    }

    /// Host views of the elements of the array rows `refs`, in order: what
    /// `array_row` gives for each, with the buffers looked up once (a read
    /// group of thousands of rows hands out one view per row).
    pub(crate) fn array_rows<'a>(&'a self, refs: &'a [ArrayRef]) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let bufs: SmallVec<[&[u8]; 4]> =
            self.arrays.as_ref().map(|index| index.bufs.iter().map(|b| b.bytes()).collect()).unwrap_or_default();
        refs.iter().map(move |r| {
            if r.len == 0 { &[][..] } else { &bufs[r.buf as usize][r.start as usize..(r.start + r.len) as usize] }
        })
    }
}

/// Where one array row's bytes are: `bufs[buf][start..start + len]`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ArrayRef {
    pub(crate) buf: u32,
    pub(crate) start: u64,
    pub(crate) len: u64,
}

/// The rows of an array column at one version: each row points into one of
/// the write buffers that produced it. Building it copies no element bytes.
#[derive(Clone, Debug, Default)]
pub(crate) struct ArrayIndex {
    pub(crate) bufs: Vec<Arc<Buffer>>,
    pub(crate) refs: Vec<ArrayRef>,
    /// How many buffers were left by the last prune (see [`Self::prune`]).
    pub(crate) kept: usize,
}

impl ArrayIndex {
    /// The bytes `r` points at.
    pub(crate) fn bytes(&self, r: ArrayRef) -> &[u8] {
        if r.len == 0 {
            return &[];
        }
        &self.bufs[r.buf as usize].bytes()[r.start as usize..(r.start + r.len) as usize]
    }

    /// Drops buffers no live row points into, once the buffers have doubled
    /// since the last prune: a prune scans every row, so doing it at every
    /// version would make a one-row write to a large column cost the
    /// column; this way at most as many dead buffers as live ones are kept.
    /// The buffers dropped are handed to `dropped` (the column's pool takes
    /// back those nothing else holds).
    fn prune(&mut self, live: &RowSet, dropped: impl FnMut(Arc<Buffer>)) {
        if self.bufs.len() < 2 * self.kept.max(4) {
            return;
        }
        self.prune_now(live, dropped);
        self.kept = self.bufs.len();
    }

    fn prune_now(&mut self, live: &RowSet, mut dropped: impl FnMut(Arc<Buffer>)) {
        let mut used = vec![false; self.bufs.len()];
        for (row, r) in self.refs.iter().enumerate() {
            if live.contains(row as u32) && r.len > 0 {
                used[r.buf as usize] = true;
            }
        }
        if used.iter().all(|u| *u) {
            return;
        }
        let mut remap = vec![0u32; self.bufs.len()];
        let mut kept = Vec::new();
        for (i, b) in std::mem::take(&mut self.bufs).into_iter().enumerate() {
            if used[i] {
                remap[i] = kept.len() as u32;
                kept.push(b);
            } else {
                dropped(b);
            }
        }
        for (row, r) in self.refs.iter_mut().enumerate() {
            if live.contains(row as u32) && r.len > 0 {
                r.buf = remap[r.buf as usize];
            } else {
                *r = ArrayRef::default();
            }
        }
        self.bufs = kept;
    }
}

impl ColumnGuard<'_> {
    /// The image of the version at `idx`, built if needed.
    ///
    /// With `may_steal` the caller is about to drop every version before
    /// `idx`: the newest older image (or full write of a version that
    /// stands alone) is then reused in place, without a copy, when no read
    /// group holds it.
    pub(super) fn image_at(&mut self, idx: usize, may_steal: bool) -> Arc<Image> {
        if let Some(image) = &self.state.versions[idx].image {
            return image.clone();
        }
        if self.column.storage.kind == ValueKind::Array {
            return self.array_image_at(idx, may_steal);
        }
        let row_bytes = self.column.row_bytes;
        let memory = &self.column.memory;
        let st = &mut *self.state;
        let target_rows = st.versions[idx].nrows;
        let target_len = target_rows as usize * row_bytes;

        // Where the fold starts: the newest version up to this one that
        // stands alone (its full write; this version's own, or one a trim
        // kept without an image) or has an image, or nothing. `skip` parts
        // of version `from` are in the start already.
        let (from, skip, mut data, mut live) =
            match (0..=idx).rev().find(|i| st.versions[*i].image.is_some() || st.versions[*i].stands_alone()) {
                // An older one about to be dropped gives its full write up,
                // so that a buffer nobody else holds is folded in place.
                Some(b) if st.versions[b].image.is_none() => {
                    let rows = RowSet::full(st.versions[b].nrows);
                    if may_steal && b < idx {
                        let Part::Write { data, .. } = st.versions[b].parts.remove(0) else { unreachable!() };
                        (b, 0, Some(data), rows)
                    } else {
                        let Some(Part::Write { data, .. }) = st.versions[b].parts.first() else { unreachable!() };
                        (b, 1, Some(data.clone()), rows)
                    }
                }
                Some(b) => {
                    let base = if may_steal {
                        // Only this fold needs version b from now on: take its
                        // image and parts so a uniquely held buffer can be
                        // written in place.
                        st.versions[b].parts.clear();
                        st.versions[b].keys.clear();
                        st.versions[b].image.take().expect("found above")
                    } else {
                        st.versions[b].image.clone().expect("found above")
                    };
                    let base = Arc::try_unwrap(base).unwrap_or_else(|shared| Image {
                        data: shared.data.clone(),
                        arrays: None,
                        live: shared.live.clone(),
                        nrows: shared.nrows,
                        device: shared.device,
                    });
                    (b + 1, 0, Some(base.data), base.live)
                }
                None => (0, 0, None, RowSet::new()),
            };
        let pending_parts = (from..=idx).any(|i| st.versions[i].parts.len() > if i == from { skip } else { 0 });
        let image_data = match data.take() {
            Some(d) if !pending_parts && d.len() >= target_len => d,
            base => {
                // A buffer nobody else references (a stolen base) is folded
                // in place; anything shared is copied first.
                let mut buf = match base.map(Arc::try_unwrap) {
                    Some(Ok(buf)) => buf,
                    Some(Err(shared)) => memory.copy(&shared),
                    None => memory.empty(),
                };
                memory.resize(&mut buf, target_len);
                for i in from..=idx {
                    let parts = &st.versions[i].parts;
                    for part in &parts[if i == from { skip } else { 0 }..] {
                        apply(memory, part, &mut buf, &mut live, row_bytes);
                    }
                }
                Arc::new(buf)
            }
        };
        let device = memory.device();
        let image = Arc::new(Image { data: image_data, arrays: None, live, nrows: target_rows, device });
        st.versions[idx].image = Some(image.clone());
        image
    }

    /// The image of an array column's version: the newest older image's row
    /// table with this and the intervening versions' parts applied. With
    /// `may_steal` (see [`Self::image_at`]) a uniquely held older table is
    /// taken over instead of copied.
    fn array_image_at(&mut self, idx: usize, may_steal: bool) -> Arc<Image> {
        let st = &mut *self.state;
        let target_rows = st.versions[idx].nrows;
        let base = (0..=idx).rev().find(|i| st.versions[*i].image.is_some() || st.versions[*i].stands_alone());
        let (from, mut index, mut live) = match base {
            // One that stands alone (this one, or one a trim kept without
            // an image): its full write sets every row, so the fold starts
            // there.
            Some(b) if st.versions[b].image.is_none() => (b, ArrayIndex::default(), RowSet::new()),
            Some(b) if may_steal => {
                std::mem::take(&mut st.versions[b].parts)
                    .into_iter()
                    .for_each(|p| recycle_part(&self.column.memory, p));
                st.versions[b].keys.clear();
                let image = st.versions[b].image.take().expect("found above");
                match Arc::try_unwrap(image) {
                    Ok(image) => (b + 1, image.arrays.unwrap_or_default(), image.live),
                    Err(shared) => (b + 1, shared.arrays.clone().unwrap_or_default(), shared.live.clone()),
                }
            }
            Some(b) => {
                let image = st.versions[b].image.as_ref().expect("found above");
                (b + 1, image.arrays.clone().unwrap_or_default(), image.live.clone())
            }
            None => (0, ArrayIndex::default(), RowSet::new()),
        };
        index.refs.resize(target_rows as usize, ArrayRef::default());
        for v in st.versions.range(from..=idx) {
            for part in &v.parts {
                apply_array(part, &mut index, &mut live);
            }
        }
        let memory = &self.column.memory;
        // A pruned buffer nothing else holds (a trim is about to drop the
        // versions before `idx`) is the column's to reuse: an array write
        // loop otherwise allocated, zeroed and page-faulted a fresh buffer
        // per write. One an older image or a read still holds stays theirs.
        index.prune(&live, |data| recycle(memory, data));
        let (data, device) = (Arc::new(memory.empty()), memory.device());
        let image = Arc::new(Image { data, arrays: Some(index), live, nrows: target_rows, device });
        st.versions[idx].image = Some(image.clone());
        image
    }
}

/// The parts of a merged version, shortened: every part that later ones
/// wholly overwrite is dropped, and when the rest holds more rows than the
/// column, it is rebuilt as one delete and one write part with the last
/// change of each row. Buffers of dropped parts go back to the pool.
pub(super) fn compact(mut parts: Parts, nrows: u32, row_bytes: usize, memory: &ColumnMemory) -> Parts {
    // Everything before the last write of every row first: the usual case
    // (a loop writing every row), found without building a row set.
    if let Some(k) = parts
        .iter()
        .rposition(|p| matches!(p, Part::Write { rows, .. } | Part::WriteArray { rows, .. } if rows.covers_all(nrows)))
    {
        parts.drain(..k).for_each(|p| recycle_part(memory, p));
    }
    drop_overwritten(&mut parts, memory);
    let total: usize = parts.iter().map(|p| p.rows().len()).sum();
    if parts.len() <= 2 || total <= nrows as usize {
        return parts;
    }
    // Per row: the last change, as (part, index in part); deletes use u32::MAX.
    const NONE: (u32, u32) = (u32::MAX, u32::MAX);
    let mut last = vec![NONE; nrows as usize];
    for (pi, part) in parts.iter().enumerate() {
        let is_delete = matches!(part, Part::Delete { .. });
        let rows = part.rows();
        for i in 0..rows.len() {
            last[rows.get(i) as usize] = (pi as u32, if is_delete { u32::MAX } else { i as u32 });
        }
    }
    let written: Vec<u32> =
        (0..nrows).filter(|r| last[*r as usize] != NONE && last[*r as usize].1 != u32::MAX).collect();
    let deleted: Vec<u32> =
        (0..nrows).filter(|r| last[*r as usize].0 != u32::MAX && last[*r as usize].1 == u32::MAX).collect();
    // Where the last write of a row is: its buffer and byte range.
    let source = |r: u32| -> (&Buffer, std::ops::Range<usize>) {
        let (pi, i) = last[r as usize];
        let i = i as usize;
        match &parts[pi as usize] {
            Part::Write { data, .. } => (data, i * row_bytes..(i + 1) * row_bytes),
            Part::WriteArray { data, offsets, .. } => (data, offsets[i] as usize..offsets[i + 1] as usize),
            Part::Delete { .. } => unreachable!("deletes are not recorded as writes"),
        }
    };
    let arrays = parts.iter().any(|p| matches!(p, Part::WriteArray { .. }));
    let mut offsets = Vec::with_capacity(written.len() + 1);
    offsets.push(0u64);
    for r in &written {
        offsets.push(offsets.last().copied().unwrap_or(0) + source(*r).1.len() as u64);
    }
    let len = offsets.last().copied().unwrap_or(0) as usize;
    let buf = memory.gather_ranges(written.iter().map(|r| source(*r)), len);
    parts.into_iter().for_each(|p| recycle_part(memory, p));
    let mut out = Parts::new();
    if !deleted.is_empty() {
        out.push(Part::Delete { rows: Rows::from_vec(deleted) });
    }
    if !written.is_empty() {
        let (rows, data) = (Rows::from_vec(written), Arc::new(buf));
        out.push(if arrays {
            Part::WriteArray { rows, data, offsets: offsets.into() }
        } else {
            Part::Write { rows, data }
        });
    }
    out
}

/// Drops the parts whose every row a later part writes or deletes (they no
/// longer show in the merged state): a producer writing the same prims
/// each tick without sealing then keeps one part, and its buffers cycle
/// through the pool, instead of piling up until the parts hold more rows
/// than the column.
fn drop_overwritten(parts: &mut Parts, memory: &ColumnMemory) {
    if parts.len() < 2 {
        return;
    }
    let mut later = RowSet::new();
    let mut keep = vec![true; parts.len()];
    for (i, part) in parts.iter().enumerate().rev() {
        let rows = part.rows();
        let covered = match rows {
            Rows::Run { start, len } => later.contains_range(*start, *len),
            Rows::List(list) => list.iter().all(|r| later.contains(*r)),
        };
        if covered {
            keep[i] = false;
        } else if i > 0 {
            later.insert_rows(rows);
        }
    }
    if keep.iter().all(|k| *k) {
        return;
    }
    let mut keep = keep.into_iter();
    let (kept, dropped): (Parts, Parts) = std::mem::take(parts).into_iter().partition(|_| keep.next() == Some(true));
    dropped.into_iter().for_each(|p| recycle_part(memory, p));
    *parts = kept;
}

/// Returns a dropped part's buffer to the column's memory when nothing
/// else holds it.
pub(super) fn recycle_part(memory: &ColumnMemory, part: Part) {
    match part {
        Part::Write { data, .. } | Part::WriteArray { data, .. } => recycle(memory, data),
        Part::Delete { .. } => {}
    }
}

/// Returns a buffer to the column's memory when nothing else holds it.
pub(super) fn recycle(memory: &ColumnMemory, data: Arc<Buffer>) {
    if let Ok(buf) = Arc::try_unwrap(data) {
        memory.recycle(buf);
    }
}

/// Folds one fixed-size part onto an image's buffer and live set.
fn apply(memory: &ColumnMemory, part: &Part, buf: &mut Buffer, live: &mut RowSet, row_bytes: usize) {
    match part {
        Part::Write { rows, data } => {
            memory.scatter_rows(buf, data, row_bytes, rows);
            live.insert_rows(rows);
        }
        Part::WriteArray { .. } => unreachable!("array parts are folded by apply_array"),
        Part::Delete { rows } => live.remove_rows(rows),
    }
}

fn apply_array(part: &Part, index: &mut ArrayIndex, live: &mut RowSet) {
    match part {
        Part::WriteArray { rows, data, offsets } => {
            let buf = index.bufs.len() as u32;
            index.bufs.push(data.clone());
            for i in 0..rows.len() {
                let row = rows.get(i) as usize;
                if row >= index.refs.len() {
                    index.refs.resize(row + 1, ArrayRef::default());
                }
                index.refs[row] = ArrayRef { buf, start: offsets[i], len: offsets[i + 1] - offsets[i] };
            }
            live.insert_rows(rows);
        }
        Part::Write { .. } => unreachable!("fixed parts are folded by apply"),
        Part::Delete { rows } => live.remove_rows(rows),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_images_view_their_rows() {
        let fixed = Image::host_fixed(&[1, 2, 3, 4, 5, 6, 7, 8], 2);
        assert_eq!((fixed.fixed_bytes(), fixed.nrows, fixed.device), (&[1, 2, 3, 4, 5, 6, 7, 8][..], 2, Device::Host));
        assert!(fixed.live.contains(0) && fixed.live.contains(1));
        assert!(fixed.array_refs().is_empty());

        let arrays = Image::host_arrays(&[9, 8, 7, 6, 5], &[0, 3, 3, 5]);
        assert_eq!(arrays.nrows, 3);
        assert!(arrays.fixed_bytes().is_empty(), "an array image's rows live in their buffers");
        let rows: Vec<&[u8]> = arrays.array_refs().into_iter().map(|r| arrays.array_row(r)).collect();
        assert_eq!(rows, [&[9, 8, 7][..], &[][..], &[6, 5][..]]);
    }
}
