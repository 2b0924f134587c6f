//! The types of the ovstage 0.3.0 C contract, one module per header, with
//! the contract's names, field order, layout and enum values.
//!
//! `cargo xtask codegen` turns each module into the header named in its
//! first doc line (cbindgen, driven per module), together with the exported
//! functions of the same module in `ovstage-ffi` (`src/exports`), so what is
//! declared here is exactly what C sees. Rust code that talks to a library
//! implementing the contract (the `ovstage-ffi` implementation, the
//! benchmark harness loading a library by path) uses these definitions.
//!
//! Two conventions keep values coming from C sound in Rust:
//!
//! - A C enum is declared twice. The `#[repr(C)]` enum in the module's
//!   `values` submodule carries the names and values into the header. What
//!   crosses the ABI (parameters, fields) is a same-named transparent
//!   integer, so a value outside the enum is representable and rejected by
//!   validation instead of being undefined behaviour.
//! - A C `bool` read from client memory is a [`CBool`] (one byte, any
//!   value), emitted as `bool` in the header.

#![allow(non_camel_case_types)]
#![no_std]

pub mod api;
pub mod api_types;
pub mod config;
pub mod dlpack;
pub mod instancing;
pub mod ovx_string;
pub mod ovx_types;
pub mod path_dictionary;
pub mod path_dictionary_vtable;
pub mod placement;
pub mod population;
pub mod population_export;
pub mod population_predicate;
pub mod stage;
pub mod stage_types;

/// Declares the transparent integer that carries a C enum across the ABI.
/// It is invisible to the header generator, which emits the same-named
/// enum of the module's `values` submodule instead.
macro_rules! c_enum_carrier {
    ($(#[$meta:meta])* $name:ident: $repr:ty) => {
        $(#[$meta])*
        #[repr(transparent)]
        #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name(pub $repr);
    };
}
pub(crate) use c_enum_carrier;

/// A C `bool` as it lies in client memory: one byte whose value is not
/// trusted. Zero is false, anything else true.
#[repr(transparent)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CBool(pub u8);

impl CBool {
    /// `true` as C writes it.
    pub const TRUE: CBool = CBool(1);
    /// `false` as C writes it.
    pub const FALSE: CBool = CBool(0);

    /// The truth value.
    pub fn get(self) -> bool {
        self.0 != 0
    }
}

impl From<bool> for CBool {
    fn from(b: bool) -> CBool {
        CBool(u8::from(b))
    }
}
