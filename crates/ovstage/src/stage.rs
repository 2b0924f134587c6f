//! The stage: the Rust API over the scheduler and the store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use ovstage_sched::{FailureHook, Scheduler, SchedulerConfig, WaitError};
use ovstage_types::{Error, OpId, PrimPath, QueryHandle, Result, Status, Timeout, Token};

use crate::api::AttrRef;
use crate::config::StageConfig;
use crate::family::{Family, Floors};
use crate::handles::HandleTable;
use crate::log::{LogSeverity, log_enabled, log_message};
use crate::metadata::ReservedTokens;
use crate::paths::PathDictionary;
use crate::prims::PrimTable;
use crate::state::{CloneReports, HierarchyState, MapState, OrdinalQueryState, QueryCache, QueryState, ReadState};
use ovstage_types::idhash::IdBuild;
use smallvec::SmallVec;

#[derive(Default)]
pub(crate) struct FamilyMap {
    /// Looked up by every enqueue naming an attribute.
    by_name: HashMap<Token, Arc<Family>, IdBuild>,
    pub(crate) all: Vec<Arc<Family>>,
}

pub(crate) struct StageInner {
    pub(crate) name: String,
    pub(crate) config: StageConfig,
    pub(crate) paths: PathDictionary,
    pub(crate) sched: Scheduler,
    pub(crate) families: RwLock<FamilyMap>,
    pub(crate) prims: Mutex<PrimTable>,
    /// The prim table's generation, read without its lock.
    pub(crate) prims_generation: Arc<AtomicU64>,
    /// The prim table's removal count, read without its lock.
    pub(crate) prim_removals: Arc<AtomicU64>,
    pub(crate) floors: Floors,
    pub(crate) queries: HandleTable<Arc<QueryState>>,
    /// Filter-query results reused while nothing structural changes.
    pub(crate) query_cache: QueryCache,
    pub(crate) reads: HandleTable<Arc<ReadState>>,
    pub(crate) ordinal_queries: HandleTable<Arc<OrdinalQueryState>>,
    pub(crate) hierarchies: HandleTable<Arc<HierarchyState>>,
    pub(crate) maps: HandleTable<Arc<MapState>>,
    pub(crate) clones: CloneReports,
    pub(crate) reserved: ReservedTokens,
    /// A transform input or the world matrices changed since the last
    /// world-matrix computation (see `xform.rs`).
    pub(crate) xform_dirty: std::sync::atomic::AtomicBool,
    /// Names recorded as prim types, schemas or ancestor types, by kind
    /// (token id -> the metadata attribute that named it first).
    pub(crate) type_names: Mutex<HashMap<u64, crate::metadata::Reserved, IdBuild>>,
    /// A binding's builder of group descriptions, run by each read's job.
    pub(crate) preparer: std::sync::OnceLock<crate::group::GroupPreparer>,
    next_key: AtomicU64,
    next_group: AtomicU64,
}

/// An ovstage instance: prims with typed attribute columns, written at
/// ordinals, sealed by write floors and read as versioned, zero-copy groups.
///
/// Every call that does work enqueues an op and returns its [`OpId`] at
/// once; the work runs on the stage's worker lanes. Observe completion with
/// [`Stage::wait`] (or a `fetch_*` call with a timeout). A `Stage` is `Sync`:
/// share it between threads by reference or in an `Arc`.
///
/// Dropping a stage finishes every outstanding op, stops its lanes and
/// frees its storage. Read groups already fetched stay valid: they own what
/// they point at.
pub struct Stage {
    pub(crate) inner: Arc<StageInner>,
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stage").field("name", &self.inner.name).field("config", &self.inner.config).finish()
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        self.inner.sched.drain();
    }
}

pub(crate) use ovstage_types::sync::lock;
use ovstage_types::sync::{read, write};

/// Memory the store retains, for leak and steady-state checks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Columns across all attributes.
    pub columns: usize,
    /// Versions retained across all columns.
    pub versions: usize,
    /// Distinct buffer bytes those versions reference.
    pub bytes: usize,
    /// Tracked (unreleased) op ids.
    pub tracked_ops: usize,
    /// Live query, read and ordinal-query handles.
    pub handles: usize,
    /// Live prims.
    pub prims: usize,
}

impl Stage {
    /// A stage with the default configuration.
    pub fn new(name: impl Into<String>) -> Stage {
        Stage::with_config(name, StageConfig::default())
    }

    /// A stage with `config`.
    pub fn with_config(name: impl Into<String>, config: StageConfig) -> Stage {
        let name = name.into();
        let sched = Scheduler::new(&SchedulerConfig {
            lanes: config.lanes,
            thread_name: Some(format!("ovstage-{name}")),
            first_op: first_op_id(),
            max_ops: config.max_ops,
            on_failure: Some(log_failures(&name)),
        });
        let paths = PathDictionary::new();
        let reserved = ReservedTokens::intern(&paths);
        log_message(
            LogSeverity::Info,
            "ovstage",
            &format!(
                "stage '{name}' created (ovstage-rs {}, {} lanes)",
                env!("CARGO_PKG_VERSION"),
                config.lanes.count()
            ),
        );
        let prims = PrimTable::default();
        Stage {
            inner: Arc::new(StageInner {
                name,
                config,
                paths,
                reserved,
                xform_dirty: std::sync::atomic::AtomicBool::new(false),
                type_names: Mutex::new(HashMap::default()),
                sched,
                families: RwLock::new(FamilyMap::default()),
                prims_generation: prims.generation_counter(),
                prim_removals: prims.removals_counter(),
                prims: Mutex::new(prims),
                floors: Floors::default(),
                queries: HandleTable::new(),
                query_cache: QueryCache::default(),
                reads: HandleTable::new(),
                ordinal_queries: HandleTable::new(),
                hierarchies: HandleTable::new(),
                maps: HandleTable::new(),
                clones: CloneReports::default(),
                preparer: std::sync::OnceLock::new(),
                next_key: AtomicU64::new(1),
                next_group: AtomicU64::new(1),
            }),
        }
    }

    /// The name given at creation.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration.
    pub fn config(&self) -> &StageConfig {
        &self.inner.config
    }

    /// Worker lanes running this stage's ops.
    pub fn lanes(&self) -> usize {
        self.inner.sched.lanes()
    }

    /// The stage's path dictionary.
    pub fn paths(&self) -> &PathDictionary {
        &self.inner.paths
    }

    /// Waits for `op` and what it depends on. `Timeout::POLL` only looks.
    pub fn wait(&self, op: OpId, timeout: Timeout) -> std::result::Result<(), WaitError> {
        self.inner.sched.wait(op, timeout)
    }

    /// Waits for `op` and turns a failure into its error (the root cause's,
    /// when a failed input caused it).
    pub fn wait_ok(&self, op: OpId, timeout: Timeout) -> Result<()> {
        match self.inner.sched.wait(op, timeout) {
            Ok(()) => Ok(()),
            Err(WaitError::Timeout { lowest_pending }) => Err(Error::new(
                Status::Timeout,
                format!("{op} is still pending (lowest pending op in its chain: {lowest_pending})"),
            )),
            Err(WaitError::Failed { ops }) => {
                Err(self.op_error(ops[0]).unwrap_or_else(|| Error::new(Status::OpFailed, format!("{op} failed"))))
            }
            Err(WaitError::Unknown(e)) => Err(e),
        }
    }

    /// The error of a failed op, until it is released.
    pub fn op_error(&self, op: OpId) -> Option<Error> {
        self.inner.sched.failure(op).map(|f| f.error)
    }

    /// Forgets a completed op id.
    pub fn release_op(&self, op: OpId) -> Result<()> {
        self.inner.sched.release(op)?;
        self.inner.clones.forget(op);
        Ok(())
    }

    /// What the store retains now.
    pub fn stats(&self) -> StoreStats {
        let inner = &self.inner;
        let mut stats = StoreStats::default();
        for family in &read(&inner.families).all {
            for column in family.columns() {
                let (versions, bytes) = column.lock().retained();
                stats.columns += 1;
                stats.versions += versions;
                stats.bytes += bytes;
            }
        }
        stats.tracked_ops = inner.sched.tracked_ops();
        stats.handles = inner.queries.len() + inner.reads.len() + inner.ordinal_queries.len() + inner.hierarchies.len();
        stats.prims = lock(&inner.prims).live_count();
        stats
    }
}

impl StageInner {
    pub(crate) fn next_handle_key(&self) -> u64 {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn next_group_id(&self) -> u64 {
        self.next_group.fetch_add(1, Ordering::Relaxed)
    }

    /// Waits up to `timeout` for the op producing `what`; `TIMEOUT` when it
    /// has not run by then. A failed or released op is the caller's to
    /// report from the result it left behind.
    pub(crate) fn await_result(
        &self,
        op: OpId,
        timeout: Timeout,
        call: &str,
        what: impl std::fmt::Display,
    ) -> Result<()> {
        match self.sched.wait(op, timeout) {
            Err(WaitError::Timeout { .. }) => Err(Error::new(Status::Timeout, format!("{call}: {what} is not ready"))),
            Ok(()) | Err(WaitError::Failed { .. } | WaitError::Unknown(_)) => Ok(()),
        }
    }

    pub(crate) fn query(&self, query: QueryHandle, call: &str) -> Result<Arc<QueryState>> {
        self.queries
            .get(query.get())
            .ok_or_else(|| Error::invalid_handle(format!("{call}: {query} is unknown or was released")))
    }

    /// The token of an attribute reference (interning a name).
    pub(crate) fn attr_token(&self, attr: AttrRef<'_>, call: &str) -> Result<Token> {
        match attr {
            AttrRef::Token(t) if self.paths.is_token(t) => Ok(t),
            // An attribute argument that names nothing is a bad argument
            // (as the reference reports it).
            AttrRef::Token(t) => {
                Err(Error::invalid_argument(format!("{t} is not from this dictionary")).prefixed(call))
            }
            AttrRef::Name(name) => self.paths.intern_token(name).map_err(|e| e.prefixed(call)),
        }
    }

    /// The tokens of `attrs` when every one is a token of the dictionary
    /// (checked without a lock: the usual case of a wide read); `None`
    /// when one is a name or unknown ([`attr_token`](Self::attr_token)
    /// each then).
    pub(crate) fn known_tokens(&self, attrs: &[AttrRef<'_>]) -> Option<SmallVec<[Token; 4]>> {
        // Sized once (collecting through `Option` would regrow it).
        let mut tokens: SmallVec<[Token; 4]> = SmallVec::with_capacity(attrs.len());
        for a in attrs {
            match a {
                AttrRef::Token(t) if self.paths.is_token(*t) => tokens.push(*t),
                _ => return None,
            }
        }
        Some(tokens)
    }

    /// [`existing_family`](Self::existing_family) of each token for which
    /// `wanted` holds (`None` for the others), with the family map locked
    /// once for the tokens it holds.
    pub(crate) fn existing_families(
        &self,
        tokens: &[Token],
        wanted: impl Fn(Token) -> bool,
    ) -> SmallVec<[Option<Arc<Family>>; 4]> {
        let mut missing = false;
        let mut out: SmallVec<[Option<Arc<Family>>; 4]> = {
            let map = read(&self.families);
            tokens
                .iter()
                .map(|t| {
                    let f = map.by_name.get(t).cloned();
                    missing |= f.is_none() && wanted(*t);
                    f
                })
                .collect()
        };
        for (t, f) in tokens.iter().zip(out.iter_mut()) {
            if !wanted(*t) {
                *f = None;
            } else if missing && f.is_none() {
                // An alias seen for the first time, or no family at all.
                *f = self.existing_family(*t);
            }
        }
        out
    }

    /// The family of an attribute, created when missing.
    pub(crate) fn family(&self, token: Token) -> Result<Arc<Family>> {
        if let Some(f) = read(&self.families).by_name.get(&token) {
            return Ok(f.clone());
        }
        let text = self.paths.token_text(token)?;
        // An alias shares its canonical name's family (one stored column,
        // one floor, one change history).
        let canonical = match canonical_attribute(&text) {
            Some(name) => Some(self.paths.intern_token(name)?),
            None => None,
        };
        let mut map = write(&self.families);
        if let Some(f) = map.by_name.get(&token) {
            return Ok(f.clone());
        }
        if let Some(c) = canonical
            && let Some(f) = map.by_name.get(&c).cloned()
        {
            map.by_name.insert(token, f.clone());
            return Ok(f);
        }
        let (key, name) = match canonical {
            Some(c) => (c, self.paths.token_text(c)?),
            None => (token, text),
        };
        let f = Arc::new(Family::new(map.all.len() as u64, key, name));
        map.by_name.insert(key, f.clone());
        map.by_name.insert(token, f.clone());
        map.all.push(f.clone());
        Ok(f)
    }

    /// The family of an attribute if it exists (through its alias too).
    pub(crate) fn existing_family(&self, token: Token) -> Option<Arc<Family>> {
        if let Some(f) = read(&self.families).by_name.get(&token) {
            return Some(f.clone());
        }
        let text = self.paths.token_text(token).ok()?;
        let canonical = self.paths.lookup_token(canonical_attribute(&text)?)?;
        let f = read(&self.families).by_name.get(&canonical).cloned()?;
        write(&self.families).by_name.insert(token, f.clone());
        Some(f)
    }

    pub(crate) fn all_families(&self) -> Vec<Arc<Family>> {
        read(&self.families).all.clone()
    }

    /// `f` of the attribute families, under the map's read lock: for passes
    /// that only load atomics and take no lock, which then copy no list
    /// (an allocation and a reference count up and down per family).
    pub(crate) fn with_families<R>(&self, f: impl FnOnce(&[Arc<Family>]) -> R) -> R {
        f(&read(&self.families).all)
    }

    pub(crate) fn describe(&self, prim: PrimPath) -> String {
        self.paths.describe_path(prim)
    }
}

/// The first op id of a new stage: each stage counts from its own block of
/// 2^32 ids (blocks drawn from a process-wide sequence, scrambled), so an
/// op id of one instance is unknown to another instead of naming one of its
/// ops. Ids stay below 2^57.
/// Logs each failed op: the root cause at WARNING (the client sees it only
/// if it waits), ops failing because of another at VERBOSE.
fn log_failures(stage: &str) -> FailureHook {
    let stage = stage.to_owned();
    FailureHook(Arc::new(move |op, failure| {
        if !log_enabled() {
            return;
        }
        match failure.caused_by {
            None => log_message(
                LogSeverity::Warning,
                "ovstage.ops",
                &format!("stage '{stage}': {op} failed: {}", failure.error),
            ),
            Some(cause) => log_message(
                LogSeverity::Verbose,
                "ovstage.ops",
                &format!("stage '{stage}': {op} failed because {cause} failed: {}", failure.error),
            ),
        }
    }))
}

fn first_op_id() -> OpId {
    static STAGES: AtomicU64 = AtomicU64::new(0);
    // An odd multiplier permutes the 24-bit block numbers.
    let block = STAGES.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9e_37_79) & 0xff_ffff;
    OpId::from_raw(((block + 1) << 32) | 1).expect("non-zero")
}

/// The canonical name of an attribute name that is an alias: the names the
/// contract's transform attributes are authored under and the names the
/// stage stores them as (the published library's column identity).
fn canonical_attribute(name: &str) -> Option<&'static str> {
    match name {
        "omni:xform" => Some("omni:fabric:localMatrix"),
        "omni:resetXformStack" => Some("omni:fabric:resetXformStack"),
        _ => None,
    }
}
