//! ovstage: an asynchronous, ordinal-keyed, zero-copy store of simulation
//! data.
//!
//! A [`Stage`] holds prims named by paths and, on each prim, typed
//! attribute columns. Every mutation carries an [`Ordinal`]; a write floor
//! seals data, and only sealed data is read. Every call that does work is an
//! enqueue returning an [`OpId`] at once, while the work runs on worker
//! lanes; independent ops run in parallel. Each committed value is a version
//! of its cell, so reads never wait for or fail because of later writes, and
//! a read group is an immutable zero-copy view until it is dropped.
//!
//! ```
//! use ovstage::{Stage, Tensor, WriteData, FloorScope, OrdinalRange, PrimMode, Timeout};
//!
//! let stage = Stage::new("demo");
//! let list = stage.paths().create_path_list_from_strings(&["/World/A", "/World/B"])?;
//! let query = stage.query_from_path_list(list)?;
//! let values = Tensor::rows(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], 3)?;
//! stage.write_attribute(query, "pos", 1, WriteData::fixed(values), PrimMode::Upsert)?;
//! stage.advance_write_floor(1, FloorScope::All)?;
//! let read = stage.read_attributes(query, &["pos".into()], OrdinalRange::LATEST)?;
//! let group = stage.fetch_read_next(read.handle, Timeout::INFINITE)?.expect("one group");
//! assert_eq!(group.data().unwrap().values::<f32>()?, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
//! # Ok::<(), ovstage::Error>(())
//! ```

#![forbid(unsafe_code)]

/// The README's Rust example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

mod api;
mod array_rows;
mod clone;
mod config;
mod delete;
mod family;
mod floor;
mod group;
mod handles;
mod hierarchy;
mod idhash;
mod map;
mod metadata;
mod mutation;
mod paths;
mod prims;
mod query;
mod read;
mod schema;
mod stage;
mod store;
mod tensor;
mod transport;
mod write;

pub use api::{AttrRef, AttributeWrite, Enqueued, FloorScope, Selection, WriteData};
pub use array_rows::{ArrayRows, ArrayRowsBuilder, HostRows};
pub use clone::CloneResult;
pub use config::{StageConfig, UnsealedOverflow};
pub use group::{AttributeMeta, GroupData, GroupKind, PrimGroup, ReadGroup, TensorView};
pub use handles::HandleTable;
pub use hierarchy::{HierarchyItem, HierarchyResult};
pub use map::{MapDesc, MapGroup};
pub use paths::PathDictionary;
pub use query::{Predicate, QueryResult};
pub use schema::{Schema, ValueKind};
pub use stage::{Stage, StoreStats};
pub use tensor::{Element, HostBytes, Tensor, TensorDesc};

pub use ovstage_sched::{Lanes, WaitError};
pub use ovstage_types::{
    AdmissionPolicy, AttributeMode, DType, DTypeCode, Device, Error, ErrorContext, FilterOp, HierarchyHandle,
    HierarchyRelation, MapHandle, OpId, Ordinal, OrdinalQueryHandle, OrdinalRange, PathList, PrimMode, PrimPath,
    QueryHandle, QueryResultId, ReadGroupId, ReadHandle, Result, Scope, Semantic, Status, Timeout, Token,
};
