//! Pure value types shared by every ovstage crate.
//!
//! Nothing here allocates behind the caller's back, performs I/O or uses
//! `unsafe`. The numeric values of every enum that crosses the C ABI are the
//! values of the ovstage 0.3.0 contract, so the FFI layer converts with a
//! plain `as` cast in one direction and a checked `from_raw` in the other.

#![forbid(unsafe_code)]

#[macro_use]
mod raw;
mod device;
mod dtype;
mod error;
mod handles;
pub mod idhash;
mod modes;
mod op;
mod ordinal;
mod semantic;
pub mod sorted;
mod status;
pub mod sync;

pub use device::Device;
pub use dtype::{DType, DTypeCode, f16_to_f64};
pub use error::{Error, ErrorContext, ErrorKind, Result};
pub use handles::{
    HierarchyHandle, MapHandle, OrdinalQueryHandle, PathList, PrimPath, QueryHandle, QueryResultId, ReadGroupId,
    ReadHandle, Token,
};
pub use modes::{AdmissionPolicy, AttributeMode, FilterOp, HierarchyRelation, PrimMode, Scope};
pub use op::{OpId, Timeout};
pub use ordinal::{Ordinal, OrdinalRange};
pub use semantic::Semantic;
pub use status::Status;
