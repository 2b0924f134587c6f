//! `ovx/path_dictionary/path_dictionary_vtable.h`: the path dictionary's
//! twelve functions.
//!
//! Tokens and prim paths are interned for the dictionary's lifetime and
//! need no release; path lists are reference counted (each create and each
//! add is matched by one release). Every function may be called from any
//! thread. Failures come back as `OVX_API_ERROR` with a message to hand to
//! `release_error`.

use super::ovx_string::{ovx_string_t, ovx_token_t};
use super::ovx_types::{ovx_api_result_t, ovx_primpath_list_t, ovx_primpath_t};
use super::path_dictionary::path_dictionary_context_t;

/// The path dictionary's function table.
#[repr(C)]
pub struct path_dictionary_vtable_t {
    /// Interns `num_strings` strings as tokens into `out_tokens`. Equal
    /// strings give equal tokens; empty strings and strings holding a NUL
    /// byte are errors.
    pub create_tokens_from_strings: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            strings: *const ovx_string_t,
            num_strings: usize,
            out_tokens: *mut ovx_token_t,
        ) -> ovx_api_result_t,
    >,
    /// Interns `num_paths` absolute paths, path `i` made of the next
    /// `num_tokens_per_path[i]` component tokens of `tokens_per_path` (zero
    /// tokens is the root `/`). `tokens_per_path` must not be NULL.
    pub create_paths_from_tokens: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            tokens_per_path: *const ovx_token_t,
            num_tokens_per_path: *const usize,
            num_paths: usize,
            out_prim_paths: *mut ovx_primpath_t,
        ) -> ovx_api_result_t,
    >,
    /// Interns `num_paths` path strings. Equivalent paths give equal
    /// handles; empty strings and strings holding a NUL byte are errors.
    pub create_paths_from_strings: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            path_strings: *const ovx_string_t,
            num_paths: usize,
            out_prim_paths: *mut ovx_primpath_t,
        ) -> ovx_api_result_t,
    >,
    /// Makes a new list of `num_paths` paths (`paths` may be NULL when 0)
    /// holding one reference for the caller. Every call makes a new list.
    pub create_path_list_from_paths: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            paths: *const ovx_primpath_t,
            num_paths: usize,
            out_path_list: *mut ovx_primpath_list_t,
        ) -> ovx_api_result_t,
    >,
    /// Interns `num_paths` path strings and makes a new list of them, with
    /// one reference for the caller.
    pub create_path_list_from_strings: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            path_strings: *const ovx_string_t,
            num_paths: usize,
            out_path_list: *mut ovx_primpath_list_t,
        ) -> ovx_api_result_t,
    >,
    /// Adds a reference to a live list (0 is a no-op success).
    pub add_path_list_reference: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            path_list: ovx_primpath_list_t,
        ) -> ovx_api_result_t,
    >,
    /// Drops a reference; the list is gone at zero (0 is a no-op success).
    pub release_path_list_reference: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            path_list: ovx_primpath_list_t,
        ) -> ovx_api_result_t,
    >,
    /// Resolves tokens to NUL-terminated strings owned by the dictionary
    /// (valid for its lifetime; do not free).
    pub get_strings_from_tokens: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            tokens: *const ovx_token_t,
            num_tokens: usize,
            out_strings: *mut ovx_string_t,
        ) -> ovx_api_result_t,
    >,
    /// Splits paths into component tokens written to `token_buffer`:
    /// `out_tokens_per_path[i]` points at path `i`'s tokens in the buffer and
    /// `out_num_tokens_per_path[i]` counts them. Stops at the first path that
    /// does not fit and reports how many were done in
    /// `out_num_paths_processed`.
    pub get_tokens_from_paths: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            prim_paths: *const ovx_primpath_t,
            num_paths: usize,
            token_buffer: *mut ovx_token_t,
            token_buffer_size: usize,
            out_tokens_per_path: *mut *mut ovx_token_t,
            out_num_tokens_per_path: *mut usize,
            out_num_paths_processed: *mut usize,
        ) -> ovx_api_result_t,
    >,
    /// Number of paths in a live list.
    pub get_num_paths_from_path_list: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            path_list: ovx_primpath_list_t,
            out_num_paths: *mut usize,
        ) -> ovx_api_result_t,
    >,
    /// Copies up to `max_paths` paths of a live list from `start_offset` on
    /// and reports how many were copied.
    pub get_paths_from_path_list: Option<
        unsafe extern "C" fn(
            instance: *mut path_dictionary_context_t,
            path_list: ovx_primpath_list_t,
            start_offset: usize,
            max_paths: usize,
            out_paths: *mut ovx_primpath_t,
            out_num_paths: *mut usize,
        ) -> ovx_api_result_t,
    >,
    /// Frees the message of an `ovx_api_result_t` this dictionary returned.
    pub release_error: Option<unsafe extern "C" fn(context: *mut path_dictionary_context_t, error: ovx_string_t)>,
}
