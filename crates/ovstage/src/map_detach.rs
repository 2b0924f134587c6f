//! Detaching a map group's buffer from what it commits, for bindings that
//! hand the buffer out (numpy views, DLPack exports) and cannot revoke it.

use crate::state::MapGroup;
use crate::store::backend::Staging;

/// A map group's former buffer, taken by [`MapGroup::detach_buffer`]: the
/// memory views handed out earlier point into, kept alive (and never
/// published) for as long as this lives.
#[derive(Debug)]
pub struct DetachedBuffer {
    _buf: Staging,
}

impl MapGroup {
    /// Replaces the group's buffer by a copy of its current contents and
    /// returns the original. Commit the group afterwards: the copy is what
    /// gets published, while writes through views of the original (kept
    /// alive by the returned value) can no longer change committed data.
    pub fn detach_buffer(&mut self) -> DetachedBuffer {
        let copy = self.buf.copy();
        DetachedBuffer { _buf: std::mem::replace(&mut self.buf, copy) }
    }
}
