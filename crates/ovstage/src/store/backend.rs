//! The storage-backend seam: the byte operations the store needs from the
//! memory its versions live in, and the CPU store's implementation of them.
//!
//! The version policy (`column.rs`) and image materialisation (`image.rs`)
//! decide *which* rows go where; a backend only moves bytes: it allocates
//! and recycles buffers, uploads rows from the host (a write's payload),
//! scatters a part's rows onto an image (the fold), gathers rows from
//! several buffers into one (compaction) and hands out views. The model is
//! wgpu-hal's `Api`: an associated buffer type, so a device backend keeps
//! its own buffers (device addresses, stream-ordered frees) without the
//! store knowing what they are. `HostMemory`, the CPU store's memory, is
//! the first implementation and the embedded default; a CUDA backend
//! (`../shared/spec/cuda-backend.md`, section 6) implements the same trait
//! with kernels for scatter and gather.
//!
//! The rest of the crate names the memory only through [`ColumnMemory`]
//! and [`Buffer`], and touches bytes only through the store's own types:
//! [`Staging`] (a map group's writable buffer), [`Image`](super::image::Image)
//! (a version's bytes, viewed by read groups) and the mutation pipeline's
//! payload. Feature modules never see a `Buf`.

use std::fmt;
use std::ops::Range;

use ovstage_types::Device;

pub(crate) use super::buf::AllocFailed;
use super::buf::{Buf, BufPool};
use super::rows::Rows;
use super::spread::write_pieces;

/// The memory every column's buffers live in: the one place the store
/// chooses it.
pub(crate) type ColumnMemory = HostMemory;

/// A buffer of [`ColumnMemory`]: a write's gathered payload, a map group's
/// buffer, a version's part.
pub(crate) type Buffer = <ColumnMemory as StorageBackend>::Buffer;

/// The byte operations of one kind of memory.
pub(crate) trait StorageBackend: Send + Sync + 'static {
    /// A buffer in this memory, 8-byte aligned.
    type Buffer: Send + Sync + fmt::Debug + 'static;

    /// Where the buffers are.
    fn device(&self) -> Device;

    /// A buffer of `len` bytes whose contents are unspecified (the caller
    /// overwrites all of it). Fails instead of aborting: sizes come from
    /// clients.
    fn alloc(&self, len: usize) -> Result<Self::Buffer, AllocFailed>;

    /// A buffer of no bytes (the data of an array image, whose rows live in
    /// their writes' buffers).
    fn empty(&self) -> Self::Buffer;

    /// Takes back a buffer nobody references any more, for reuse.
    fn recycle(&self, buf: Self::Buffer);

    /// Resizes `buf` to `len` bytes; new bytes are zero.
    fn resize(&self, buf: &mut Self::Buffer, len: usize);

    /// A copy of `src`.
    fn copy(&self, src: &Self::Buffer) -> Self::Buffer;

    /// Upload: a buffer holding, back to back, the `count` rows `rows`
    /// (indices of `width`-byte rows of the host bytes `src`), in that
    /// order.
    fn upload_rows(
        &self,
        src: &[u8],
        width: usize,
        count: usize,
        rows: impl Iterator<Item = usize>,
    ) -> Result<Self::Buffer, AllocFailed>;

    /// Upload of one contiguous host byte range.
    fn upload(&self, src: &[u8]) -> Result<Self::Buffer, AllocFailed> {
        self.upload_rows(src, src.len(), 1, std::iter::once(0))
    }

    /// Upload of ragged rows: a buffer of `len` bytes holding the host byte
    /// ranges `rows`, back to back (`len` is their total). The iterator is
    /// `Clone + Send` so a large copy can be cut into parts, each walked by
    /// its own thread (`store/spread.rs`); so is `gather_ranges`'.
    fn upload_ranges<'a>(
        &self,
        rows: impl Iterator<Item = &'a [u8]> + Clone + Send,
        len: usize,
    ) -> Result<Self::Buffer, AllocFailed>;

    /// The fold: row `i` of `src` (rows of `width` bytes, back to back)
    /// written over row `rows[i]` of `dst`.
    fn scatter_rows(&self, dst: &mut Self::Buffer, src: &Self::Buffer, width: usize, rows: &Rows);

    /// Compaction: a buffer holding, back to back, the byte ranges given
    /// (each a range of one of the buffers).
    fn gather_ranges<'a>(
        &self,
        ranges: impl Iterator<Item = (&'a Self::Buffer, Range<usize>)> + Clone + Send,
        len: usize,
    ) -> Self::Buffer;
}

/// A writable buffer of a column's memory, handed to a client to fill (a
/// map group's) and published as a version's storage when committed.
#[derive(Debug)]
pub(crate) struct Staging {
    buf: Buffer,
    device: Device,
}

impl Staging {
    /// `len` bytes of `memory`, contents unspecified. The size is a
    /// client's: a failed allocation is an error, not an abort.
    pub(crate) fn alloc(memory: &ColumnMemory, len: usize) -> Result<Staging, AllocFailed> {
        Ok(Staging { buf: memory.alloc(len)?, device: memory.device() })
    }

    /// Where the bytes are.
    pub(crate) fn device(&self) -> Device {
        self.device
    }

    /// The size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// The writable bytes (host memory: the CPU store's).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        self.buf.bytes_mut()
    }

    /// A new staging buffer holding a copy of this one's bytes (a binding
    /// that cannot revoke views of this buffer commits the copy).
    pub(crate) fn copy(&self) -> Staging {
        let mut buf = Buf::zeroed(self.buf.len());
        buf.bytes_mut().copy_from_slice(self.buf.bytes());
        Staging { buf, device: self.device }
    }

    /// The buffer, to publish.
    pub(crate) fn into_buffer(self) -> Buffer {
        self.buf
    }
}

/// The CPU store's memory: host buffers, recycled through a per-column
/// pool so a write loop reuses buffers that are mapped and still cached.
pub(crate) struct HostMemory {
    pool: BufPool,
}

impl HostMemory {
    /// Host memory keeping at most `max_pooled_bytes` of freed buffers.
    pub(crate) fn new(max_pooled_bytes: usize) -> HostMemory {
        HostMemory { pool: BufPool::with_limit(max_pooled_bytes) }
    }

    /// Buffers kept for reuse (for tests).
    #[cfg(test)]
    pub(crate) fn pooled(&self) -> usize {
        self.pool.len()
    }
}

impl StorageBackend for HostMemory {
    type Buffer = Buf;

    fn device(&self) -> Device {
        Device::Host
    }

    fn alloc(&self, len: usize) -> Result<Buf, AllocFailed> {
        self.pool.try_take(len)
    }

    fn empty(&self) -> Buf {
        Buf::default()
    }

    fn recycle(&self, buf: Buf) {
        self.pool.put(buf);
    }

    fn resize(&self, buf: &mut Buf, len: usize) {
        buf.resize(len);
    }

    fn copy(&self, src: &Buf) -> Buf {
        // The store's own sizes: an image already held in memory.
        let mut copy = self.pool.take(src.len());
        copy.bytes_mut().copy_from_slice(src.bytes());
        copy
    }

    fn upload_rows(
        &self,
        src: &[u8],
        width: usize,
        count: usize,
        rows: impl Iterator<Item = usize>,
    ) -> Result<Buf, AllocFailed> {
        let len = count.checked_mul(width).ok_or(AllocFailed { bytes: usize::MAX })?;
        let mut buf = self.pool.try_take(len)?;
        copy_rows(buf.bytes_mut(), src, width, rows);
        Ok(buf)
    }

    fn upload(&self, src: &[u8]) -> Result<Buf, AllocFailed> {
        self.pool.try_copy(src)
    }

    fn upload_ranges<'a>(
        &self,
        rows: impl Iterator<Item = &'a [u8]> + Clone + Send,
        len: usize,
    ) -> Result<Buf, AllocFailed> {
        self.pool.try_gather(rows, len)
    }

    fn scatter_rows(&self, dst: &mut Buf, src: &Buf, width: usize, rows: &Rows) {
        let (src, dst) = (src.bytes(), dst.bytes_mut());
        match rows {
            Rows::Run { start, len } => {
                let at = *start as usize * width;
                let n = *len as usize * width;
                dst[at..at + n].copy_from_slice(&src[..n]);
            }
            Rows::List(list) => {
                for (i, r) in list.iter().enumerate() {
                    let at = *r as usize * width;
                    dst[at..at + width].copy_from_slice(&src[i * width..(i + 1) * width]);
                }
            }
        }
    }

    fn gather_ranges<'a>(
        &self,
        ranges: impl Iterator<Item = (&'a Buf, Range<usize>)> + Clone + Send,
        len: usize,
    ) -> Buf {
        let mut buf = self.pool.take(len);
        write_pieces(buf.bytes_mut(), ranges.map(|(src, range)| &src.bytes()[range]));
        buf
    }
}

/// Copies rows `rows` of `width` bytes from `src` into `dst`, back to back.
/// Common widths get a copy of a known size (a few moves, not a memcpy
/// call per row).
pub(crate) fn copy_rows(dst: &mut [u8], src: &[u8], width: usize, rows: impl Iterator<Item = usize>) {
    fn fixed<const W: usize>(dst: &mut [u8], src: &[u8], rows: impl Iterator<Item = usize>) {
        for (d, r) in dst.chunks_exact_mut(W).zip(rows) {
            let s: &[u8; W] = src[r * W..r * W + W].try_into().expect("W bytes");
            d.copy_from_slice(s);
        }
    }
    match width {
        4 => fixed::<4>(dst, src, rows),
        8 => fixed::<8>(dst, src, rows),
        12 => fixed::<12>(dst, src, rows),
        16 => fixed::<16>(dst, src, rows),
        0 => {}
        w => {
            for (d, r) in dst.chunks_exact_mut(w).zip(rows) {
                d.copy_from_slice(&src[r * w..r * w + w]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_memory_uploads_scatters_and_gathers_rows() {
        let m = HostMemory::new(1 << 20);
        let src: Vec<u8> = (0..12).collect();
        // Rows 2 and 0 of 4-byte rows.
        let up = m.upload_rows(&src, 4, 2, [2usize, 0].into_iter()).unwrap();
        assert_eq!(up.bytes(), &[8, 9, 10, 11, 0, 1, 2, 3]);
        let mut image = m.alloc(16).unwrap();
        m.resize(&mut image, 0);
        m.resize(&mut image, 16);
        m.scatter_rows(&mut image, &up, 4, &Rows::from_vec(vec![3, 1]));
        assert_eq!(image.bytes(), &[0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 8, 9, 10, 11]);
        m.scatter_rows(&mut image, &up, 4, &Rows::Run { start: 0, len: 2 });
        assert_eq!(&image.bytes()[..8], &[8, 9, 10, 11, 0, 1, 2, 3]);
        let ragged = m.upload_ranges([&src[1..3], &src[..0], &src[5..6]].into_iter(), 3).unwrap();
        assert_eq!(ragged.bytes(), &[1, 2, 5]);
        let g = m.gather_ranges([(&image, 4..8), (&up, 0..2)].into_iter(), 6);
        assert_eq!(g.bytes(), &[0, 1, 2, 3, 8, 9]);
        assert_eq!(m.copy(&g).bytes(), g.bytes());
        assert_eq!((m.device(), g.len()), (Device::Host, 6));
        m.recycle(g);
        assert_eq!(m.pooled(), 1);
        assert_eq!(m.alloc(6).unwrap().len(), 6, "a pooled buffer is reused");
        assert!(m.alloc(1 << 46).is_err(), "a client-sized allocation fails instead of aborting");
        assert_eq!(m.upload(&src[3..6]).unwrap().bytes(), &[3, 4, 5]);
    }

    #[test]
    fn staging_is_writable_and_publishes_its_bytes() {
        let m = HostMemory::new(1 << 20);
        let mut s = Staging::alloc(&m, 4).unwrap();
        s.bytes_mut().copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(s.device(), Device::Host);
        assert_eq!(s.into_buffer().bytes(), &[1, 2, 3, 4]);
        assert!(Staging::alloc(&m, 1 << 46).is_err(), "a client-sized staging buffer fails instead of aborting");
    }
}
