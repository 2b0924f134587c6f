//! The row kernels: their table, the choice of unit, launch geometry, the
//! host-side mask prefix, the PTX, and a CPU reference of every kernel.
//!
//! The kernels live in `kernels/rows.cu`, compiled by clang-14 into the
//! committed `kernels/rows.ptx` (`cargo xtask codegen`; `--check` verifies
//! the source hash, regeneration and `ptxas` assembly). Every row kernel
//! comes in four entry points, one per [`Unit`]: a row of `units_per_row`
//! units, strides in units. Identity copies are `cuMemcpy*Async`, not
//! kernels.
//!
//! Parameters of the entry points, in order (`T` the unit; pointers are
//! device addresses, `u32` counts are per launch, see [`split`]):
//!
//! | kernel | parameters |
//! |---|---|
//! | `gather_rows_T` | `dst: *T, src: *T, idx: *u64, rows: u32, units_per_row: u32, src_stride: u64, dst_stride: u64` |
//! | `scatter_rows_T` | `dst: *T, src: *T, idx: *u64, rows: u32, units_per_row: u32, src_stride: u64, dst_stride: u64` |
//! | `masked_compact_T` | `dst: *T, src: *T, mask: *u64, prefix: *u32, rows: u32, units_per_row: u32, src_stride: u64, dst_stride: u64` |
//! | `fill_rows_T` | `dst: *T, pattern: *T, rows: u32, units_per_row: u32, dst_stride: u64` |
//! | `strided_rows_T` | `dst: *T, src: *T, rows: u32, units_per_row: u32, src_stride: u64` |
//! | `copy_ranges` | `dst: *u8, srcs: *u64, lens: *u64, offs: *u64, rows: u32` |
//! | `spin_ns` | `ns: u64, out: *u32, value: u32` |
//!
//! The functions of [`reference`](mod@reference) take the same arguments with the same
//! meaning (slices for pointers): they are the oracle of the device tests.

use std::ops::Range;

/// The PTX of every kernel (`.version 7.0`, `.target sm_80`), for
/// `Module::from_ptx`; the driver JIT-compiles it for the device at hand.
pub const PTX: &str = include_str!("kernels/rows.ptx");

/// The unit a row kernel moves per thread and step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// 1 byte: any row width, stride and address.
    U8,
    /// 4 bytes.
    U32,
    /// 8 bytes.
    U64,
    /// 16 bytes (`ld/st.global.v2.u64`): a 4x4 f64 row moves as 8 units.
    U128,
}

impl Unit {
    /// Every unit, widest first.
    pub const ALL: [Unit; 4] = [Unit::U128, Unit::U64, Unit::U32, Unit::U8];

    /// The unit's size in bytes.
    pub const fn bytes(self) -> u64 {
        match self {
            Unit::U8 => 1,
            Unit::U32 => 4,
            Unit::U64 => 8,
            Unit::U128 => 16,
        }
    }

    /// The widest unit that divides the row width, both strides and both
    /// base addresses (all in bytes), so that every row starts on a unit and
    /// is a whole number of units. Pass 0 for what a kernel does not have (a
    /// fill has no source stride): 0 is a multiple of every unit. Rows of
    /// width 0 get [`Unit::U128`] and move nothing.
    pub fn widest(row_bytes: u64, strides: [u64; 2], addrs: [u64; 2]) -> Unit {
        let all = row_bytes | strides[0] | strides[1] | addrs[0] | addrs[1];
        Unit::ALL.into_iter().find(|u| all.is_multiple_of(u.bytes())).unwrap_or(Unit::U8)
    }
}

/// A kernel of `rows.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// dst row i ← src row `idx[i]` (index-map writes; deduplicated or
    /// broadcast maps).
    GatherRows,
    /// dst row `idx[i]` ← src row i (folds a payload onto an image by row
    /// map); the targets are distinct.
    ScatterRows,
    /// dst row rank(i) ← src row i for every set bit i of the mask; rank(i)
    /// = `prefix[i / 64]` (see [`mask_prefix`]) + the set bits below i in
    /// its word.
    MaskedCompact,
    /// Every dst row ← one pattern row (broadcast; zero rows).
    FillRows,
    /// Compact dst rows ← rows `src_stride` units apart (a 1-D strided
    /// source, e.g. a column slice).
    StridedRows,
    /// Ragged rows, bytes only, one block per row: row r's `lens[r]` bytes
    /// at device address `srcs[r]` → `dst + offs[r]`.
    CopyRanges,
    /// Test helper: holds its stream for `ns` nanoseconds (`%globaltimer`),
    /// then writes `value` to `*out`. Launch with one block of one thread.
    SpinNs,
}

impl Kernel {
    /// Every kernel.
    pub const ALL: [Kernel; 7] = [
        Kernel::GatherRows,
        Kernel::ScatterRows,
        Kernel::MaskedCompact,
        Kernel::FillRows,
        Kernel::StridedRows,
        Kernel::CopyRanges,
        Kernel::SpinNs,
    ];

    /// The units the kernel has entry points for: all four for the row
    /// kernels; only [`Unit::U8`] for [`Kernel::CopyRanges`] (bytes) and
    /// [`Kernel::SpinNs`] (its one entry point).
    pub const fn units(self) -> &'static [Unit] {
        match self {
            Kernel::CopyRanges | Kernel::SpinNs => &[Unit::U8],
            _ => &Unit::ALL,
        }
    }

    /// The entry point of the kernel for `unit` in [`PTX`]; `None` when the
    /// kernel has no entry for that unit (see [`Kernel::units`]).
    pub fn entry(self, unit: Unit) -> Option<&'static str> {
        ENTRIES.iter().find(|e| e.0 == self && e.1 == unit).map(|e| e.2)
    }
}

/// The kernel table: every (kernel, unit) and its entry point in [`PTX`].
pub const ENTRIES: [(Kernel, Unit, &str); 22] = {
    use Kernel::*;
    use Unit::*;
    [
        (GatherRows, U8, "gather_rows_u8"),
        (GatherRows, U32, "gather_rows_u32"),
        (GatherRows, U64, "gather_rows_u64"),
        (GatherRows, U128, "gather_rows_u128"),
        (ScatterRows, U8, "scatter_rows_u8"),
        (ScatterRows, U32, "scatter_rows_u32"),
        (ScatterRows, U64, "scatter_rows_u64"),
        (ScatterRows, U128, "scatter_rows_u128"),
        (MaskedCompact, U8, "masked_compact_u8"),
        (MaskedCompact, U32, "masked_compact_u32"),
        (MaskedCompact, U64, "masked_compact_u64"),
        (MaskedCompact, U128, "masked_compact_u128"),
        (FillRows, U8, "fill_rows_u8"),
        (FillRows, U32, "fill_rows_u32"),
        (FillRows, U64, "fill_rows_u64"),
        (FillRows, U128, "fill_rows_u128"),
        (StridedRows, U8, "strided_rows_u8"),
        (StridedRows, U32, "strided_rows_u32"),
        (StridedRows, U64, "strided_rows_u64"),
        (StridedRows, U128, "strided_rows_u128"),
        (CopyRanges, U8, "copy_ranges"),
        (SpinNs, U8, "spin_ns"),
    ]
};

/// Threads per block: every kernel is written for 256.
pub const THREADS: u32 = 256;

/// Blocks per SM at most: enough resident warps to hide memory latency;
/// grid-stride loops cover the rest of a launch.
pub const BLOCKS_PER_SM: u32 = 16;

/// Blocks per launch at most whatever the SM count, so that the grid
/// stride (blocks × [`THREADS`]) stays below 2^30.
pub const MAX_BLOCKS: u32 = 1 << 22;

/// Units per launch at most. The kernels index a launch's units in 32 bits;
/// with at most 2^31 units and a grid stride below 2^30 an index plus the
/// stride never wraps.
pub const MAX_LAUNCH_UNITS: u64 = 1 << 31;

/// The grid of a row-kernel launch of `units` units on a device of
/// `sm_count` SMs: one thread per unit, capped at `sm_count` ×
/// [`BLOCKS_PER_SM`] blocks (and [`MAX_BLOCKS`]); 0 when there is nothing to
/// launch. A `sm_count` of 0 counts as 1.
pub fn grid(units: u64, sm_count: u32) -> u32 {
    let cap = sm_count.max(1).saturating_mul(BLOCKS_PER_SM).min(MAX_BLOCKS);
    // The cap fits in u32, so the minimum does.
    units.div_ceil(u64::from(THREADS)).min(u64::from(cap)) as u32
}

/// The grid of a [`Kernel::CopyRanges`] launch of `rows` rows: one block per
/// row, capped as in [`grid`]; 0 when there is nothing to launch.
pub fn grid_rows(rows: u64, sm_count: u32) -> u32 {
    let cap = sm_count.max(1).saturating_mul(BLOCKS_PER_SM).min(MAX_BLOCKS);
    rows.min(u64::from(cap)) as u32
}

/// One launch of a split operation: rows `first_row..first_row + rows`.
///
/// The caller offsets the per-row arguments by `first_row`: `idx` and the
/// compact side's base (gather: dst by `first_row × dst_stride`; scatter:
/// src by `first_row × src_stride`; strided: src by `first_row × src_stride`
/// and dst by `first_row × units_per_row`; fill: dst; copy_ranges: `srcs`,
/// `lens`, `offs`). For masked_compact see [`Launch::mask_words`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The first row of the operation this launch covers.
    pub first_row: u64,
    /// How many rows, the kernel's `rows` argument.
    pub rows: u32,
}

impl Launch {
    /// The mask words of a masked_compact launch (its `first_row` is a
    /// multiple of 64 when split with `row_align` 64): pass `mask` and the
    /// [`mask_prefix`] of exactly these words, src offset by `first_row ×
    /// src_stride`, and dst offset by the set bits of the words before
    /// ([`mask_count`]) × `dst_stride`.
    pub fn mask_words(&self) -> Range<u64> {
        self.first_row / 64..(self.first_row + u64::from(self.rows)).div_ceil(64)
    }
}

/// The launches of an operation on `rows` rows of `units_per_row` units:
/// each has at most [`MAX_LAUNCH_UNITS`] units and starts at a multiple of
/// `row_align` rows (64 for masked_compact, so a launch starts at a mask
/// word; 1 otherwise; 0 counts as 1). No launches when there is nothing to
/// move; `None` when even `row_align` rows are over the limit (rows of
/// gigabytes: the caller copies them otherwise).
pub fn split(rows: u64, units_per_row: u64, row_align: u64) -> Option<Splits> {
    let align = row_align.max(1);
    if rows == 0 || units_per_row == 0 {
        return Some(Splits { next: 0, end: 0, step: 1 });
    }
    let step = MAX_LAUNCH_UNITS / units_per_row / align * align;
    if step == 0 {
        return None;
    }
    Some(Splits { next: 0, end: rows, step })
}

/// The launches of [`split`], in row order.
#[derive(Clone, Debug)]
pub struct Splits {
    next: u64,
    end: u64,
    step: u64,
}

impl Iterator for Splits {
    type Item = Launch;

    fn next(&mut self) -> Option<Launch> {
        if self.next >= self.end {
            return None;
        }
        let rows = self.step.min(self.end - self.next);
        let launch = Launch { first_row: self.next, rows: rows as u32 };
        self.next += rows;
        Some(launch)
    }
}

/// The per-word exclusive prefix of a mask's set bits: `prefix[w]` = the set
/// bits of `words[..w]`, the `prefix` argument of masked_compact. Computed
/// on the host so that the kernel needs no scan.
///
/// # Panics
///
/// When a prefix exceeds `u32::MAX`: impossible for the words of one launch
/// of [`split`] (fewer than 2^31 rows).
pub fn mask_prefix(words: &[u64]) -> Vec<u32> {
    let mut seen = 0u64;
    words
        .iter()
        .map(|w| {
            let p = u32::try_from(seen).expect("a launch's mask has fewer than 2^32 set bits");
            seen += u64::from(w.count_ones());
            p
        })
        .collect()
}

/// The set bits of `words`: the rows a masked_compact over them writes.
pub fn mask_count(words: &[u64]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// The kernels on the CPU, on byte slices: the oracle of the device tests.
///
/// Each takes the [`Unit`] first and then the kernel's parameters in order,
/// with the same meaning (indices and strides in units, counts per launch);
/// a device pointer is a slice starting at that address. They panic where
/// the device kernel would read or write out of bounds, and on a launch of
/// more than [`MAX_LAUNCH_UNITS`] units (the host's split is wrong).
pub mod reference {
    use super::{MAX_LAUNCH_UNITS, Unit};

    /// The byte range of `units` units starting at unit `at`.
    fn span(unit: Unit, at: u64, units: u32) -> std::ops::Range<usize> {
        let start = (at * unit.bytes()) as usize;
        start..start + (u64::from(units) * unit.bytes()) as usize
    }

    fn check_launch(rows: u32, units_per_row: u32) {
        assert!(
            u64::from(rows) * u64::from(units_per_row) <= MAX_LAUNCH_UNITS,
            "a launch of {rows} rows × {units_per_row} units is over MAX_LAUNCH_UNITS: split it"
        );
    }

    /// `gather_rows`: dst row i ← src row `idx[i]`, for i < `rows`.
    #[allow(clippy::too_many_arguments)] // the kernel's parameters, in order
    pub fn gather_rows(
        unit: Unit,
        dst: &mut [u8],
        src: &[u8],
        idx: &[u64],
        rows: u32,
        units_per_row: u32,
        src_stride: u64,
        dst_stride: u64,
    ) {
        check_launch(rows, units_per_row);
        for (row, &from) in idx[..rows as usize].iter().enumerate() {
            dst[span(unit, row as u64 * dst_stride, units_per_row)]
                .copy_from_slice(&src[span(unit, from * src_stride, units_per_row)]);
        }
    }

    /// `scatter_rows`: dst row `idx[i]` ← src row i, for i < `rows`.
    #[allow(clippy::too_many_arguments)] // the kernel's parameters, in order
    pub fn scatter_rows(
        unit: Unit,
        dst: &mut [u8],
        src: &[u8],
        idx: &[u64],
        rows: u32,
        units_per_row: u32,
        src_stride: u64,
        dst_stride: u64,
    ) {
        check_launch(rows, units_per_row);
        for (row, &to) in idx[..rows as usize].iter().enumerate() {
            dst[span(unit, to * dst_stride, units_per_row)]
                .copy_from_slice(&src[span(unit, row as u64 * src_stride, units_per_row)]);
        }
    }

    /// `masked_compact`: dst row `prefix[i / 64]` + (set bits below i in
    /// `mask[i / 64]`) ← src row i, for each i < `rows` whose bit is set.
    /// Bits at or past `rows` are not looked at.
    #[allow(clippy::too_many_arguments)] // the kernel's parameters, in order
    pub fn masked_compact(
        unit: Unit,
        dst: &mut [u8],
        src: &[u8],
        mask: &[u64],
        prefix: &[u32],
        rows: u32,
        units_per_row: u32,
        src_stride: u64,
        dst_stride: u64,
    ) {
        check_launch(rows, units_per_row);
        for row in 0..rows {
            let (word, bit) = (mask[row as usize / 64], 1u64 << (row % 64));
            if word & bit != 0 {
                let rank = prefix[row as usize / 64] + (word & (bit - 1)).count_ones();
                dst[span(unit, u64::from(rank) * dst_stride, units_per_row)]
                    .copy_from_slice(&src[span(unit, u64::from(row) * src_stride, units_per_row)]);
            }
        }
    }

    /// `fill_rows`: every dst row i < `rows` ← the pattern row.
    pub fn fill_rows(unit: Unit, dst: &mut [u8], pattern: &[u8], rows: u32, units_per_row: u32, dst_stride: u64) {
        check_launch(rows, units_per_row);
        let pattern = &pattern[span(unit, 0, units_per_row)];
        for row in 0..rows {
            dst[span(unit, u64::from(row) * dst_stride, units_per_row)].copy_from_slice(pattern);
        }
    }

    /// `strided_rows`: compact dst row i (at unit i × `units_per_row`) ← src
    /// row i (at unit i × `src_stride`), for i < `rows`.
    pub fn strided_rows(unit: Unit, dst: &mut [u8], src: &[u8], rows: u32, units_per_row: u32, src_stride: u64) {
        check_launch(rows, units_per_row);
        for row in 0..rows {
            dst[span(unit, u64::from(row) * u64::from(units_per_row), units_per_row)]
                .copy_from_slice(&src[span(unit, u64::from(row) * src_stride, units_per_row)]);
        }
    }

    /// `copy_ranges`: row r's `lens[r]` bytes at `srcs[r]` → `dst[offs[r]..]`,
    /// for r < `rows`. On the device `srcs` holds addresses; here they are
    /// offsets into `src` (one buffer holding every source row).
    pub fn copy_ranges(dst: &mut [u8], src: &[u8], srcs: &[u64], lens: &[u64], offs: &[u64], rows: u32) {
        check_launch(rows, 1);
        for r in 0..rows as usize {
            let (from, len, to) = (srcs[r] as usize, lens[r] as usize, offs[r] as usize);
            dst[to..to + len].copy_from_slice(&src[from..from + len]);
        }
    }

    /// `spin_ns`: waits `ns` nanoseconds, then writes `value` to `out`.
    pub fn spin_ns(ns: u64, out: &mut u32, value: u32) {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
        *out = value;
    }
}

#[cfg(test)]
mod tests {
    use super::reference as r;
    use super::*;

    /// Distinct-looking bytes (7i + 1, wrapping), so a misplaced copy shows.
    fn ramp(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + 1) as u8).collect()
    }

    /// A deterministic pseudo-random sequence (a 64-bit LCG).
    fn lcg(seed: u64) -> impl Iterator<Item = u64> {
        let mut s = seed;
        std::iter::repeat_with(move || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            s ^ (s >> 29)
        })
    }

    #[test]
    fn every_entry_is_in_the_ptx() {
        for (kernel, unit, name) in ENTRIES {
            assert!(PTX.contains(&format!(".visible .entry {name}(")), "{name} is not an entry of rows.ptx");
            assert_eq!(kernel.entry(unit), Some(name));
            assert!(kernel.units().contains(&unit));
        }
        for kernel in Kernel::ALL {
            for unit in Unit::ALL {
                assert_eq!(kernel.entry(unit).is_some(), kernel.units().contains(&unit), "{kernel:?} {unit:?}");
            }
        }
        // No entry the table does not know.
        assert_eq!(PTX.matches(".entry ").count(), ENTRIES.len());
        assert_eq!(Kernel::ALL.iter().map(|k| k.units().len()).sum::<usize>(), ENTRIES.len());
        assert_eq!(Kernel::MaskedCompact.entry(Unit::U128), Some("masked_compact_u128"));
        assert_eq!(Kernel::CopyRanges.entry(Unit::U32), None);
    }

    #[test]
    fn ptx_targets_sm_80() {
        assert!(PTX.lines().any(|l| l.trim() == ".target sm_80"));
        assert!(PTX.lines().any(|l| l.trim() == ".address_size 64"));
    }

    #[test]
    fn unit_choice() {
        // A 4x4 f64 row, compact, aligned buffers.
        assert_eq!(Unit::widest(128, [128, 128], [0x7000_0000, 0x7000_1000]), Unit::U128);
        // A 3-f32 row: 12 bytes.
        assert_eq!(Unit::widest(12, [12, 12], [0x1000, 0x2000]), Unit::U32);
        // 24-byte rows, 40-byte source stride: 8 divides all.
        assert_eq!(Unit::widest(24, [40, 24], [0x1000, 0x2000]), Unit::U64);
        // 16-byte rows at an address 8 past 16: 8.
        assert_eq!(Unit::widest(16, [16, 16], [0x1008, 0x2000]), Unit::U64);
        // Two-byte rows: no 2-byte unit, so bytes.
        assert_eq!(Unit::widest(2, [2, 2], [0, 0]), Unit::U8);
        assert_eq!(Unit::widest(16, [16, 16], [0x1001, 0x2000]), Unit::U8);
        assert_eq!(Unit::widest(16, [16, 17], [0, 0]), Unit::U8);
        // What a kernel lacks is 0; zero-width rows take the widest.
        assert_eq!(Unit::widest(32, [0, 32], [0x100, 0]), Unit::U128);
        assert_eq!(Unit::widest(0, [0, 0], [0, 0]), Unit::U128);
        assert_eq!(Unit::ALL.map(Unit::bytes), [16, 8, 4, 1]);
    }

    #[test]
    fn grid_geometry() {
        assert_eq!(grid(0, 132), 0);
        assert_eq!(grid(1, 132), 1);
        assert_eq!(grid(256, 132), 1);
        assert_eq!(grid(257, 132), 2);
        assert_eq!(grid(1 << 30, 132), 132 * 16);
        assert_eq!(grid(1 << 40, 0), 16);
        assert_eq!(grid(u64::MAX, u32::MAX), MAX_BLOCKS);
        assert!(u64::from(MAX_BLOCKS) * u64::from(THREADS) + MAX_LAUNCH_UNITS <= 1 << 32);
        assert_eq!(grid_rows(0, 132), 0);
        assert_eq!(grid_rows(5, 132), 5);
        assert_eq!(grid_rows(1 << 20, 132), 132 * 16);
    }

    #[test]
    fn launch_splitting() {
        let check = |rows: u64, upr: u64, align: u64| {
            let launches: Vec<Launch> = split(rows, upr, align).expect("splittable").collect();
            let mut next = 0;
            for l in &launches {
                assert_eq!(l.first_row, next);
                assert_eq!(l.first_row % align.max(1), 0);
                assert!(l.rows > 0);
                assert!(u64::from(l.rows) * upr <= MAX_LAUNCH_UNITS);
                next += u64::from(l.rows);
            }
            assert_eq!(next, if upr == 0 { 0 } else { rows });
            launches
        };
        assert_eq!(check(10, 3, 1), [Launch { first_row: 0, rows: 10 }]);
        assert_eq!(check(0, 3, 1), []);
        assert_eq!(check(10, 0, 1), []);
        // Exactly the limit: one launch; one row more: two.
        assert_eq!(check(MAX_LAUNCH_UNITS / 8, 8, 1).len(), 1);
        assert_eq!(check(MAX_LAUNCH_UNITS / 8 + 1, 8, 1).len(), 2);
        // 2^30 rows of 1000 units: 2147483 rows a launch.
        let l = check(1 << 30, 1000, 1);
        assert_eq!(l[0].rows, 2_147_483);
        assert_eq!(l.len(), (1u64 << 30).div_ceil(2_147_483) as usize);
        // Masked: launches start at mask words.
        let l = check(10_000_000_000, 3, 64);
        assert!(l.len() > 1 && l[0].rows % 64 == 0);
        check(u64::from(u32::MAX) * 4, 1, 1);
        // A row over the limit, or 64 rows of one: no split.
        assert!(split(10, MAX_LAUNCH_UNITS + 1, 1).is_none());
        assert!(split(10, 1 << 26, 64).is_none());
        assert!(split(10, 1 << 25, 64).is_some());
        // The mask words of a launch.
        assert_eq!(Launch { first_row: 128, rows: 65 }.mask_words(), 2..4);
        assert_eq!(Launch { first_row: 128, rows: 129 }.mask_words(), 2..5);
        assert_eq!(Launch { first_row: 0, rows: 64 }.mask_words(), 0..1);
    }

    #[test]
    fn mask_prefix_counts_the_bits_before() {
        let mut words: Vec<u64> = lcg(1).take(200).collect();
        words[3] = 0;
        words[4] = u64::MAX;
        words[5] = 1 << 63;
        let prefix = mask_prefix(&words);
        assert_eq!(prefix.len(), words.len());
        for w in 0..words.len() {
            let naive: u64 = words[..w].iter().map(|x| (0..64).filter(|b| (x >> b) & 1 == 1).count() as u64).sum();
            assert_eq!(u64::from(prefix[w]), naive, "word {w}");
        }
        assert_eq!(mask_count(&words), u64::from(prefix[199]) + u64::from(words[199].count_ones()));
        assert!(mask_prefix(&[]).is_empty());
        assert_eq!(mask_prefix(&[u64::MAX, u64::MAX, 0]), [0, 64, 128]);
    }

    #[test]
    fn gather_rows_reference() {
        // 5 source rows of 16 bytes, stride 32 bytes; gather 4 rows (a
        // repeat included) into rows 48 bytes apart.
        let src = ramp(5 * 32);
        let idx = [4u64, 0, 2, 2];
        let mut want = vec![0u8; 4 * 48];
        for (i, &s) in idx.iter().enumerate() {
            want[i * 48..i * 48 + 16].copy_from_slice(&src[s as usize * 32..s as usize * 32 + 16]);
        }
        for unit in Unit::ALL {
            let b = unit.bytes();
            let mut dst = vec![0u8; 4 * 48];
            r::gather_rows(unit, &mut dst, &src, &idx, 4, (16 / b) as u32, 32 / b, 48 / b);
            assert_eq!(dst, want, "{unit:?}");
        }
        // rows bounds the launch, not idx.len().
        let mut dst = vec![0u8; 4 * 48];
        r::gather_rows(Unit::U8, &mut dst, &src, &idx, 1, 16, 32, 48);
        assert_eq!(dst[..16], want[..16]);
        assert!(dst[16..].iter().all(|&b| b == 0));
    }

    #[test]
    fn scatter_rows_reference() {
        // 3 compact source rows of 8 bytes onto rows 1, 4 and 0 of an image
        // of 5 rows, 24 bytes apart.
        let src = ramp(3 * 8);
        let idx = [1u64, 4, 0];
        let image = vec![0xEEu8; 5 * 24];
        let mut want = image.clone();
        for (i, &t) in idx.iter().enumerate() {
            want[t as usize * 24..t as usize * 24 + 8].copy_from_slice(&src[i * 8..i * 8 + 8]);
        }
        for unit in [Unit::U8, Unit::U32, Unit::U64] {
            let b = unit.bytes();
            let mut dst = image.clone();
            r::scatter_rows(unit, &mut dst, &src, &idx, 3, (8 / b) as u32, 8 / b, 24 / b);
            assert_eq!(dst, want, "{unit:?}");
        }
        // Row 2 and row 3 of the image are untouched.
        assert!(want[2 * 24..4 * 24].iter().all(|&b| b == 0xEE));
    }

    /// The masked reference against a naive walk over the set rows.
    fn check_masked(mask: &[u64], rows: u32) {
        let src = ramp(rows as usize * 16);
        let prefix = mask_prefix(mask);
        let set: Vec<u32> = (0..rows).filter(|&i| (mask[i as usize / 64] >> (i % 64)) & 1 == 1).collect();
        let mut want = vec![0u8; rows as usize * 32];
        for (k, &i) in set.iter().enumerate() {
            want[k * 32..k * 32 + 16].copy_from_slice(&src[i as usize * 16..i as usize * 16 + 16]);
        }
        for unit in Unit::ALL {
            let b = unit.bytes();
            let mut dst = vec![0u8; rows as usize * 32];
            r::masked_compact(unit, &mut dst, &src, mask, &prefix, rows, (16 / b) as u32, 16 / b, 32 / b);
            assert_eq!(dst, want, "{unit:?} {mask:x?}");
        }
    }

    #[test]
    fn masked_compact_reference() {
        // Empty and full masks.
        check_masked(&[0, 0], 100);
        check_masked(&[u64::MAX, u64::MAX], 128);
        // Bits in several words, the first and last of each.
        check_masked(&[1 | 1 << 63, 0, 0b1011_0000, 1 << 5], 200);
        check_masked(&lcg(7).take(5).collect::<Vec<_>>(), 300);
        // Bits at or past `rows` are ignored: 70 rows, all bits set.
        check_masked(&[u64::MAX, u64::MAX], 70);

        // A full mask is the identity; an empty one writes nothing.
        let src = ramp(70 * 4);
        let mut dst = vec![0u8; 70 * 4];
        r::masked_compact(Unit::U32, &mut dst, &src, &[u64::MAX, u64::MAX], &[0, 64], 70, 1, 1, 1);
        assert_eq!(dst, src);
        let mut dst = vec![0u8; 70 * 4];
        r::masked_compact(Unit::U32, &mut dst, &src, &[0, 0], &[0, 0], 70, 1, 1, 1);
        assert!(dst.iter().all(|&b| b == 0));
    }

    #[test]
    fn masked_compact_split_matches_one_launch() {
        // 300 rows split into launches of 128 rows at mask words, each with
        // its own prefix and dst offset, as a launcher does (Launch docs).
        let mask: Vec<u64> = lcg(3).take(5).collect();
        let src = ramp(300 * 4);
        let mut whole = vec![0u8; 300 * 4];
        r::masked_compact(Unit::U32, &mut whole, &src, &mask, &mask_prefix(&mask), 300, 1, 1, 1);
        let mut parts = vec![0u8; 300 * 4];
        for first_row in [0u64, 128, 256] {
            let l = Launch { first_row, rows: (300 - first_row).min(128) as u32 };
            let words = &mask[l.mask_words().start as usize..l.mask_words().end as usize];
            let before = mask_count(&mask[..l.mask_words().start as usize]) as usize;
            let src = &src[first_row as usize * 4..];
            r::masked_compact(Unit::U32, &mut parts[before * 4..], src, words, &mask_prefix(words), l.rows, 1, 1, 1);
        }
        assert_eq!(parts, whole);
    }

    #[test]
    fn fill_rows_reference() {
        let pattern: Vec<u8> = (1..=16).collect();
        for unit in Unit::ALL {
            let b = unit.bytes();
            let mut dst = vec![0u8; 3 * 32];
            r::fill_rows(unit, &mut dst, &pattern, 3, (16 / b) as u32, 32 / b);
            for row in 0..3 {
                assert_eq!(dst[row * 32..row * 32 + 16], pattern[..], "{unit:?}");
                assert!(dst[row * 32 + 16..row * 32 + 32].iter().all(|&x| x == 0));
            }
        }
        // Zero rows, bytes.
        let mut dst = vec![9u8; 5];
        r::fill_rows(Unit::U8, &mut dst, &[0], 5, 1, 1);
        assert_eq!(dst, [0; 5]);
    }

    #[test]
    fn strided_rows_reference() {
        // A column slice: 12-byte rows every 40 bytes.
        let src = ramp(6 * 40);
        let want: Vec<u8> = (0..6).flat_map(|i| src[i * 40..i * 40 + 12].to_vec()).collect();
        for unit in [Unit::U8, Unit::U32] {
            let b = unit.bytes();
            let mut dst = vec![0u8; 6 * 12];
            r::strided_rows(unit, &mut dst, &src, 6, (12 / b) as u32, 40 / b);
            assert_eq!(dst, want, "{unit:?}");
        }
    }

    #[test]
    fn copy_ranges_reference() {
        // Rows of 5, 0, 3, 0 and 1 bytes, packed back to back out of order.
        let src = ramp(64);
        let srcs = [10u64, 63, 0, 0, 40];
        let lens = [5u64, 0, 3, 0, 1];
        let offs = [4u64, 9, 0, 3, 3];
        let mut dst = vec![0xAAu8; 10];
        r::copy_ranges(&mut dst, &src, &srcs, &lens, &offs, 5);
        let mut want = vec![0xAAu8; 10];
        want[4..9].copy_from_slice(&src[10..15]);
        want[0..3].copy_from_slice(&src[0..3]);
        want[3] = src[40];
        assert_eq!(dst, want);
        // Only empty rows: nothing is written.
        let mut dst = vec![0xAAu8; 4];
        r::copy_ranges(&mut dst, &src, &[1, 2], &[0, 0], &[4, 0], 2);
        assert_eq!(dst, [0xAA; 4]);
        r::copy_ranges(&mut dst, &src, &[], &[], &[], 0);
    }

    #[test]
    fn spin_ns_reference() {
        let mut out = 0u32;
        let started = std::time::Instant::now();
        r::spin_ns(1_000_000, &mut out, 7);
        assert_eq!(out, 7);
        assert!(started.elapsed() >= std::time::Duration::from_millis(1));
    }

    #[test]
    #[should_panic(expected = "split it")]
    fn a_launch_over_the_limit_is_refused() {
        r::fill_rows(Unit::U8, &mut [], &[0; 1 << 16], 1 << 16, 1 << 16, 1 << 16);
    }
}
