//! The C ABI of ovstage: the published ovstage 0.3.0 contract implemented
//! over the Rust [`stage`] crate.
//!
//! A C or C++ program written for ovstage 0.3.0 compiles against the
//! headers generated from `ovstage_abi` and [`exports`] (`cargo xtask
//! codegen`) and links
//! `libovstage.so` or `libovstage.a`; a program or binding built for the
//! published library runs on `libovstage-dynamic.so`.
//!
//! Layers, top to bottom:
//! - `ovstage_abi` (its own crate): the contract's types, one module per
//!   header; [`exports`]: the exported functions, in the same modules.
//!   Exported functions forward to the modules below.
//! - `instance`, `process`, `log`, `build_info`: life cycle and process
//!   services (state and logic; their exports are in [`exports`]).
//! - `slots`: the 28 data-plane functions of the instance's vtable and the
//!   12 of the path dictionary's.
//! - `tensors`, `results`: write payloads turned into the stage's write
//!   data, and the fetched results C holds (groups, query results) kept
//!   alive until released. The DLPack work itself (tensor checks, gathers,
//!   managed tensors, the `DLTensor`s of groups) is `ovstage_dlpack`'s.
//!
//! Safety at the boundary: every pointer is NULL-checked before use, every
//! handle is validated by the stage (stale and foreign handles give
//! INVALID_HANDLE), every export runs under a panic guard that maps a panic
//! to INTERNAL, and C enums and bools are read as plain integers.

pub mod exports;

/// The contract's types, under the name the implementation uses.
use ovstage_abi as abi;

mod build_info;
mod clone;
mod error;
mod hierarchy;
mod instance;
mod log;
mod process;
mod results;
mod slots;
mod strings;
mod sync;
mod tensors;
mod unsupported;

#[cfg(test)]
mod tests;
