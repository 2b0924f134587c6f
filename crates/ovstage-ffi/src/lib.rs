//! The C ABI of ovstage: the published ovstage 0.3.0 contract implemented
//! over the Rust [`stage`] crate.
//!
//! A C or C++ program written for ovstage 0.3.0 compiles against the
//! headers generated from [`abi`] (`cargo xtask codegen`) and links
//! `libovstage.so` or `libovstage.a`; a program or binding built for the
//! published library runs on `libovstage-dynamic.so`.
//!
//! Layers, top to bottom:
//! - [`abi`]: the contract's types and exported functions, one module per
//!   header. Exported functions forward to the modules below.
//! - `instance`, `process`, `log`, `build_info`: life cycle and process
//!   services.
//! - `slots`: the 28 data-plane functions of the instance's vtable and the
//!   12 of the path dictionary's.
//! - `tensors`, `results`: DLPack inputs turned into stage tensors, and the
//!   fetched results C holds (groups, query results) kept alive until
//!   released.
//!
//! Safety at the boundary: every pointer is NULL-checked before use, every
//! handle is validated by the stage (stale and foreign handles give
//! INVALID_HANDLE), every export runs under a panic guard that maps a panic
//! to INTERNAL, and C enums and bools are read as plain integers.

pub mod abi;

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
mod tensors;
mod unsupported;

#[cfg(test)]
mod tests;
