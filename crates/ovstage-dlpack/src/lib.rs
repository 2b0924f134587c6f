//! DLPack for ovstage, shared by the C ABI (`ovstage-ffi`) and the Python
//! binding (`ovstage-py`).
//!
//! - [`import`]: client tensors given to writes. Descriptors are validated
//!   (device, dtype, ndim, shape, strides, byte offset) with checked
//!   arithmetic before anything is allocated or read; compact payloads
//!   become stage tensors without a copy, strided ones are gathered into a
//!   fallibly allocated buffer, and only the rows the write can use.
//!   Managed tensors ([`Managed`]) are owned from the moment they are taken
//!   over, so each deleter runs exactly once.
//! - [`export`]: read groups and map groups as DLPack: borrowed
//!   `DLTensor`s kept alive by their holder ([`ReadTensors`],
//!   [`MapTensors`], what the C ABI hands out), and owned managed tensors,
//!   versioned (DLPack 1.x, with [`Flags::READ_ONLY`] for read data) or
//!   legacy, whose deleter drops the Rust owner of the memory exactly once
//!   (what Python's `__dlpack__` hands out). Exports are zero-copy.
//! - [`device`]: DLPack device types and [`Device`].
//! - [`placement`]: the experimental `ovstage.placement` extension's
//!   rules (placements, availability events, a placed read's device
//!   copies).
//! - `testing` (feature `testing`): counted managed tensors for the
//!   bindings' tests.
//!
//! The `#[repr(C)]` DLPack types themselves are `ovstage_abi::dlpack`.
//! Nothing here knows the C contract's own structs (`ovstage_write_data_t`
//! and the group views stay in `ovstage-ffi`).

pub mod device;
pub mod export;
pub mod import;
pub mod placement;
#[cfg(feature = "testing")]
pub mod testing;

pub use device::{dl_device, from_dl_device};
pub use export::{ExportedLegacy, ExportedVersioned, Flags, MapTensors, ReadTensors, Refused, dl_dtype, prepare};
pub use import::{Inputs, Managed, RowBound, Takeover};
pub use ovstage_abi::dlpack;
pub use ovstage_types::Device;
