//! The exported functions of the contract, one module per header (the
//! header's types are in the same-named module of `ovstage_abi`). They are
//! thin: each forwards to the implementation modules of the crate, which
//! catch panics and validate arguments.

pub mod api;
pub mod config;
pub mod instancing;
pub mod population;
pub mod population_export;
pub mod stage;
