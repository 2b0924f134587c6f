//! Page-locked host memory for staged bytes, reused from write to write.
//!
//! Blocks are powers of two from 64 KiB, allocated by `cuMemHostAlloc`
//! (portable: usable with every context) the first time a size is needed
//! and kept, when released, while the pool holds at most its budget:
//! `OVSTAGE_PINNED_POOL_MB` (default 256; 0 turns page-locked staging off).
//! A batch larger than the budget, one that would take the blocks in use
//! (by writes not yet run) past four budgets, or one the driver gives no
//! page-locked memory for, is staged into the heap instead: page-locked
//! memory is taken from the whole machine.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::staging::HostCopy;

unsafe extern "C" {
    #[link_name = "cuMemHostAlloc"]
    fn cu_mem_host_alloc(ptr: *mut *mut c_void, bytes: usize, flags: u32) -> u32;
    #[link_name = "cuMemFreeHost"]
    fn cu_mem_free_host(ptr: *mut c_void) -> u32;
    #[link_name = "cuCtxSetCurrent"]
    fn cu_ctx_set_current(ctx: *mut c_void) -> u32;
    #[link_name = "cuCtxGetCurrent"]
    fn cu_ctx_get_current(ctx: *mut *mut c_void) -> u32;
}

/// `CU_MEMHOSTALLOC_PORTABLE`.
const PORTABLE: u32 = 1;
/// The smallest block.
const MIN_BLOCK: usize = 64 << 10;

/// Free blocks (address, size) and their total size.
struct Free {
    blocks: Vec<(usize, usize)>,
    bytes: usize,
}

static FREE: Mutex<Free> = Mutex::new(Free { blocks: Vec::new(), bytes: 0 });
/// The context current when the first block was allocated, for freeing
/// blocks from threads that have none current.
static CONTEXT: AtomicUsize = AtomicUsize::new(0);
/// Blocks the driver gave, ever (for tests and figures).
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
/// Bytes of the blocks handed out and not yet released.
static IN_USE: AtomicUsize = AtomicUsize::new(0);

fn budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        std::env::var("OVSTAGE_PINNED_POOL_MB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map_or(256 << 20, |mb| mb.saturating_mul(1 << 20))
    })
}

/// The block size for `len` bytes, when page-locked memory is to be used
/// for them.
fn block_for(len: usize) -> Option<usize> {
    let size = len.max(MIN_BLOCK).checked_next_power_of_two()?;
    (size <= budget()).then_some(size)
}

/// Memory for `len` staged bytes: a page-locked block (reused, or
/// allocated with the calling thread's current context), else the heap;
/// `None` when neither has room.
pub(crate) fn acquire(len: usize) -> Option<HostCopy> {
    if len == 0 {
        return HostCopy::heap(0);
    }
    let Some(size) = block_for(len) else { return HostCopy::heap(len) };
    if IN_USE.load(Ordering::Relaxed).saturating_add(size) > budget().saturating_mul(4) {
        return HostCopy::heap(len);
    }
    {
        let mut free = FREE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = free.blocks.iter().position(|b| b.1 == size) {
            let (ptr, size) = free.blocks.swap_remove(i);
            free.bytes -= size;
            IN_USE.fetch_add(size, Ordering::Relaxed);
            return Some(HostCopy::pinned(ptr as *mut u8, len, size));
        }
    }
    let mut ptr = std::ptr::null_mut();
    // SAFETY: the driver writes one pointer; the caller made a context current.
    if unsafe { cu_mem_host_alloc(&mut ptr, size, PORTABLE) } != 0 || ptr.is_null() {
        return HostCopy::heap(len);
    }
    if CONTEXT.load(Ordering::Relaxed) == 0 {
        let mut current = std::ptr::null_mut();
        // SAFETY: the driver writes one handle.
        if unsafe { cu_ctx_get_current(&mut current) } == 0 {
            CONTEXT.store(current as usize, Ordering::Relaxed);
        }
    }
    ALLOCATED.fetch_add(1, Ordering::Relaxed);
    IN_USE.fetch_add(size, Ordering::Relaxed);
    Some(HostCopy::pinned(ptr.cast(), len, size))
}

/// Takes a block back: kept while the pool is within its budget, else
/// given back to the driver.
pub(crate) fn release(ptr: *mut u8, size: usize) {
    IN_USE.fetch_sub(size, Ordering::Relaxed);
    {
        let mut free = FREE.lock().unwrap_or_else(|p| p.into_inner());
        if free.bytes + size <= budget() {
            free.bytes += size;
            free.blocks.push((ptr as usize, size));
            return;
        }
    }
    // `cuMemFreeHost` wants a context current: the pool's, then the
    // thread's own back.
    let mut previous = std::ptr::null_mut();
    // SAFETY: the driver writes one handle; the pool's context is a primary
    // context, never destroyed; `ptr` came from `cuMemHostAlloc`.
    unsafe {
        if cu_ctx_get_current(&mut previous) == 0 {
            cu_ctx_set_current(CONTEXT.load(Ordering::Relaxed) as *mut c_void);
            cu_mem_free_host(ptr.cast());
            cu_ctx_set_current(previous);
        }
    }
}

/// How many page-locked blocks the driver gave so far, and how many bytes
/// the pool holds free now.
pub(crate) fn stats() -> (usize, usize) {
    let free = FREE.lock().unwrap_or_else(|p| p.into_inner());
    (ALLOCATED.load(Ordering::Relaxed), free.bytes)
}
