//! Process-scoped state: reference counted by `ovstage_initialize` /
//! `ovstage_shutdown` and by live instances, and the settings captured on
//! the first reference.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::CString;
use std::sync::{Arc, Mutex, MutexGuard};

use ovstage_types::{AdmissionPolicy, Error, Result};
use stage::{Lanes, StageConfig, UnsealedOverflow};

use crate::abi::ovx_string::ovx_string_t;
use crate::abi::stage_types::values::{
    ovstage_config_key_type_t as KeyType, ovstage_config_string_t as StringKey, ovstage_config_uint64_t as U64Key,
    ovstage_hierarchy_computation_model_id_t as Model,
};
use crate::abi::stage_types::{ovstage_config_entry_t, ovstage_config_entry_value_t, ovstage_config_t};
use crate::{log, strings};

/// Settings of the process state, applied to instances created under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) admission: AdmissionPolicy,
    /// The hierarchy computation model (recorded; no model runs here).
    hierarchy_model: u64,
    /// Worker lanes per instance; 0 is one per core.
    lanes: u64,
    history_depth: u64,
    max_versions: u64,
    max_unsealed_bytes: u64,
    max_ops: u64,
    unsealed_overflow: UnsealedOverflow,
}

impl Default for Settings {
    /// The stage's own defaults (the one place they are defined).
    fn default() -> Self {
        let stage = StageConfig::default();
        Settings {
            admission: stage.admission,
            hierarchy_model: Model::OVSTAGE_HIERARCHY_COMPUTATION_MODEL_CPU_INCREMENTAL as u64,
            lanes: 0,
            history_depth: stage.history_depth as u64,
            max_versions: stage.max_versions as u64,
            max_unsealed_bytes: stage.max_unsealed_bytes as u64,
            max_ops: stage.max_ops as u64,
            unsealed_overflow: stage.unsealed_overflow,
        }
    }
}

impl Settings {
    /// The stage configuration of a new instance.
    pub(crate) fn stage_config(&self) -> StageConfig {
        StageConfig {
            lanes: if self.lanes == 0 { Lanes::Auto } else { Lanes::fixed(self.lanes as usize) },
            admission: self.admission,
            history_depth: self.history_depth as usize,
            max_versions: self.max_versions as usize,
            max_unsealed_bytes: usize::try_from(self.max_unsealed_bytes).unwrap_or(usize::MAX),
            unsealed_overflow: self.unsealed_overflow,
            max_ops: usize::try_from(self.max_ops).unwrap_or(usize::MAX),
        }
    }
}

/// One setting a config entry asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Setting {
    Admission(AdmissionPolicy),
    HierarchyModel(u64),
    Lanes(u64),
    HistoryDepth(u64),
    MaxVersions(u64),
    MaxUnsealedBytes(u64),
    MaxOps(u64),
    UnsealedOverflow(UnsealedOverflow),
}

impl Setting {
    fn apply(self, s: &mut Settings) {
        match self {
            Setting::Admission(p) => s.admission = p,
            Setting::HierarchyModel(m) => s.hierarchy_model = m,
            Setting::Lanes(n) => s.lanes = n,
            Setting::HistoryDepth(n) => s.history_depth = n,
            Setting::MaxVersions(n) => s.max_versions = n,
            Setting::MaxUnsealedBytes(n) => s.max_unsealed_bytes = n,
            Setting::MaxOps(n) => s.max_ops = n,
            Setting::UnsealedOverflow(o) => s.unsealed_overflow = o,
        }
    }

    /// Whether the active settings already have this value.
    fn agrees(self, s: &Settings) -> bool {
        let mut copy = s.clone();
        self.apply(&mut copy);
        copy == *s
    }

    /// The setting's key, the requested value and the value in `s`.
    fn describe(self, s: &Settings) -> (&'static str, String, String) {
        let policy = |p: AdmissionPolicy| policy_name(p).to_owned();
        match self {
            Setting::Admission(p) => {
                ("OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY", policy(p), policy(s.admission))
            }
            Setting::HierarchyModel(m) => (
                "OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL",
                m.to_string(),
                s.hierarchy_model.to_string(),
            ),
            Setting::Lanes(n) => ("OVSTAGE_CONFIG_RUNTIME_LANE_COUNT", n.to_string(), s.lanes.to_string()),
            Setting::HistoryDepth(n) => {
                ("OVSTAGE_CONFIG_RUNTIME_HISTORY_DEPTH", n.to_string(), s.history_depth.to_string())
            }
            Setting::MaxVersions(n) => {
                ("OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_VERSIONS", n.to_string(), s.max_versions.to_string())
            }
            Setting::MaxUnsealedBytes(n) => {
                ("OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_BYTES", n.to_string(), s.max_unsealed_bytes.to_string())
            }
            Setting::MaxOps(n) => ("OVSTAGE_CONFIG_RUNTIME_MAX_OPS", n.to_string(), s.max_ops.to_string()),
            Setting::UnsealedOverflow(o) => (
                "OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW",
                overflow_code(o).to_string(),
                overflow_code(s.unsealed_overflow).to_string(),
            ),
        }
    }
}

/// The value of `OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW` for a policy.
fn overflow_code(o: UnsealedOverflow) -> u64 {
    match o {
        UnsealedOverflow::Coalesce => 0,
        UnsealedOverflow::Reject => 1,
    }
}

/// The contract's name of an admission policy.
fn policy_name(p: AdmissionPolicy) -> &'static str {
    match p {
        AdmissionPolicy::FloorOnly => "FLOOR_ONLY",
        AdmissionPolicy::NonDecreasing => "NONDECREASING",
        AdmissionPolicy::StrictlyIncreasing => "STRICTLY_INCREASING",
    }
}

/// The config entries accepted on the first reference, with copies of
/// their string and blob payloads (`ovstage_get_config` lends them out).
pub(crate) struct ConfigCopy {
    entries: Vec<ovstage_config_entry_t>,
    _payloads: Vec<Box<[u8]>>,
}

// SAFETY: the entries are never changed after construction and their
// pointers refer only to `_payloads`, which the copy owns; sharing read-only
// access across threads is sound.
unsafe impl Send for ConfigCopy {}
// SAFETY: as above.
unsafe impl Sync for ConfigCopy {}

impl ConfigCopy {
    fn empty() -> ConfigCopy {
        ConfigCopy { entries: Vec::new(), _payloads: Vec::new() }
    }
}

struct Active {
    settings: Settings,
    config: Arc<ConfigCopy>,
}

#[derive(Default)]
struct ProcessState {
    /// Explicit initializations outstanding.
    explicit: usize,
    /// Live instances.
    instances: usize,
    active: Option<Active>,
}

static PROCESS: Mutex<ProcessState> = Mutex::new(ProcessState { explicit: 0, instances: 0, active: None });

fn state() -> MutexGuard<'static, ProcessState> {
    crate::sync::lock(&PROCESS)
}

/// Whether any reference (initialization or instance) is held.
pub(crate) fn is_bootstrapped() -> bool {
    let s = state();
    s.explicit + s.instances > 0
}

/// A reference held by an instance; dropping it releases the reference.
pub(crate) struct ProcessRef {
    pub(crate) settings: Settings,
    pub(crate) config: Arc<ConfigCopy>,
}

impl ProcessRef {
    /// The entries this instance's process state was set up with.
    pub(crate) fn entries(&self) -> &[ovstage_config_entry_t] {
        &self.config.entries
    }
}

/// Takes an instance's reference, setting up defaults when it is the
/// first.
pub(crate) fn acquire() -> ProcessRef {
    let mut s = state();
    let active =
        s.active.get_or_insert_with(|| Active { settings: Settings::default(), config: Arc::new(ConfigCopy::empty()) });
    let r = ProcessRef { settings: active.settings.clone(), config: active.config.clone() };
    s.instances += 1;
    r
}

impl Drop for ProcessRef {
    fn drop(&mut self) {
        let mut s = state();
        s.instances -= 1;
        let last = released_last(&mut s);
        drop(s);
        if last {
            log::shutdown();
        }
    }
}

/// Drops the active settings when no reference is left; true when that
/// happened (the caller then tears down logging, outside the lock).
fn released_last(s: &mut ProcessState) -> bool {
    s.explicit + s.instances == 0 && s.active.take().is_some()
}

fn key_name(key_type: u32, key: u32) -> String {
    format!("config entry (key type {key_type}, key {key})")
}

/// What one entry asks for, and the payload bytes its copy keeps.
type Parsed = (Option<Setting>, Option<Box<[u8]>>);

/// Reads and checks one entry: its setting (`None` for accepted entries
/// that change nothing) and the payload bytes to keep.
///
/// # Safety
/// String and blob payloads of the entry are readable.
unsafe fn parse(entry: &ovstage_config_entry_t) -> Result<Parsed> {
    let key_type = entry.key_type.0;
    // SAFETY: every member of the key union is a 32-bit integer carrier,
    // so reading any of them reads the key as written.
    let key = unsafe { entry.key.uint64_key.0 };
    let name = key_name(key_type, key);
    match key_type {
        t if t == KeyType::OVSTAGE_CONFIG_KEY_TYPE_UINT64 as u32 => {
            // SAFETY: the key type says the value is a `u64`.
            let v = unsafe { entry.value.uint_value };
            let setting = match key {
                k if k == U64Key::OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY as u32 => match v {
                    0 => None,
                    _ => Some(Setting::Admission(
                        u32::try_from(v).ok().and_then(AdmissionPolicy::from_raw).ok_or_else(|| {
                            Error::invalid_argument(format!(
                                "OVSTAGE_CONFIG_RUNTIME_DEFAULT_ORDINAL_ADMISSION_POLICY: {v} is not an ordinal admission policy (0-3)"
                            ))
                        })?,
                    )),
                },
                k if k == U64Key::OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL as u32 => {
                    const RUNTIME_DEFAULT: u64 = Model::OVSTAGE_HIERARCHY_COMPUTATION_MODEL_RUNTIME_DEFAULT as u64;
                    match v {
                        RUNTIME_DEFAULT => None,
                        1..=3 => Some(Setting::HierarchyModel(v)),
                        _ => {
                            return Err(Error::invalid_argument(format!(
                                "OVSTAGE_CONFIG_RUNTIME_DEFAULT_HIERARCHY_COMPUTATION_MODEL: {v} is not a hierarchy computation model (1-4)"
                            )));
                        }
                    }
                }
                k if k == U64Key::OVSTAGE_CONFIG_RUNTIME_LANE_COUNT as u32 => {
                    if v > 4096 {
                        return Err(Error::invalid_argument(format!(
                            "OVSTAGE_CONFIG_RUNTIME_LANE_COUNT: {v} lanes is more than the 4096 supported"
                        )));
                    }
                    Some(Setting::Lanes(v))
                }
                k if k == U64Key::OVSTAGE_CONFIG_RUNTIME_HISTORY_DEPTH as u32 => {
                    Some(Setting::HistoryDepth(if v == 0 { Settings::default().history_depth } else { v }))
                }
                k if k == U64Key::OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_VERSIONS as u32 => {
                    Some(Setting::MaxVersions(if v == 0 { Settings::default().max_versions } else { v }))
                }
                k if k == U64Key::OVSTAGE_CONFIG_RUNTIME_MAX_UNSEALED_BYTES as u32 => {
                    Some(Setting::MaxUnsealedBytes(if v == 0 { Settings::default().max_unsealed_bytes } else { v }))
                }
                k if k == U64Key::OVSTAGE_CONFIG_RUNTIME_MAX_OPS as u32 => {
                    Some(Setting::MaxOps(if v == 0 { Settings::default().max_ops } else { v }))
                }
                k if k == U64Key::OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW as u32 => match v {
                    0 => Some(Setting::UnsealedOverflow(UnsealedOverflow::Coalesce)),
                    1 => Some(Setting::UnsealedOverflow(UnsealedOverflow::Reject)),
                    _ => {
                        return Err(Error::invalid_argument(format!(
                            "OVSTAGE_CONFIG_RUNTIME_UNSEALED_OVERFLOW: {v} is not an overflow policy (0 coalesce, 1 reject)"
                        )));
                    }
                },
                _ => return Err(Error::invalid_argument(format!("{name}: unknown uint64 config key"))),
            };
            Ok((setting, None))
        }
        t if t == KeyType::OVSTAGE_CONFIG_KEY_TYPE_STRING as u32 => {
            if key != StringKey::OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH as u32 {
                return Err(Error::invalid_argument(format!("{name}: unknown string config key")));
            }
            // SAFETY: the key type says the value is a string view, readable
            // per this function's contract.
            let text = unsafe { strings::text(entry.value.string_value, "OVSTAGE_CONFIG_BINARY_PACKAGE_ROOT_PATH") }?;
            // The package root locates a runtime closure for static loaders;
            // this library has none and only records the entry.
            let mut bytes = text.as_bytes().to_vec();
            bytes.push(0);
            Ok((None, Some(bytes.into_boxed_slice())))
        }
        t if t < KeyType::OVSTAGE_CONFIG_KEY_TYPE_COUNT as u32 => {
            Err(Error::invalid_argument(format!("{name}: no config key of this type is defined")))
        }
        _ => Err(Error::invalid_argument(format!("config entry: unknown key type {key_type}"))),
    }
}

/// Reads and checks a whole config: its settings and a copy of it.
///
/// # Safety
/// `config` is NULL or a readable config.
unsafe fn read_config(config: *const ovstage_config_t) -> Result<(Vec<Setting>, ConfigCopy)> {
    if config.is_null() {
        return Ok((Vec::new(), ConfigCopy::empty()));
    }
    // SAFETY: non-NULL and readable per the contract.
    let config = unsafe { &*config };
    // SAFETY: the entries are readable per the contract.
    let entries = unsafe { strings::slice(config.entries, config.entry_count, "ovstage_config_t::entries") }?;
    let mut seen = HashSet::new();
    let mut settings = Vec::new();
    let mut copy = ConfigCopy::empty();
    for (i, entry) in entries.iter().enumerate() {
        // SAFETY: every key member is a 32-bit carrier (see `parse`).
        let key = (entry.key_type.0, unsafe { entry.key.uint64_key.0 });
        if !seen.insert(key) {
            return Err(Error::invalid_argument(format!(
                "config entry {i}: {} appears more than once",
                key_name(key.0, key.1)
            )));
        }
        // SAFETY: payloads are readable per the contract.
        let (setting, payload) = unsafe { parse(entry) }.map_err(|e| e.prefixed(&format!("config entry {i}")))?;
        settings.extend(setting);
        let mut kept = *entry;
        if let Some(bytes) = payload {
            kept.value = ovstage_config_entry_value_t {
                string_value: ovx_string_t { ptr: bytes.as_ptr().cast(), length: bytes.len() - 1 },
            };
            copy._payloads.push(bytes);
        }
        copy.entries.push(kept);
    }
    Ok((settings, copy))
}

/// Takes an explicit reference to the process state, applying `config`
/// when it is the first reference (the logic of `ovstage_initialize`).
///
/// # Safety
/// `config` is NULL or readable.
pub(crate) unsafe fn initialize(config: *const ovstage_config_t) -> Result<()> {
    // SAFETY: forwarded.
    let (settings, copy) = unsafe { read_config(config) }.map_err(|e| e.prefixed("ovstage_initialize"))?;
    let mut s = state();
    match &s.active {
        None => {
            let mut active = Settings::default();
            for setting in &settings {
                setting.apply(&mut active);
            }
            s.active = Some(Active { settings: active, config: Arc::new(copy) });
        }
        Some(active) => {
            if let Some(conflict) = settings.iter().find(|st| !st.agrees(&active.settings)) {
                let (key, wanted, current) = conflict.describe(&active.settings);
                return Err(Error::invalid_argument(format!(
                    "ovstage_initialize: {key} {wanted} conflicts with the active process settings ({current}); \
                     settings change only after every initialization and instance is released"
                )));
            }
        }
    }
    s.explicit += 1;
    Ok(())
}

/// Drops an explicit reference (the logic of `ovstage_shutdown`); tears
/// down logging when it was the last reference.
pub(crate) fn shutdown() -> Result<()> {
    let mut s = state();
    if s.explicit == 0 {
        return Err(Error::invalid_argument("ovstage_shutdown: called without a matching ovstage_initialize()"));
    }
    s.explicit -= 1;
    let last = released_last(&mut s);
    drop(s);
    if last {
        log::shutdown();
    }
    Ok(())
}

thread_local! {
    static EXECUTABLE_DIR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// The running executable's directory, kept for C in thread-local
/// storage until the thread's next call (the logic of
/// `ovstage_executable_dir`).
pub(crate) fn executable_dir() -> ovx_string_t {
    let dir = std::env::current_exe().ok().and_then(|p| p.parent().and_then(|d| d.to_str().map(str::to_owned)));
    EXECUTABLE_DIR.with(|slot| {
        let mut slot = slot.borrow_mut();
        *slot = dir.map(|d| strings::c_string(&d));
        slot.as_ref().map_or(ovx_string_t::NONE, strings::view)
    })
}
