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
mod list_spares;
mod log;
mod map;
mod map_detach;
mod metadata;
mod mutation;
mod ordmap;
mod paths;
mod prims;
mod query;
mod read;
mod schema;
mod stage;
mod state;
mod store;
mod tensor;
mod transport;
mod write;
pub(crate) mod xform;

pub use api::{AttrRef, AttributeWrite, Enqueued, FloorScope, Selection, WriteData};
pub use array_rows::{ArrayRows, ArrayRowsBuilder, HostRows};
pub use config::{StageConfig, UnsealedOverflow};
pub use group::{
    AttributeMeta, GroupData, GroupKind, GroupPreparer, ImageIdentity, Prepared, PrimGroup, ReadGroup, TensorView,
};
pub use handles::HandleTable;
pub use log::{
    LOG_THRESHOLD_NONE, LogCallback, LogSeverity, flush_log, log_enabled, log_message, set_log_callback, shutdown_log,
};
pub use map::MapDesc;
pub use map_detach::DetachedBuffer;
pub use paths::PathDictionary;
pub use query::{Predicate, QueryResult};
pub use read::ReadFinisher;
pub use schema::{Schema, ValueKind};
pub use stage::{Stage, StoreStats};
pub use state::CloneResult;
pub use state::MapGroup;
pub use state::{HierarchyItem, HierarchyResult};
pub use tensor::{Element, HostBytes, Tensor, TensorDesc};
pub use xform::{COMPUTATION_MODELS, ComputationModel};

/// The op timeline: `trace::start(path)` records every op of the process into
/// a Chrome trace (opens in Perfetto), written by `trace::stop()`; so does
/// `OVSTAGE_TRACE=path.json`, from the first stage on, the file extended each
/// time no stage is left alive.
pub use ovstage_sched::trace;
pub use ovstage_sched::{Lanes, WaitError};
pub use ovstage_types::{
    AdmissionPolicy, AttributeMode, DType, DTypeCode, Device, Error, ErrorContext, ErrorKind, FilterOp,
    HierarchyHandle, HierarchyRelation, MapHandle, OpId, Ordinal, OrdinalQueryHandle, OrdinalRange, PathList, PrimMode,
    PrimPath, QueryHandle, QueryResultId, ReadGroupId, ReadHandle, Result, Scope, Semantic, Status, Timeout, Token,
};

/// The feature modules, `stage` and `state` import one another without a
/// cycle (ARCHITECTURE.md, "Module layering"): each module's `crate::`
/// imports, read from its sources (a directory module counts with its
/// submodules).
#[cfg(test)]
mod layering {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    const LAYERED: [&str; 11] =
        ["clone", "delete", "floor", "hierarchy", "map", "query", "read", "write", "mutation", "stage", "state"];

    fn imports(module: &str) -> BTreeSet<String> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut text = std::fs::read_to_string(src.join(format!("{module}.rs"))).unwrap();
        if let Ok(dir) = std::fs::read_dir(src.join(module)) {
            for entry in dir {
                text += &std::fs::read_to_string(entry.unwrap().path()).unwrap();
            }
        }
        text.match_indices("crate::")
            .map(|(i, m)| text[i + m.len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
            .filter(|name: &String| name != module && LAYERED.contains(&name.as_str()))
            .collect()
    }

    #[test]
    fn no_import_cycle() {
        let graph: BTreeMap<&str, BTreeSet<String>> = LAYERED.iter().map(|m| (*m, imports(m))).collect();
        // Repeatedly remove modules that import no remaining module.
        let mut left: BTreeSet<&str> = LAYERED.into_iter().collect();
        while let Some(leaf) = left.iter().copied().find(|m| graph[m].iter().all(|d| !left.contains(d.as_str()))) {
            left.remove(leaf);
        }
        assert!(left.is_empty(), "import cycle among {left:?}: {graph:?}");
        assert!(graph["state"].is_empty(), "state imports {:?}", graph["state"]);
        assert_eq!(graph["stage"], BTreeSet::from(["state".to_string()]));
    }

    /// The storage-backend seam: outside `store/`, modules reach the
    /// column memory only through `ColumnMemory`, `Buffer`, `Staging` and
    /// `Image`, never through the CPU store's own `Buf` or `HostMemory`, so
    /// a device backend changes the store alone.
    #[test]
    fn only_the_store_names_host_buffers() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut offenders = Vec::new();
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for name in ["store::buf", "HostMemory", "Buf::"] {
                if path.file_name().unwrap() != "lib.rs" && text.contains(name) {
                    offenders.push(format!("{} names {name}", path.display()));
                }
            }
        }
        assert!(offenders.is_empty(), "{offenders:?}");
    }
}
