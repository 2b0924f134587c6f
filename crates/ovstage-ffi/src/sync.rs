//! The workspace's lock helpers (`ovstage_types::sync`), under the name the
//! crate's modules use.

pub(crate) use ovstage_types::sync::{lock, read, write};
