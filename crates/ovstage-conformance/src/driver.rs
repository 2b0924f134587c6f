//! One instance of the library under test, driven through the vtable and
//! the path dictionary. Every call appends one line to the transcript:
//! what was called, with what, and the status and outputs, normalised so
//! that two libraries' transcripts compare line by line:
//!
//! - op ids and handles are named by kind and order of first appearance
//!   (`op1`, `q2`, `r1`, ...); 0 stays `0`;
//! - read results are listed per (attribute, ordinal, prim) in path order,
//!   whatever groups they came in;
//! - messages are not printed (their wording is each library's own), only
//!   whether an error has one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::{CString, c_char};
use std::ptr::{null, null_mut};

use ovstage_abi::CBool;
use ovstage_abi::api::ovstage_vtable_t;
use ovstage_abi::api_types::*;
use ovstage_abi::dlpack::{DLDataType, DLTensor};
use ovstage_abi::ovx_string::{ovx_string_or_token_t, ovx_string_t};
use ovstage_abi::ovx_types::ovx_api_result_t;
use ovstage_abi::path_dictionary::path_dictionary_instance_t;
use ovstage_abi::path_dictionary_vtable::path_dictionary_vtable_t;

use crate::library::Library;
use crate::payload::Payload;

/// `OVSTAGE_TIMEOUT_INFINITE`.
pub(crate) const INFINITE: u64 = u64::MAX;

/// The text of a library-owned view (empty for `{NULL, 0}`).
pub(crate) fn text(v: ovx_string_t) -> String {
    if v.ptr.is_null() || v.length == 0 {
        return String::new();
    }
    // SAFETY: a non-empty library view has `length` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(v.ptr.cast::<u8>(), v.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

fn view(s: &str) -> ovx_string_t {
    ovx_string_t { ptr: s.as_ptr().cast::<c_char>(), length: s.len() }
}

/// The contract's name of a status.
pub(crate) fn status_name(status: u32) -> String {
    match status {
        0 => "OK".into(),
        1 => "INVALID_ARGUMENT".into(),
        2 => "INVALID_HANDLE".into(),
        3 => "NOT_FOUND".into(),
        4 => "PRIM_NOT_FOUND".into(),
        5 => "WRITE_FLOOR_VIOLATION".into(),
        6 => "NOT_SUPPORTED".into(),
        7 => "QUEUE_FULL".into(),
        8 => "END_OF_ITERATION".into(),
        9 => "OUT_OF_MEMORY".into(),
        10 => "LAYOUT_CHANGED".into(),
        11 => "TIMEOUT".into(),
        12 => "OP_FAILED".into(),
        13 => "OUT_OF_RANGE".into(),
        99 => "INTERNAL".into(),
        other => format!("STATUS_{other}"),
    }
}

/// An attribute argument: by name (string form) or as an interned token.
#[derive(Clone, Copy)]
pub(crate) enum Attr<'a> {
    Name(&'a str),
    Token(&'a str),
    /// A raw token value (0 or unknown).
    Raw(u64),
}

/// One predicate of a filter.
pub(crate) struct Pred<'a> {
    pub(crate) attribute: &'a str,
    pub(crate) op: u32,
    pub(crate) values: &'a [&'a str],
}

/// A read's ordinal range.
#[derive(Clone, Copy)]
pub(crate) enum Range {
    Latest,
    Snapshot(u64),
    Between(u64, u64),
}

impl Range {
    fn c(self) -> ovstage_ordinal_range_t {
        let (start, end, has) = match self {
            Range::Latest => (0, u64::MAX, false),
            Range::Snapshot(o) => (0, o, false),
            Range::Between(a, b) => (a, b, true),
        };
        ovstage_ordinal_range_t { start_ordinal: start, end_ordinal: end, has_start_ordinal: CBool::from(has) }
    }

    fn describe(self) -> String {
        match self {
            Range::Latest => "latest".into(),
            Range::Snapshot(o) => format!("at {o}"),
            Range::Between(a, b) => format!("({a}, {b}]"),
        }
    }
}

/// A map session's description.
pub(crate) struct MapSpec<'a> {
    pub(crate) attribute: &'a str,
    /// `(code, bits, lanes)`, or `None` for "no dtype" (all zero).
    pub(crate) dtype: Option<(u8, u8, u16)>,
    pub(crate) semantic: u32,
    pub(crate) prim_mode: u32,
    pub(crate) attribute_mode: u32,
}

/// One instance and its transcript.
pub(crate) struct Driver<'l> {
    lib: &'l Library,
    inst: *mut ovstage_instance_t,
    vt: &'l ovstage_vtable_t,
    ctx: *mut ovstage_context_t,
    dvt: &'l path_dictionary_vtable_t,
    dict: *mut path_dictionary_instance_t,
    names: HashMap<(&'static str, u64), String>,
    counts: HashMap<&'static str, usize>,
    paths: HashMap<u64, String>,
    /// The transcript.
    pub(crate) lines: Vec<String>,
    /// Whether read rows show their group's semantic (`sem=N`); off by
    /// default, so transcripts recorded before it stay as they were.
    pub(crate) show_semantic: bool,
}

impl<'l> Driver<'l> {
    /// A new instance of `lib`.
    pub(crate) fn new(lib: &'l Library) -> Result<Driver<'l>, String> {
        let name = CString::new("conformance").expect("no NUL");
        let inst = lib
            .create_instance(&name)
            .map_err(|s| format!("ovstage_create_instance: {}: {}", status_name(s), lib.last_error()))?;
        // SAFETY: a created instance has a vtable and context that live as
        // long as it does.
        let (vt, ctx) = unsafe { (&*(*inst).vtable, (*inst).context) };
        // SAFETY: live instance.
        let dict = unsafe { (vt.get_path_dictionary.expect("slot"))(ctx) };
        if dict.is_null() {
            return Err("get_path_dictionary returned NULL".into());
        }
        // SAFETY: the dictionary lives as long as the instance.
        let dvt = unsafe { &*(*dict).vtable };
        Ok(Driver {
            lib,
            inst,
            vt,
            ctx,
            dvt,
            dict,
            names: HashMap::new(),
            counts: HashMap::new(),
            paths: HashMap::new(),
            lines: Vec::new(),
            show_semantic: false,
        })
    }

    /// Appends a line to the transcript.
    pub(crate) fn note(&mut self, line: impl Into<String>) {
        self.lines.push(line.into());
    }

    /// The transcript name of id `raw` of `kind`.
    fn name(&mut self, kind: &'static str, raw: u64) -> String {
        if raw == 0 {
            return "0".into();
        }
        // Ops, reads and ordinal queries are used right after they are
        // made: numbering them would renumber every later line after one
        // difference, so they are named by kind alone.
        if matches!(kind, "op" | "r" | "oq") {
            return kind.into();
        }
        if let Some(n) = self.names.get(&(kind, raw)) {
            return n.clone();
        }
        let c = self.counts.entry(kind).or_default();
        *c += 1;
        let n = format!("{kind}{c}");
        self.names.insert((kind, raw), n.clone());
        n
    }

    /// The raw id named `name` (for passing ids back).
    fn dctx(&self) -> *mut ovstage_abi::path_dictionary::path_dictionary_context_t {
        // SAFETY: the dictionary bundle lives as long as the instance.
        unsafe { (*self.dict).context }
    }

    fn dict_status(&self, r: ovx_api_result_t) -> u32 {
        if r.status.0 != 0 && !r.error.ptr.is_null() {
            // SAFETY: an error result's message is released through the
            // dictionary that made it.
            unsafe { (self.dvt.release_error.expect("slot"))(self.dctx(), r.error) };
        }
        r.status.0
    }

    // ---- path dictionary

    /// Interns `names` (not printed: interning is not under test here).
    pub(crate) fn tokens(&mut self, names: &[&str]) -> Vec<u64> {
        let views: Vec<ovx_string_t> = names.iter().map(|n| view(n)).collect();
        let mut out = vec![0u64; names.len()];
        // SAFETY: arrays of the given length.
        let r = unsafe {
            (self.dvt.create_tokens_from_strings.expect("slot"))(
                self.dctx(),
                views.as_ptr(),
                views.len(),
                out.as_mut_ptr(),
            )
        };
        let status = self.dict_status(r);
        if status != 0 {
            self.note(format!("create_tokens_from_strings {names:?} -> {}", status_name(status)));
        }
        out
    }

    /// The string of `token`: `get_strings_from_tokens`, printed.
    pub(crate) fn token_string(&mut self, token: u64, label: &str) {
        let mut out = ovx_string_t::NONE;
        // SAFETY: one token, one output.
        let r = unsafe { (self.dvt.get_strings_from_tokens.expect("slot"))(self.dctx(), &token, 1, &mut out) };
        let status = self.dict_status(r);
        let s = if status == 0 { format!(" {:?}", text(out)) } else { String::new() };
        self.note(format!("get_strings_from_tokens({label}) -> {}{s}", status_name(status)));
    }

    /// A path list of `paths`: `create_path_list_from_strings`, printed.
    pub(crate) fn path_list(&mut self, paths: &[&str]) -> u64 {
        let views: Vec<ovx_string_t> = paths.iter().map(|p| view(p)).collect();
        let mut list = 0;
        // SAFETY: arrays of the given length, valid output.
        let r = unsafe {
            (self.dvt.create_path_list_from_strings.expect("slot"))(self.dctx(), views.as_ptr(), views.len(), &mut list)
        };
        let status = self.dict_status(r);
        let n = self.name("pl", list);
        self.note(format!("create_path_list_from_strings {paths:?} -> {} {n}", status_name(status)));
        list
    }

    /// `release_path_list_reference`, printed.
    pub(crate) fn release_path_list(&mut self, list: u64) {
        // SAFETY: any value is a valid argument; the dictionary checks it.
        let r = unsafe { (self.dvt.release_path_list_reference.expect("slot"))(self.dctx(), list) };
        let status = self.dict_status(r);
        let n = self.name("pl", list);
        self.note(format!("release_path_list_reference {n} -> {}", status_name(status)));
    }

    /// The text of a prim path id (cached).
    fn path_text(&mut self, path: u64) -> String {
        if let Some(t) = self.paths.get(&path) {
            return t.clone();
        }
        let mut buffer = [0u64; 128];
        let mut per_path: *mut u64 = null_mut();
        let (mut count, mut done) = (0usize, 0usize);
        // SAFETY: one path; the buffer and outputs are valid.
        let r = unsafe {
            (self.dvt.get_tokens_from_paths.expect("slot"))(
                self.dctx(),
                &path,
                1,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut per_path,
                &mut count,
                &mut done,
            )
        };
        if self.dict_status(r) != 0 || done != 1 || per_path.is_null() {
            return format!("<path {path}?>");
        }
        // SAFETY: the library points `per_path` at `count` tokens of
        // `buffer`.
        let tokens = unsafe { std::slice::from_raw_parts(per_path, count) }.to_vec();
        let mut strings = vec![ovx_string_t::NONE; tokens.len()];
        // SAFETY: arrays of the same length.
        let r = unsafe {
            (self.dvt.get_strings_from_tokens.expect("slot"))(
                self.dctx(),
                tokens.as_ptr(),
                tokens.len(),
                strings.as_mut_ptr(),
            )
        };
        let t = if self.dict_status(r) == 0 {
            strings.iter().map(|s| format!("/{}", text(*s))).collect::<String>()
        } else {
            format!("<path {path}?>")
        };
        self.paths.insert(path, t.clone());
        t
    }

    /// The paths of `count` entries of `list` from `offset`.
    fn list_paths(&mut self, list: u64, offset: u32, count: u32) -> Vec<String> {
        let mut ids = vec![0u64; count as usize];
        let mut got = 0usize;
        // SAFETY: output of `count` entries.
        let r = unsafe {
            (self.dvt.get_paths_from_path_list.expect("slot"))(
                self.dctx(),
                list,
                offset as usize,
                count as usize,
                ids.as_mut_ptr(),
                &mut got,
            )
        };
        if self.dict_status(r) != 0 {
            return vec!["<unreadable path list>".into(); count as usize];
        }
        ids.truncate(got);
        ids.into_iter().map(|p| self.path_text(p)).collect()
    }

    /// Prim ids as the paths they name.
    fn id_paths(&mut self, ids: &[u64]) -> String {
        let paths: Vec<String> = ids.iter().map(|id| self.path_text(*id)).collect();
        format!("paths {paths:?}")
    }

    /// The paths a prim group covers, in element order.
    fn group_paths(&mut self, prims: &ovstage_prim_group_t) -> Vec<String> {
        if prims.index_map.is_null() {
            return self.list_paths(prims.list, prims.offset, prims.count);
        }
        let mut total = 0usize;
        // SAFETY: valid output.
        let r = unsafe { (self.dvt.get_num_paths_from_path_list.expect("slot"))(self.dctx(), prims.list, &mut total) };
        if self.dict_status(r) != 0 {
            return vec!["<unreadable path list>".into(); prims.count as usize];
        }
        let all = self.list_paths(prims.list, 0, total as u32);
        // SAFETY: `count` positions.
        let positions = unsafe { std::slice::from_raw_parts(prims.index_map, prims.count as usize) };
        positions.iter().map(|p| all.get(*p as usize).cloned().unwrap_or_else(|| format!("<position {p}>"))).collect()
    }

    // ---- queries

    /// `query_from_path_list` on a new list of `paths` (the list released
    /// after), printed. Returns the query handle.
    pub(crate) fn query_paths(&mut self, paths: &[&str]) -> u64 {
        let list = self.path_list(paths);
        let q = self.query_from_list(list);
        self.release_path_list(list);
        q
    }

    /// `query_from_path_list` on a raw list id, printed.
    pub(crate) fn query_from_list(&mut self, list: u64) -> u64 {
        let mut q = 0;
        // SAFETY: live instance, valid output.
        let status = unsafe { (self.vt.query_from_path_list.expect("slot"))(self.ctx, list, &mut q) }.0;
        let (l, n) = (self.name("pl", list), self.name("q", q));
        self.note(format!("query_from_path_list {l} -> {} {n}", status_name(status)));
        q
    }

    /// `query` with `filter` (None: a NULL filter) and attributes, printed;
    /// returns (op, handle).
    pub(crate) fn query(&mut self, filter: Option<&[Pred<'_>]>, attrs: &[&str]) -> (u64, u64) {
        let tokens = self.tokens(attrs);
        let mut storage: Vec<Vec<ovx_string_t>> = Vec::new();
        let mut preds = Vec::new();
        if let Some(f) = filter {
            for p in f {
                storage.push(p.values.iter().map(|v| view(v)).collect());
            }
            for (p, values) in f.iter().zip(&storage) {
                preds.push(ovstage_predicate_t {
                    attribute: ovx_string_or_token_t { token: 0, string: view(p.attribute) },
                    op: ovstage_filter_op_t(p.op),
                    values: if values.is_empty() { null() } else { values.as_ptr() },
                    value_count: values.len(),
                });
            }
        }
        let filter_c = ovstage_filter_t { predicates: preds.as_ptr(), count: preds.len() };
        let mut q = 0;
        // SAFETY: live instance; arrays valid for the call.
        let r = unsafe {
            (self.vt.query.expect("slot"))(
                self.ctx,
                if filter.is_some() { &filter_c } else { null() },
                if tokens.is_empty() { null() } else { tokens.as_ptr() },
                tokens.len(),
                &mut q,
            )
        };
        let described: Vec<String> =
            filter.unwrap_or_default().iter().map(|p| format!("{} op{} {:?}", p.attribute, p.op, p.values)).collect();
        let (op, n) = (self.name("op", r.op_index), self.name("q", q));
        self.note(format!("query filter={described:?} attrs={attrs:?} -> {} {op} {n}", status_name(r.status.0)));
        (r.op_index, q)
    }

    /// `fetch_query_result`, printed (attributes sorted, prim count), and
    /// the result released.
    pub(crate) fn fetch_query_result(&mut self, q: u64) {
        // SAFETY: an all-zero result is a valid output buffer.
        let mut res: ovstage_query_result_t = unsafe { std::mem::zeroed() };
        // SAFETY: live instance, valid output.
        let status = unsafe { (self.vt.fetch_query_result.expect("slot"))(self.ctx, q, INFINITE, &mut res) }.0;
        let n = self.name("q", q);
        if status != 0 {
            self.note(format!("fetch_query_result {n} -> {}", status_name(status)));
            return;
        }
        let tokens = if res.attributes.is_null() {
            Vec::new()
        } else {
            // SAFETY: `attribute_count` tokens, valid until released.
            unsafe { std::slice::from_raw_parts(res.attributes, res.attribute_count) }.to_vec()
        };
        let mut names: Vec<String> = tokens.iter().map(|t| self.token_text(*t)).collect();
        names.sort();
        let all = self.name("q", res.all_handle);
        self.note(format!(
            "fetch_query_result {n} -> OK attributes={names:?} prims={} all={all}",
            res.total_prim_count
        ));
        // SAFETY: the result fetched above.
        let status = unsafe { (self.vt.release_query_result.expect("slot"))(self.ctx, &res) }.0;
        self.note(format!("release_query_result -> {}", status_name(status)));
    }

    /// A whole filter query cycle, compactly: `query` (printed), its op
    /// settled, `fetch_query_result` (printed) and the matched prims (read
    /// through `usd-path` at the latest values, in path order) on one
    /// line; the handle is released after.
    pub(crate) fn filter_case(&mut self, filter: &[Pred<'_>]) {
        let (op, h) = self.query(Some(filter), &[]);
        if op != 0 {
            self.settle(op);
        }
        if h == 0 {
            return;
        }
        self.fetch_query_result(h);
        let token = self.tokens(&["usd-path"]);
        let mut read = 0;
        // SAFETY: live instance; arrays and output valid.
        let r = unsafe {
            (self.vt.read_attributes.expect("slot"))(self.ctx, h, token.as_ptr(), 1, Range::Latest.c(), &mut read)
        };
        let mut matched = Vec::new();
        let end = if r.status.0 != 0 {
            r.status.0
        } else {
            loop {
                // SAFETY: an all-zero group is a valid output buffer.
                let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
                // SAFETY: live instance, valid output.
                let status = unsafe { (self.vt.fetch_read_next.expect("slot"))(self.ctx, read, INFINITE, &mut g) }.0;
                if status != 0 {
                    break status;
                }
                matched.extend(self.group_paths(&g.prims));
                // SAFETY: the group fetched above.
                unsafe { (self.vt.release_group.expect("slot"))(self.ctx, &g) };
            }
        };
        if r.op_index != 0 {
            let mut w =
                ovstage_op_wait_result_t { error_op_ids: null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
            // SAFETY: live instance, valid output.
            unsafe { (self.vt.wait_op.expect("slot"))(self.ctx, r.op_index, INFINITE, &mut w) };
            // SAFETY: live instance.
            unsafe { (self.vt.release_op.expect("slot"))(self.ctx, r.op_index) };
        }
        if read != 0 {
            // SAFETY: live instance.
            let rr = unsafe { (self.vt.release_read.expect("slot"))(self.ctx, read) };
            if rr.op_index != 0 {
                let mut w =
                    ovstage_op_wait_result_t { error_op_ids: null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
                // SAFETY: live instance, valid output.
                unsafe { (self.vt.wait_op.expect("slot"))(self.ctx, rr.op_index, INFINITE, &mut w) };
                // SAFETY: live instance.
                unsafe { (self.vt.release_op.expect("slot"))(self.ctx, rr.op_index) };
            }
        }
        matched.sort();
        let n = self.name("q", h);
        self.note(format!("  matched {n} = {matched:?} ({})", status_name(end)));
        let op = self.release_query(h);
        if op != 0 {
            self.settle(op);
        }
    }

    fn token_text(&mut self, token: u64) -> String {
        let mut out = ovx_string_t::NONE;
        // SAFETY: one token, one output.
        let r = unsafe { (self.dvt.get_strings_from_tokens.expect("slot"))(self.dctx(), &token, 1, &mut out) };
        if self.dict_status(r) == 0 { text(out) } else { format!("<token {token}?>") }
    }

    /// `release_query`, printed.
    pub(crate) fn release_query(&mut self, q: u64) -> u64 {
        // SAFETY: live instance.
        let r = unsafe { (self.vt.release_query.expect("slot"))(self.ctx, q) };
        let (n, op) = (self.name("q", q), self.name("op", r.op_index));
        self.note(format!("release_query {n} -> {} {op}", status_name(r.status.0)));
        r.op_index
    }

    // ---- ops

    /// `wait_op`, printed with the ids of failed ops.
    pub(crate) fn wait(&mut self, op: u64, timeout: u64) -> u32 {
        let mut r = ovstage_op_wait_result_t { error_op_ids: null(), error_op_id_count: 0, lowest_pending_op_id: 0 };
        // SAFETY: live instance, valid output.
        let status = unsafe { (self.vt.wait_op.expect("slot"))(self.ctx, op, timeout, &mut r) }.0;
        let ids: Vec<u64> = if r.error_op_ids.is_null() {
            Vec::new()
        } else {
            // SAFETY: `error_op_id_count` ids, valid until the next wait.
            unsafe { std::slice::from_raw_parts(r.error_op_ids, r.error_op_id_count) }.to_vec()
        };
        let failed: Vec<&str> = ids.iter().map(|i| if *i == op { "self" } else { "other" }).collect();
        let has_message = ids.first().is_some_and(|i| {
            // SAFETY: live instance; a view owned by the library.
            !text(unsafe { (self.vt.get_last_op_error.expect("slot"))(self.ctx, *i) }).is_empty()
        });
        let n = self.name("op", op);
        let t = if timeout == INFINITE { "inf".to_string() } else { timeout.to_string() };
        let extra = if failed.is_empty() { String::new() } else { format!(" failed={failed:?} message={has_message}") };
        self.note(format!("wait_op {n} timeout={t} -> {}{extra}", status_name(status)));
        status
    }

    /// `release_op`, printed.
    pub(crate) fn release_op(&mut self, op: u64) {
        // SAFETY: live instance.
        let status = unsafe { (self.vt.release_op.expect("slot"))(self.ctx, op) }.0;
        let n = self.name("op", op);
        self.note(format!("release_op {n} -> {}", status_name(status)));
    }

    /// Waits for `op` (infinite) and releases it when the wait returned.
    pub(crate) fn settle(&mut self, op: u64) -> u32 {
        let status = self.wait(op, INFINITE);
        if op != 0 && status != 11 {
            self.release_op(op);
        }
        status
    }

    // ---- writes

    fn attr(&mut self, a: Attr<'_>) -> (ovx_string_or_token_t, String) {
        match a {
            Attr::Name(n) => (ovx_string_or_token_t { token: 0, string: view(n) }, format!("{n:?}")),
            Attr::Token(n) => {
                let t = self.tokens(&[n])[0];
                (ovx_string_or_token_t { token: t, string: ovx_string_t::NONE }, format!("token {n:?}"))
            }
            Attr::Raw(t) => (ovx_string_or_token_t { token: t, string: ovx_string_t::NONE }, format!("raw token {t}")),
        }
    }

    /// `write_attribute`, printed; returns the op (0 when refused).
    pub(crate) fn write(
        &mut self,
        q: u64,
        attribute: Attr<'_>,
        ordinal: u64,
        payload: &mut Payload,
        insert: bool,
    ) -> u64 {
        let (a, label) = self.attr(attribute);
        let data = payload.data();
        // SAFETY: live instance; the payload outlives the op (the caller
        // settles it before dropping the payload).
        let r = unsafe {
            (self.vt.write_attribute.expect("slot"))(
                self.ctx,
                q,
                a,
                ordinal,
                data,
                ovstage_prim_mode_t(u32::from(insert)),
            )
        };
        let (n, op) = (self.name("q", q), self.name("op", r.op_index));
        let mode = if insert { " INSERT" } else { "" };
        self.note(format!(
            "write_attribute {n} {label} @{ordinal} {}{mode} -> {} {op}",
            payload.desc,
            status_name(r.status.0)
        ));
        r.op_index
    }

    /// Writes and settles: the write's enqueue status, or its wait status.
    pub(crate) fn write_settled(&mut self, q: u64, attribute: &str, ordinal: u64, mut payload: Payload) -> u32 {
        let op = self.write(q, Attr::Name(attribute), ordinal, &mut payload, false);
        if op == 0 {
            return u32::MAX;
        }
        self.settle(op)
    }

    /// `write_attributes`, printed.
    pub(crate) fn write_many(&mut self, q: u64, writes: &mut [(&str, Payload)], ordinal: u64, insert: bool) -> u64 {
        let mut entries = Vec::new();
        let mut labels = Vec::new();
        for (name, payload) in writes.iter_mut() {
            entries.push(ovstage_attribute_write_t {
                attribute: ovx_string_or_token_t { token: 0, string: view(name) },
                data: payload.data(),
            });
            labels.push(format!("{name:?}: {}", payload.desc));
        }
        // SAFETY: live instance; entries and payloads outlive the op.
        let r = unsafe {
            (self.vt.write_attributes.expect("slot"))(
                self.ctx,
                q,
                if entries.is_empty() { null() } else { entries.as_ptr() },
                entries.len(),
                ordinal,
                ovstage_prim_mode_t(u32::from(insert)),
            )
        };
        let (n, op) = (self.name("q", q), self.name("op", r.op_index));
        self.note(format!("write_attributes {n} @{ordinal} {labels:?} -> {} {op}", status_name(r.status.0)));
        r.op_index
    }

    /// `delete_attributes`, printed.
    pub(crate) fn delete(&mut self, q: u64, attributes: &[&str], ordinal: u64) -> u64 {
        let attrs: Vec<ovx_string_or_token_t> =
            attributes.iter().map(|a| ovx_string_or_token_t { token: 0, string: view(a) }).collect();
        // SAFETY: live instance; the array is valid for the call.
        let r = unsafe {
            (self.vt.delete_attributes.expect("slot"))(
                self.ctx,
                q,
                if attrs.is_empty() { null() } else { attrs.as_ptr() },
                attrs.len(),
                ordinal,
            )
        };
        let (n, op) = (self.name("q", q), self.name("op", r.op_index));
        self.note(format!("delete_attributes {n} {attributes:?} @{ordinal} -> {} {op}", status_name(r.status.0)));
        r.op_index
    }

    // ---- floors

    /// `advance_write_floor`, printed. `scope`: 0 all, 1 include, 2 exclude.
    pub(crate) fn advance(&mut self, ordinal: u64, scope: u32, attributes: &[&str]) -> u64 {
        let tokens = self.tokens(attributes);
        let desc = ovstage_write_floor_desc_t {
            ordinal,
            scope: ovstage_scope_t(scope),
            attributes: if tokens.is_empty() { null() } else { tokens.as_ptr() },
            attribute_count: tokens.len(),
        };
        // SAFETY: live instance, valid descriptor.
        let r = unsafe { (self.vt.advance_write_floor.expect("slot"))(self.ctx, &desc) };
        let op = self.name("op", r.op_index);
        self.note(format!(
            "advance_write_floor {ordinal} scope={scope} {attributes:?} -> {} {op}",
            status_name(r.status.0)
        ));
        r.op_index
    }

    /// Advances the global floor to `ordinal` and settles it.
    pub(crate) fn seal(&mut self, ordinal: u64) {
        let op = self.advance(ordinal, 0, &[]);
        if op != 0 {
            self.settle(op);
        }
    }

    /// `get_oldest_preserved_ordinal` or `get_attribute_write_floor`, then
    /// `fetch_ordinal` and `release_ordinal_query`, printed.
    pub(crate) fn ordinal_query(&mut self, attribute: Option<Attr<'_>>) {
        let mut h = 0;
        let (r, label) = match attribute {
            None => {
                // SAFETY: live instance, valid output.
                (unsafe { (self.vt.get_oldest_preserved_ordinal.expect("slot"))(self.ctx, &mut h) }, "oldest".into())
            }
            Some(a) => {
                let (a, label) = self.attr(a);
                // SAFETY: live instance, valid output.
                (unsafe { (self.vt.get_attribute_write_floor.expect("slot"))(self.ctx, a, &mut h) }, label)
            }
        };
        let (op, n) = (self.name("op", r.op_index), self.name("oq", h));
        self.note(format!("ordinal query {label} -> {} {op} {n}", status_name(r.status.0)));
        if r.status.0 != 0 {
            return;
        }
        let mut ordinal = 0;
        // SAFETY: live instance, valid output.
        let status = unsafe { (self.vt.fetch_ordinal.expect("slot"))(self.ctx, h, INFINITE, &mut ordinal) }.0;
        let value = if status == 0 { format!(" {ordinal}") } else { String::new() };
        self.note(format!("fetch_ordinal {n} -> {}{value}", status_name(status)));
        // SAFETY: live instance.
        let r = unsafe { (self.vt.release_ordinal_query.expect("slot"))(self.ctx, h) };
        let op = self.name("op", r.op_index);
        self.note(format!("release_ordinal_query {n} -> {} {op}", status_name(r.status.0)));
        if r.op_index != 0 {
            self.settle(r.op_index);
        }
    }

    // ---- reads

    /// `read_attributes`, printed; returns the read handle.
    pub(crate) fn read(&mut self, q: u64, attributes: &[&str], range: Range) -> u64 {
        let tokens = self.tokens(attributes);
        let mut read = 0;
        // SAFETY: live instance; arrays and output valid.
        let r = unsafe {
            (self.vt.read_attributes.expect("slot"))(
                self.ctx,
                q,
                if tokens.is_empty() { null() } else { tokens.as_ptr() },
                tokens.len(),
                range.c(),
                &mut read,
            )
        };
        let (n, op, rn) = (self.name("q", q), self.name("op", r.op_index), self.name("r", read));
        self.note(format!(
            "read_attributes {n} {attributes:?} {} -> {} {op} {rn}",
            range.describe(),
            status_name(r.status.0)
        ));
        read
    }

    /// Fetches every group of `read` (releasing each), prints the rows in
    /// path order and the status that ended the iteration.
    pub(crate) fn drain(&mut self, read: u64) {
        // A key can have several rows: a schema replacement is a tombstone
        // of the old schema and a value of the new one at one ordinal, in
        // groups whose order is unspecified; they are printed sorted (a row
        // repeated, as a query listing a path twice gives, once).
        let mut rows: BTreeMap<(String, u64, String), BTreeSet<String>> = BTreeMap::new();
        let mut groups_seen = 0usize;
        let end = loop {
            // SAFETY: an all-zero group is a valid output buffer.
            let mut g: ovstage_read_group_t = unsafe { std::mem::zeroed() };
            // SAFETY: live instance, valid output.
            let status = unsafe { (self.vt.fetch_read_next.expect("slot"))(self.ctx, read, INFINITE, &mut g) }.0;
            if status != 0 {
                break status;
            }
            groups_seen += 1;
            let attribute = self.token_text(g.attribute);
            let paths = self.group_paths(&g.prims);
            let mut values = group_values(&g);
            // Prim ids are each library's own: show the paths they name.
            if matches!(attribute.as_str(), "usd-path" | "usd-parent" | "usd-children") {
                values = group_ids(&g).into_iter().map(|ids| self.id_paths(&ids)).collect();
            }
            for (i, path) in paths.into_iter().enumerate() {
                let v =
                    if g.is_delete.get() { "deleted".to_string() } else { values.get(i).cloned().unwrap_or_default() };
                let flag = if g.is_array.get() { "array " } else { "" };
                let sem = if self.show_semantic { format!(" sem={}", g.semantic.0) } else { String::new() };
                rows.entry((attribute.clone(), g.ordinal, path)).or_default().insert(format!("{flag}{v}{sem}"));
            }
            // SAFETY: the group fetched above.
            let s = unsafe { (self.vt.release_group.expect("slot"))(self.ctx, &g) }.0;
            if s != 0 {
                self.note(format!("release_group -> {}", status_name(s)));
            }
            if groups_seen > 10_000 {
                break u32::MAX;
            }
        };
        let rn = self.name("r", read);
        for ((a, o, p), vs) in rows {
            for v in vs {
                self.note(format!("  {rn} {a}@{o} {p} = {v}"));
            }
        }
        self.note(format!("fetch_read_next {rn} -> {} (after rows)", status_name(end)));
    }

    /// `release_read`, printed and settled.
    pub(crate) fn release_read(&mut self, read: u64) {
        // SAFETY: live instance.
        let r = unsafe { (self.vt.release_read.expect("slot"))(self.ctx, read) };
        let (rn, op) = (self.name("r", read), self.name("op", r.op_index));
        self.note(format!("release_read {rn} -> {} {op}", status_name(r.status.0)));
        if r.op_index != 0 {
            self.settle(r.op_index);
        }
    }

    /// Read, settle, drain and release: the whole read cycle.
    /// `ovstage_clone` then, when accepted, `ovstage_fetch_clone_result`
    /// and `wait_op`, printed.
    pub(crate) fn clone_prims(&mut self, source: &str, targets: &[&str], ordinal: u64) {
        let views: Vec<ovx_string_t> = targets.iter().map(|t| view(t)).collect();
        // SAFETY: live instance; the views outlive the call.
        let r = unsafe { (self.lib.clone)(self.inst, view(source), views.as_ptr(), views.len(), ordinal) };
        let op = self.name("op", r.op_index);
        self.note(format!("clone {source:?} -> {targets:?} @{ordinal} -> {} {op}", status_name(r.status.0)));
        if r.op_index == 0 {
            return;
        }
        let mut out = ovstage_abi::stage_types::ovstage_clone_result_t {
            ordinal: 0,
            target_count: 0,
            source_prim_count: 0,
            prims_cloned: 0,
        };
        // SAFETY: live instance, valid output.
        let status = unsafe { (self.lib.fetch_clone_result)(self.inst, r.op_index, INFINITE, &mut out) }.0;
        let report = if status == 0 {
            format!(
                " ordinal={} targets={} source_prims={} cloned={}",
                out.ordinal, out.target_count, out.source_prim_count, out.prims_cloned
            )
        } else {
            String::new()
        };
        self.note(format!("fetch_clone_result {op} -> {}{report}", status_name(status)));
        self.settle(r.op_index);
    }

    /// `ovstage_get_hierarchy` over a path list of `paths`, then the fetch,
    /// the result (each input's status and related paths, sorted) and both
    /// releases, printed.
    pub(crate) fn hierarchy(&mut self, paths: &[&str], ordinal: u64, relation: u32) {
        let list = self.path_list(paths);
        let mut h = 0;
        // SAFETY: live instance, valid output.
        let r = unsafe {
            (self.lib.get_hierarchy)(
                self.inst,
                list,
                ordinal,
                ovstage_abi::stage_types::ovstage_hierarchy_relation_t(relation),
                &mut h,
            )
        };
        let (op, hn) = (self.name("op", r.op_index), self.name("h", h));
        self.note(format!("get_hierarchy relation={relation} @{ordinal} -> {} {op} {hn}", status_name(r.status.0)));
        if r.status.0 == 0 {
            // The fetch never blocks: wait for the lookup first, as the
            // contract says (released after the fetch).
            let waited = self.wait(r.op_index, INFINITE);
            self.note(format!("wait_op {op} -> {}", status_name(waited)));
            let mut out = ovstage_abi::stage_types::ovstage_hierarchy_result_t {
                hierarchy_result_id: Default::default(),
                ordinal: 0,
                items: null(),
                input_count: 0,
                paths: null(),
                path_count: 0,
            };
            // SAFETY: live instance, valid output.
            let status = unsafe { (self.lib.fetch_hierarchy_result)(self.inst, h, &mut out) }.0;
            self.note(format!("fetch_hierarchy_result {hn} -> {}", status_name(status)));
            if status == 0 {
                // SAFETY: the library's arrays (NULL when empty), valid
                // until the release below.
                let (items, all) = unsafe {
                    (
                        if out.items.is_null() {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(out.items, out.input_count)
                        },
                        if out.paths.is_null() {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(out.paths, out.path_count)
                        },
                    )
                };
                for (input, item) in paths.iter().zip(items) {
                    let mut related: Vec<String> = all[item.path_offset..item.path_offset + item.path_count]
                        .iter()
                        .map(|p| if p.token != 0 { self.token_text(p.token) } else { text(p.string) })
                        .collect();
                    related.sort();
                    self.note(format!("  {input} {} {related:?}", status_name(item.status.0)));
                }
                // SAFETY: the result fetched above.
                let status = unsafe { (self.lib.release_hierarchy_result)(self.inst, &out) }.0;
                self.note(format!("release_hierarchy_result -> {}", status_name(status)));
            }
            // SAFETY: live instance.
            let r = unsafe { (self.lib.release_hierarchy)(self.inst, h) };
            let op = self.name("op", r.op_index);
            self.note(format!("release_hierarchy {hn} -> {} {op}", status_name(r.status.0)));
            if r.op_index != 0 {
                self.settle(r.op_index);
            }
        }
        if r.op_index != 0 {
            self.settle(r.op_index);
        }
        self.release_path_list(list);
    }

    /// The informational exports: build information (its stable parts),
    /// the hierarchy computation models, the USD stage id; printed.
    pub(crate) fn exports(&mut self) {
        // SAFETY: no arguments; a static record or NULL.
        let info = unsafe { (self.lib.build_info)() };
        if info.is_null() {
            self.note(String::from("get_build_info -> NULL"));
        } else {
            // SAFETY: the library's static record.
            let info = unsafe { &*info };
            let build = text(info.build_string);
            self.note(format!(
                "get_build_info -> struct_size={} build_string starts with 0.3.0+: {}",
                info.struct_size,
                build.starts_with("0.3.0+")
            ));
        }
        let (mut models, mut n) = (null(), 0usize);
        // SAFETY: live instance, valid outputs.
        let status = unsafe { (self.lib.computation_models)(self.inst, &mut models, &mut n) }.0;
        let listed: Vec<String> = if status == 0 && !models.is_null() {
            // SAFETY: `n` descriptors, valid for the instance's lifetime.
            unsafe { std::slice::from_raw_parts(models, n) }
                .iter()
                .map(|m| format!("{} {}", m.model_id.0, text(m.name)))
                .collect()
        } else {
            Vec::new()
        };
        self.note(format!("get_hierarchy_computation_models -> {} {listed:?}", status_name(status)));
        let mut id = 0u64;
        // SAFETY: live instance, valid output.
        let status = unsafe { (self.lib.usd_stage_id)(self.inst, &mut id) }.0;
        self.note(format!("get_usd_stage_id -> {}", status_name(status)));
    }

    /// `ovstage_compute_hierarchy`, printed; the op id (0 when rejected).
    pub(crate) fn compute_hierarchy(&mut self, model: u32, input: u64, output: u64) -> u64 {
        // SAFETY: live instance.
        let r = unsafe {
            (self.lib.compute_hierarchy)(
                self.inst,
                ovstage_abi::stage_types::ovstage_hierarchy_computation_model_id_t(model),
                input,
                output,
            )
        };
        let op = self.name("op", r.op_index);
        self.note(format!(
            "compute_hierarchy model={model} in={input} out={output} -> {} {op}",
            status_name(r.status.0)
        ));
        r.op_index
    }

    pub(crate) fn read_all(&mut self, q: u64, attributes: &[&str], range: Range) {
        let read = self.read(q, attributes, range);
        if read != 0 {
            self.drain(read);
            self.release_read(read);
        }
    }

    // ---- maps

    /// `map_attribute`, printed; returns (op, map handle).
    pub(crate) fn map(&mut self, q: u64, spec: &MapSpec<'_>, ordinal: u64, sizes: Option<&[usize]>) -> (u64, u64) {
        let (code, bits, lanes) = spec.dtype.unwrap_or((0, 0, 0));
        let desc = ovstage_map_desc_t {
            attribute: ovx_string_or_token_t { token: 0, string: view(spec.attribute) },
            dtype: DLDataType { code, bits, lanes },
            semantic: ovstage_attribute_semantic_t(spec.semantic),
            prim_mode: ovstage_prim_mode_t(spec.prim_mode),
            attribute_mode: ovstage_attribute_mode_t(spec.attribute_mode),
        };
        let mut m = 0;
        let (ptr, len) = sizes.map_or((null(), 0), |s| (s.as_ptr(), s.len()));
        // SAFETY: live instance; arrays valid for the call.
        let r = unsafe { (self.vt.map_attribute.expect("slot"))(self.ctx, q, &desc, ordinal, ptr, len, &mut m) };
        let (n, op, mn) = (self.name("q", q), self.name("op", r.op_index), self.name("m", m));
        self.note(format!(
            "map_attribute {n} {:?} dtype={:?} semantic={} prim_mode={} attribute_mode={} @{ordinal} sizes={sizes:?} -> {} {op} {mn}",
            spec.attribute,
            spec.dtype,
            spec.semantic,
            spec.prim_mode,
            spec.attribute_mode,
            status_name(r.status.0)
        ));
        (r.op_index, m)
    }

    /// Fetches every group of map `m`, fills element `k` of each with
    /// `base + k` (as the group's dtype), and unmaps each group; printed.
    pub(crate) fn fill_and_unmap_groups(&mut self, m: u64, base: f64) -> Vec<u64> {
        let mut ops = Vec::new();
        let mn = self.name("m", m);
        let mut k = 0.0;
        loop {
            // SAFETY: an all-zero group is a valid output buffer.
            let mut g: ovstage_map_group_t = unsafe { std::mem::zeroed() };
            // SAFETY: live instance, valid output.
            let status = unsafe { (self.vt.fetch_map_next.expect("slot"))(self.ctx, m, INFINITE, &mut g) }.0;
            if status != 0 {
                self.note(format!("fetch_map_next {mn} -> {}", status_name(status)));
                break;
            }
            let paths = self.group_paths(&g.prims);
            self.note(format!("fetch_map_next {mn} -> OK prims={paths:?} tensors={}", g.data.tensor_count));
            for t in tensors(&g.data) {
                k = fill(t, base + k);
            }
            // SAFETY: live instance; the group fetched above.
            let r = unsafe { (self.vt.unmap_group.expect("slot"))(self.ctx, m, &g, ovstage_cuda_sync_t::default()) };
            let op = self.name("op", r.op_index);
            self.note(format!("unmap_group {mn} -> {} {op}", status_name(r.status.0)));
            ops.push(r.op_index);
        }
        ops
    }

    /// `unmap_attribute`, printed.
    pub(crate) fn unmap_attribute(&mut self, m: u64) -> u64 {
        // SAFETY: live instance.
        let r = unsafe { (self.vt.unmap_attribute.expect("slot"))(self.ctx, m, ovstage_cuda_sync_t::default()) };
        let (mn, op) = (self.name("m", m), self.name("op", r.op_index));
        self.note(format!("unmap_attribute {mn} -> {} {op}", status_name(r.status.0)));
        r.op_index
    }

    // ---- misc

    /// `get_version`, printed.
    pub(crate) fn version(&mut self) {
        let (mut a, mut b, mut c) = (0, 0, 0);
        // SAFETY: live instance, valid outputs.
        unsafe { (self.vt.get_version.expect("slot"))(self.ctx, &mut a, &mut b, &mut c) };
        self.note(format!("get_version -> {a}.{b}.{c}"));
    }

    /// `get_error_string`, printed (whether there is one).
    pub(crate) fn error_string(&mut self, status: u32) {
        // SAFETY: live instance; any status is a valid argument.
        let s = unsafe { (self.vt.get_error_string.expect("slot"))(self.ctx, ovstage_api_status_t(status)) };
        self.note(format!("get_error_string {status} -> {}", if s.is_null() { "NULL" } else { "text" }));
    }

    /// `query_extension`, printed (found or not).
    pub(crate) fn extension(&mut self, name: &str) {
        let c = CString::new(name).expect("no NUL");
        let mut out = null();
        // SAFETY: live instance, valid name and output.
        let status = unsafe { (self.vt.query_extension.expect("slot"))(self.ctx, c.as_ptr(), &mut out) }.0;
        self.note(format!(
            "query_extension {name:?} -> {} {}",
            status_name(status),
            if out.is_null() { "NULL" } else { "table" }
        ));
    }
}

impl Drop for Driver<'_> {
    fn drop(&mut self) {
        // SAFETY: the instance created in `new`, destroyed once.
        unsafe { (self.lib.destroy)(self.inst) };
    }
}

/// The tensors of a group's data.
fn tensors(data: &ovstage_data_t) -> Vec<DLTensor> {
    if data.tensors.is_null() {
        return Vec::new();
    }
    // SAFETY: `tensor_count` descriptors, valid while the group is.
    unsafe { std::slice::from_raw_parts(data.tensors, data.tensor_count as usize) }.to_vec()
}

/// The shape of `t`.
fn shape(t: &DLTensor) -> Vec<i64> {
    if t.shape.is_null() || t.ndim <= 0 {
        return Vec::new();
    }
    // SAFETY: `ndim` extents.
    unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }.to_vec()
}

/// Element `k` of `t` (compact), printed by dtype.
fn element(t: &DLTensor, k: usize) -> String {
    let width = usize::from(t.dtype.bits / 8);
    // SAFETY: the caller stays within the tensor's elements.
    let p = unsafe { t.data.cast::<u8>().add(t.byte_offset as usize + k * width) };
    // SAFETY: `width` readable bytes at `p`.
    let b = unsafe { std::slice::from_raw_parts(p, width) };
    match (t.dtype.code, t.dtype.bits) {
        (2, 32) => format!("{}", f32::from_le_bytes(b.try_into().expect("4"))),
        (2, 64) => format!("{}", f64::from_le_bytes(b.try_into().expect("8"))),
        (0, 32) => format!("{}", i32::from_le_bytes(b.try_into().expect("4"))),
        (0, 64) => format!("{}", i64::from_le_bytes(b.try_into().expect("8"))),
        (1, 8) => format!("{}", b[0]),
        (1, 32) => format!("{}", u32::from_le_bytes(b.try_into().expect("4"))),
        (1, 64) => format!("{}", u64::from_le_bytes(b.try_into().expect("8"))),
        (code, bits) => format!("<{code}/{bits} {b:02x?}>"),
    }
}

/// Each logical element's values of a read group, as text.
fn group_values(g: &ovstage_read_group_t) -> Vec<String> {
    let ts = tensors(&g.data);
    let dtype = |t: &DLTensor| {
        format!("{}{}x{}", ["i", "u", "f", "?"][usize::from(t.dtype.code.min(3))], t.dtype.bits, t.dtype.lanes)
    };
    if g.is_array.get() {
        return ts
            .iter()
            .map(|t| {
                let n: i64 = shape(t).iter().product::<i64>() * i64::from(t.dtype.lanes);
                let v: Vec<String> = (0..n.max(0) as usize).map(|k| element(t, k)).collect();
                format!("{} [{}]", dtype(t), v.join(", "))
            })
            .collect();
    }
    let Some(t) = ts.first() else { return Vec::new() };
    let s = shape(t);
    let rows = s.first().copied().unwrap_or(0).max(0) as usize;
    let per_row = (s.iter().skip(1).product::<i64>() * i64::from(t.dtype.lanes)).max(0) as usize;
    let map = if g.data.index_map.is_null() {
        None
    } else {
        // SAFETY: one entry per element of the group.
        Some(unsafe { std::slice::from_raw_parts(g.data.index_map, g.prims.count as usize) })
    };
    let written = |i: usize| {
        // SAFETY: `count` bits, one per element.
        g.data.mask.is_null() || unsafe { *g.data.mask.add(i / 64) } >> (i % 64) & 1 == 1
    };
    (0..g.prims.count as usize)
        .map(|i| {
            if !written(i) {
                return "unwritten".into();
            }
            let r = map.map_or(i, |m| m[i] as usize);
            if r >= rows {
                return format!("<row {r} of {rows}>");
            }
            let v: Vec<String> = (0..per_row).map(|k| element(t, r * per_row + k)).collect();
            format!("{} [{}]", dtype(t), v.join(", "))
        })
        .collect()
}

/// Each logical element's 64-bit values of a read group (prim ids).
fn group_ids(g: &ovstage_read_group_t) -> Vec<Vec<u64>> {
    let ts = tensors(&g.data);
    let read = |t: &DLTensor, k: usize| {
        // SAFETY: element `k` of a 64-bit tensor of the group.
        unsafe { t.data.cast::<u8>().add(t.byte_offset as usize + 8 * k).cast::<u64>().read_unaligned() }
    };
    let count = |t: &DLTensor| (shape(t).iter().product::<i64>() * i64::from(t.dtype.lanes)).max(0) as usize;
    if ts.iter().any(|t| t.dtype.bits != 64) {
        return Vec::new();
    }
    if g.is_array.get() {
        return ts.iter().map(|t| (0..count(t)).map(|k| read(t, k)).collect()).collect();
    }
    let Some(t) = ts.first() else { return Vec::new() };
    let rows = shape(t).first().copied().unwrap_or(0).max(0) as usize;
    let per_row = count(t).checked_div(rows).unwrap_or(0);
    let map = if g.data.index_map.is_null() {
        None
    } else {
        // SAFETY: one entry per element of the group.
        Some(unsafe { std::slice::from_raw_parts(g.data.index_map, g.prims.count as usize) })
    };
    (0..g.prims.count as usize)
        .map(|i| {
            let r = map.map_or(i, |m| m[i] as usize);
            if r >= rows { Vec::new() } else { (0..per_row).map(|k| read(t, r * per_row + k)).collect() }
        })
        .collect()
}

/// Writes `start, start + 1, ...` into every element of `t` (as its
/// dtype); returns the next value.
fn fill(t: DLTensor, start: f64) -> f64 {
    let n = (shape(&t).iter().product::<i64>() * i64::from(t.dtype.lanes)).max(0) as usize;
    let width = usize::from(t.dtype.bits / 8);
    for k in 0..n {
        let v = start + k as f64;
        let bytes: Vec<u8> = match (t.dtype.code, t.dtype.bits) {
            (2, 32) => (v as f32).to_le_bytes().to_vec(),
            (2, 64) => v.to_le_bytes().to_vec(),
            (0, 32) => (v as i32).to_le_bytes().to_vec(),
            (0, 64) => (v as i64).to_le_bytes().to_vec(),
            (1, 32) => (v as u32).to_le_bytes().to_vec(),
            (1, 64) => (v as u64).to_le_bytes().to_vec(),
            _ => vec![0; width],
        };
        // SAFETY: element `k` of the writable group tensor.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                t.data.cast::<u8>().add(t.byte_offset as usize + k * width),
                width,
            )
        };
    }
    start + n as f64
}
