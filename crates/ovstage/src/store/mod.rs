//! The versioned columnar store: row sets, buffers, columns (version
//! policy) and images (materialisation).

pub(crate) mod backend;
pub(crate) mod buf;
pub(crate) mod column;
pub(crate) mod image;
pub(crate) mod liveness;
pub(crate) mod reserve;
pub(crate) mod rows;
pub(crate) mod spread;
