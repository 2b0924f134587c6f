//! The versioned columnar store: row sets, buffers and columns.

pub(crate) mod buf;
pub(crate) mod column;
pub(crate) mod liveness;
pub(crate) mod rows;
