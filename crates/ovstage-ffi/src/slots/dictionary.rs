//! The path dictionary's function table, over the stage's dictionary.
//!
//! Failures return `OVX_API_ERROR` with a NUL-terminated message allocated
//! here and freed by `release_error`; the instance keeps track of the
//! messages it handed out, so releasing anything else is a logged no-op
//! rather than a bad free.

use std::ffi::CString;

use ovstage_types::{Error, PathList, PrimPath, Result, Token};
use stage::PathDictionary;

use crate::abi::ovx_string::{ovx_string_t, ovx_token_t};
use crate::abi::ovx_types::{ovx_api_result_t, ovx_api_status_t, ovx_primpath_list_t, ovx_primpath_t};
use crate::abi::path_dictionary::path_dictionary_context_t;
use crate::abi::path_dictionary_vtable::path_dictionary_vtable_t;
use crate::error::{self, guard};
use crate::instance::{self, Context};
use crate::{log, strings};

/// The function table every instance's dictionary shares.
pub(crate) static VTABLE: path_dictionary_vtable_t = path_dictionary_vtable_t {
    create_tokens_from_strings: Some(create_tokens_from_strings),
    create_paths_from_tokens: Some(create_paths_from_tokens),
    create_paths_from_strings: Some(create_paths_from_strings),
    create_path_list_from_paths: Some(create_path_list_from_paths),
    create_path_list_from_strings: Some(create_path_list_from_strings),
    add_path_list_reference: Some(add_path_list_reference),
    release_path_list_reference: Some(release_path_list_reference),
    get_strings_from_tokens: Some(get_strings_from_tokens),
    get_tokens_from_paths: Some(get_tokens_from_paths),
    get_num_paths_from_path_list: Some(get_num_paths_from_path_list),
    get_paths_from_path_list: Some(get_paths_from_path_list),
    release_error: Some(release_error),
};

const SUCCESS: ovx_api_result_t = ovx_api_result_t { status: ovx_api_status_t(0), error: ovx_string_t::NONE };

/// An error result whose message the context tracks until released.
fn failure(c: Option<&Context>, e: &Error) -> ovx_api_result_t {
    let text = e.to_string();
    error::set_last_error(&text);
    let Some(c) = c else {
        // Without a context there is nowhere to track the message.
        return ovx_api_result_t { status: ovx_api_status_t(1), error: ovx_string_t::NONE };
    };
    let raw = c.results.hold_error(strings::c_string(&text));
    ovx_api_result_t { status: ovx_api_status_t(1), error: ovx_string_t { ptr: raw, length: text.len() } }
}

/// Runs a dictionary function with its context.
///
/// # Safety
/// `ctx` is NULL or the dictionary context of a live instance.
unsafe fn run(
    ctx: *mut path_dictionary_context_t,
    call: &str,
    body: impl FnOnce(&Context) -> Result<()>,
) -> ovx_api_result_t {
    guard(call, || {
        // SAFETY: forwarded.
        match unsafe { instance::dictionary_context(ctx, call) } {
            Err(e) => failure(None, &e),
            Ok(c) => match body(c) {
                Ok(()) => SUCCESS,
                Err(e) => failure(Some(c), &e.prefixed(call)),
            },
        }
    })
}

/// Writes `values` to an output array of at least `values.len()` entries.
///
/// # Safety
/// `out` is NULL or writable for `values.len()` entries.
unsafe fn put_all<T: Copy>(out: *mut T, values: &[T], what: &str) -> Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    strings::non_null(out, what)?;
    // SAFETY: non-NULL and writable for `values.len()` entries per the caller.
    unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len()) };
    Ok(())
}

/// Entry `i` of the path array `array`; the message is built only on
/// failure (these loops run over every path of a list).
fn path_at(raw: u64, array: &str, i: usize) -> Result<PrimPath> {
    PrimPath::from_raw(raw).ok_or_else(|| Error::invalid_argument(format!("{array}[{i}] is the invalid path 0")))
}

/// C's path ids as prim paths, without a copy; `None` when one is 0.
#[inline(always)]
fn nonzero_ids(raw: &[u64]) -> Option<&[PrimPath]> {
    // A branch-free OR over all ids (it vectorizes): `id - 1` has its top
    // bit set for 0 (and for ids from 2^63 + 1, which no dictionary makes:
    // those are left to the dictionary's check).
    if raw.iter().fold(0u64, |acc, id| acc | id.wrapping_sub(1)) >> 63 != 0 && raw.contains(&0) {
        return None;
    }
    // SAFETY: `PrimPath` is `repr(transparent)` over `NonZeroU64`, which
    // has the size, alignment and (apart from 0) the values of `u64`; no id
    // is 0 (checked above). The slice borrows `raw` for the same lifetime.
    Some(unsafe { std::slice::from_raw_parts(raw.as_ptr().cast::<PrimPath>(), raw.len()) })
}

/// A new list of C's path ids (0 among them is an error naming its index).
/// Checking and copying the ids is most of the cost of a long list: on
/// x86-64 CPUs with AVX2 both run with it (4 ids per instruction instead
/// of 2). Into the dictionary's kept buffer, or a short list's entry, the
/// ids go raw, checked for 0 in the loop that copies them; a list that
/// needs a new buffer is checked for 0 first and then copied as paths
/// (one memcpy, where building it from raw ids converts them one by one);
/// one with a 0 goes raw too, for the dictionary's error.
fn list_of_ids(d: &PathDictionary, raw: &[u64]) -> Result<PathList> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { list_of_ids_avx2(d, raw) };
    }
    list_of_ids_portable(d, raw)
}

/// [`list_of_ids`] for any CPU; always inlined, so that it compiles with
/// the features of its caller.
#[inline(always)]
fn list_of_ids_portable(d: &PathDictionary, raw: &[u64]) -> Result<PathList> {
    match d.needs_new_buffer(raw.len()).then(|| nonzero_ids(raw)).flatten() {
        Some(paths) => d.create_path_list(paths),
        // Raw, the ids are checked as they are copied, and a 0 is named
        // by the dictionary's error.
        None => d.create_path_list_from_ids(raw),
    }
}

/// [`list_of_ids`] compiled for AVX2 (the checks are inlined into it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn list_of_ids_avx2(d: &PathDictionary, raw: &[u64]) -> Result<PathList> {
    list_of_ids_portable(d, raw)
}

fn list(raw: u64) -> Result<PathList> {
    PathList::from_raw(raw).ok_or_else(|| Error::invalid_handle("0 is OVX_INVALID_PRIMPATH_LIST"))
}

unsafe extern "C" fn create_tokens_from_strings(
    ctx: *mut path_dictionary_context_t,
    strings_in: *const ovx_string_t,
    n: usize,
    out: *mut ovx_token_t,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "create_tokens_from_strings", |c| {
            let texts = strings::texts(strings_in, n, "strings")?;
            let tokens: Vec<u64> = c.stage.paths().intern_tokens(&texts)?.iter().map(|t| t.get()).collect();
            put_all(out, &tokens, "out_tokens")
        })
    }
}

unsafe extern "C" fn create_paths_from_tokens(
    ctx: *mut path_dictionary_context_t,
    tokens_per_path: *const ovx_token_t,
    num_tokens_per_path: *const usize,
    n: usize,
    out: *mut ovx_primpath_t,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "create_paths_from_tokens", |c| {
            strings::non_null(tokens_per_path, "tokens_per_path")?;
            let counts = strings::slice(num_tokens_per_path, n, "num_tokens_per_path")?;
            let total = counts.iter().try_fold(0usize, |a, k| a.checked_add(*k));
            let total = total.ok_or_else(|| Error::invalid_argument("num_tokens_per_path adds up past usize"))?;
            let all = strings::slice(tokens_per_path, total, "tokens_per_path")?;
            let mut paths = Vec::with_capacity(n);
            let mut at = 0;
            for (i, k) in counts.iter().enumerate() {
                let tokens = all[at..at + k]
                    .iter()
                    .enumerate()
                    .map(|(j, t)| {
                        Token::from_raw(*t).ok_or_else(|| {
                            Error::invalid_argument(format!("path {i}: component {j} is the invalid token 0"))
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                at += k;
                paths.push(
                    c.stage.paths().path_from_tokens(&tokens).map_err(|e| e.prefixed(&format!("path {i}")))?.get(),
                );
            }
            put_all(out, &paths, "out_prim_paths")
        })
    }
}

unsafe extern "C" fn create_paths_from_strings(
    ctx: *mut path_dictionary_context_t,
    path_strings: *const ovx_string_t,
    n: usize,
    out: *mut ovx_primpath_t,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "create_paths_from_strings", |c| {
            let texts = strings::texts(path_strings, n, "path_strings")?;
            let paths: Vec<u64> = c.stage.paths().intern_paths(&texts)?.iter().map(|p| p.get()).collect();
            put_all(out, &paths, "out_prim_paths")
        })
    }
}

unsafe extern "C" fn create_path_list_from_paths(
    ctx: *mut path_dictionary_context_t,
    paths: *const ovx_primpath_t,
    n: usize,
    out: *mut ovx_primpath_list_t,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "create_path_list_from_paths", |c| {
            strings::non_null(out, "out_path_list")?;
            let raw = strings::slice(paths, n, "paths")?;
            let l = list_of_ids(c.stage.paths(), raw)?;
            out.write(l.get());
            Ok(())
        })
    }
}

unsafe extern "C" fn create_path_list_from_strings(
    ctx: *mut path_dictionary_context_t,
    path_strings: *const ovx_string_t,
    n: usize,
    out: *mut ovx_primpath_list_t,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "create_path_list_from_strings", |c| {
            strings::non_null(out, "out_path_list")?;
            let texts = strings::texts(path_strings, n, "path_strings")?;
            let l = c.stage.paths().create_path_list_from_strings(&texts)?;
            out.write(l.get());
            Ok(())
        })
    }
}

unsafe extern "C" fn add_path_list_reference(
    ctx: *mut path_dictionary_context_t,
    raw: ovx_primpath_list_t,
) -> ovx_api_result_t {
    // SAFETY: the contract's precondition on `ctx`.
    unsafe {
        run(ctx, "add_path_list_reference", |c| {
            if raw == 0 {
                return Ok(());
            }
            c.stage.paths().add_path_list_reference(list(raw)?)
        })
    }
}

unsafe extern "C" fn release_path_list_reference(
    ctx: *mut path_dictionary_context_t,
    raw: ovx_primpath_list_t,
) -> ovx_api_result_t {
    // SAFETY: the contract's precondition on `ctx`.
    unsafe {
        run(ctx, "release_path_list_reference", |c| {
            if raw == 0 {
                return Ok(());
            }
            c.stage.paths().release_path_list_reference(list(raw)?)
        })
    }
}

unsafe extern "C" fn get_strings_from_tokens(
    ctx: *mut path_dictionary_context_t,
    tokens: *const ovx_token_t,
    n: usize,
    out: *mut ovx_string_t,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "get_strings_from_tokens", |c| {
            let raw = strings::slice(tokens, n, "tokens")?;
            let mut views = Vec::with_capacity(n);
            for t in raw {
                // As the reference: the invalid token 0 and tokens this
                // dictionary never made read as the empty string.
                let known = Token::from_raw(*t).and_then(|token| token_view(c, token).ok());
                views.push(known.unwrap_or(ovx_string_t { ptr: c"".as_ptr(), length: 0 }));
            }
            put_all(out, &views, "out_strings")
        })
    }
}

/// A NUL-terminated view of a token's text, owned by the instance for its
/// lifetime (the text is made once per token).
fn token_view(c: &Context, token: Token) -> Result<ovx_string_t> {
    if let Some(s) = crate::sync::read(&c.results.token_texts).get(&token.get()) {
        return Ok(strings::view(s));
    }
    let text = c.stage.paths().token_text(token)?;
    let mut texts = crate::sync::write(&c.results.token_texts);
    let s: &CString = texts.entry(token.get()).or_insert_with(|| strings::c_string(&text));
    Ok(strings::view(s))
}

#[allow(clippy::too_many_arguments)] // the contract's signature
unsafe extern "C" fn get_tokens_from_paths(
    ctx: *mut path_dictionary_context_t,
    prim_paths: *const ovx_primpath_t,
    n: usize,
    token_buffer: *mut ovx_token_t,
    token_buffer_size: usize,
    out_tokens_per_path: *mut *mut ovx_token_t,
    out_num_tokens_per_path: *mut usize,
    out_num_paths_processed: *mut usize,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "get_tokens_from_paths", |c| {
            strings::non_null(out_num_paths_processed, "out_num_paths_processed")?;
            out_num_paths_processed.write(0);
            let raw = strings::slice(prim_paths, n, "prim_paths")?;
            if n > 0 {
                strings::non_null(out_tokens_per_path, "out_tokens_per_path")?;
                strings::non_null(out_num_tokens_per_path, "out_num_tokens_per_path")?;
            }
            if token_buffer_size > 0 {
                strings::non_null(token_buffer, "token_buffer")?;
            }
            let mut used = 0usize;
            for (i, p) in raw.iter().enumerate() {
                let tokens = c.stage.paths().path_tokens(path_at(*p, "prim_paths", i)?)?;
                if tokens.len() > token_buffer_size - used {
                    break;
                }
                let at = token_buffer.wrapping_add(used);
                for (j, t) in tokens.iter().enumerate() {
                    at.add(j).write(t.get());
                }
                out_tokens_per_path.add(i).write(at);
                out_num_tokens_per_path.add(i).write(tokens.len());
                used += tokens.len();
                out_num_paths_processed.write(i + 1);
            }
            Ok(())
        })
    }
}

unsafe extern "C" fn get_num_paths_from_path_list(
    ctx: *mut path_dictionary_context_t,
    raw: ovx_primpath_list_t,
    out: *mut usize,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "get_num_paths_from_path_list", |c| {
            strings::non_null(out, "out_num_paths")?;
            out.write(c.stage.paths().path_list_len(list(raw)?)?);
            Ok(())
        })
    }
}

unsafe extern "C" fn get_paths_from_path_list(
    ctx: *mut path_dictionary_context_t,
    raw: ovx_primpath_list_t,
    start: usize,
    max: usize,
    out_paths: *mut ovx_primpath_t,
    out_num: *mut usize,
) -> ovx_api_result_t {
    // SAFETY: the contract's preconditions on the pointers.
    unsafe {
        run(ctx, "get_paths_from_path_list", |c| {
            strings::non_null(out_num, "out_num_paths")?;
            out_num.write(0);
            let paths = c.stage.paths().path_list_paths(list(raw)?)?;
            if start > paths.len() {
                return Err(Error::invalid_argument(format!(
                    "start_offset {start} is past the end of the list ({} paths)",
                    paths.len()
                )));
            }
            let end = start + max.min(paths.len() - start);
            let ids = &paths[start..end];
            if !ids.is_empty() {
                strings::non_null(out_paths, "out_paths")?;
                for (i, p) in ids.iter().enumerate() {
                    // SAFETY: non-NULL, and writable for `max >= ids.len()`
                    // entries per the contract.
                    out_paths.add(i).write(p.get());
                }
            }
            out_num.write(ids.len());
            Ok(())
        })
    }
}

unsafe extern "C" fn release_error(ctx: *mut path_dictionary_context_t, e: ovx_string_t) {
    guard("release_error", || {
        if e.ptr.is_null() {
            return;
        }
        // SAFETY: the contract's precondition on `ctx`.
        let Ok(c) = (unsafe { instance::dictionary_context(ctx, "release_error") }) else { return };
        if !c.results.release_error(e.ptr) {
            log::emit(
                log::Severity::Warning,
                "ovstage.paths",
                "release_error: the string is not an unreleased error of this dictionary; ignored",
            );
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both builds of the id check (the one this CPU runs and the portable
    /// one) give the same lists and the same errors.
    #[test]
    fn every_build_of_the_id_check_agrees() {
        let d = PathDictionary::new();
        let p: Vec<u64> = d.intern_paths(&["/A", "/A/B", "/C"]).unwrap().iter().map(|p| p.get()).collect();
        let long: Vec<u64> = (0..1000).map(|i| p[i % 3]).collect();
        let mut with_zero = long.clone();
        with_zero[777] = 0;
        let mut unknown = long.clone();
        unknown[999] = 5;
        let cases: [(&[u64], Option<&str>); 8] = [
            (&[], None),
            (&p, None),
            (&long, None),
            (&with_zero, Some("paths[777] is the invalid path 0")),
            (&unknown, Some("prim path 0x5 is not from this dictionary")),
            (&[u64::MAX, 1], Some("prim path 0xffffffffffffffff is not from this dictionary")),
            (&[1 << 63, 0], Some("paths[1] is the invalid path 0")),
            (&[(1 << 63) + 1], Some("prim path 0x8000000000000001 is not from this dictionary")),
        ];
        type Build = fn(&PathDictionary, &[u64]) -> Result<PathList>;
        let builds: [Build; 2] = [list_of_ids, |d, raw| list_of_ids_portable(d, raw)];
        for build in builds {
            for (ids, expected) in &cases {
                match (build(&d, ids), expected) {
                    (Ok(l), None) => {
                        let got: Vec<u64> = d.path_list_paths(l).unwrap().iter().map(|p| p.get()).collect();
                        assert_eq!(&got[..], *ids);
                        d.release_path_list_reference(l).unwrap();
                    }
                    (Err(e), Some(m)) => assert_eq!(e.message(), *m),
                    (r, _) => panic!("{ids:?}: {r:?} instead of {expected:?}"),
                }
            }
        }
        assert_eq!(d.live_path_lists(), 0);
    }
}
