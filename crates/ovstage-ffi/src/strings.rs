//! Reading C arguments: string views, arrays, attribute names, enum
//! carriers. Every reader checks for NULL before it dereferences.

use std::ffi::{CStr, CString, c_char};
use std::fmt::{self, Display};

use ovstage_types::{Error, Result, Token};
use stage::AttrRef;

use crate::abi::ovx_string::{ovx_string_or_token_t, ovx_string_t};

/// An argument named in messages as `call: name`, formatted only when a
/// message is built (the success path formats nothing).
#[derive(Copy, Clone, Debug)]
pub(crate) struct Arg<'a>(pub(crate) &'a str, pub(crate) &'a str);

impl Display for Arg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

/// Element `1` of the array argument `0`, named in messages as `what[i]`.
#[derive(Copy, Clone)]
pub(crate) struct Indexed<W>(pub(crate) W, pub(crate) usize);

impl<W: Display> Display for Indexed<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

/// A NUL-terminated copy of `text` (interior NUL bytes become U+FFFD).
pub(crate) fn c_string(text: &str) -> CString {
    CString::new(text)
        .unwrap_or_else(|_| CString::new(text.replace('\0', "\u{FFFD}")).expect("interior NUL bytes were replaced"))
}

/// A view of a library-owned C string (NUL-terminated, as outputs must be).
pub(crate) fn view(s: &CString) -> ovx_string_t {
    ovx_string_t { ptr: s.as_ptr(), length: s.as_bytes().len() }
}

/// The text of a string view: `{NULL, 0}` is empty; NULL with a length,
/// and bytes that are not UTF-8, are INVALID_ARGUMENT naming `what`.
///
/// # Safety
/// A non-NULL `s.ptr` points to `s.length` readable bytes that outlive `'a`.
pub(crate) unsafe fn text<'a>(s: ovx_string_t, what: impl Display) -> Result<&'a str> {
    if s.ptr.is_null() {
        return if s.length == 0 {
            Ok("")
        } else {
            Err(Error::invalid_argument(format!("{what}: NULL string with length {}", s.length)))
        };
    }
    if s.length > isize::MAX as usize {
        return Err(Error::invalid_argument(format!("{what}: length {} is larger than any string can be", s.length)));
    }
    // SAFETY: the caller guarantees `length` readable bytes at `ptr` (and,
    // checked, no more than an allocation can have).
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.length) };
    std::str::from_utf8(bytes).map_err(|e| Error::invalid_argument(format!("{what}: not UTF-8 ({e})")))
}

/// A NUL-terminated C string argument (NULL is INVALID_ARGUMENT).
///
/// # Safety
/// A non-NULL `s` points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn c_text<'a>(s: *const c_char, what: impl Display) -> Result<&'a str> {
    if s.is_null() {
        return Err(Error::invalid_argument(format!("{what} is NULL")));
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    let c = unsafe { CStr::from_ptr(s) };
    c.to_str().map_err(|e| Error::invalid_argument(format!("{what}: not UTF-8 ({e})")))
}

/// An array argument of `len` elements: NULL is fine only when `len` is 0.
///
/// # Safety
/// A non-NULL `ptr` points to `len` initialized elements that outlive `'a`.
pub(crate) unsafe fn slice<'a, T>(ptr: *const T, len: usize, what: impl Display) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Error::invalid_argument(format!("{what} is NULL but its count is {len}")));
    }
    if len > isize::MAX as usize / size_of::<T>().max(1) {
        return Err(Error::invalid_argument(format!("{what}: count {len} is larger than any array can be")));
    }
    // SAFETY: non-NULL with `len` elements, per the caller (and, checked,
    // no more bytes than an allocation can have).
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// The text views of an array of string views.
///
/// # Safety
/// As for [`slice`] and [`text`].
pub(crate) unsafe fn texts<'a>(ptr: *const ovx_string_t, len: usize, what: impl Display) -> Result<Vec<&'a str>> {
    // SAFETY: forwarded.
    let views = unsafe { slice(ptr, len, &what) }?;
    views
        .iter()
        .enumerate()
        // SAFETY: forwarded.
        .map(|(i, s)| unsafe { text(*s, Indexed(&what, i)) })
        .collect()
}

/// An attribute given by token (when non-zero) or by name; neither is
/// INVALID_ARGUMENT.
///
/// # Safety
/// As for [`text`].
pub(crate) unsafe fn attribute<'a>(a: ovx_string_or_token_t, what: impl Display) -> Result<AttrRef<'a>> {
    if let Some(token) = Token::from_raw(a.token) {
        return Ok(AttrRef::Token(token));
    }
    // SAFETY: forwarded.
    let name = unsafe { text(a.string, &what) }?;
    if name.is_empty() {
        return Err(Error::invalid_argument(format!("{what}: neither a token nor a name was given")));
    }
    Ok(AttrRef::Name(name))
}

/// Attributes named by token, as a call passes them: a few in place (a
/// read or query names one or two; a heap list cost an allocation and its
/// free on every call).
pub(crate) type Tokens<'a> = smallvec::SmallVec<[AttrRef<'a>; 4]>;

/// Attributes given as an array of tokens (0 is INVALID_ARGUMENT).
///
/// # Safety
/// As for [`slice`].
pub(crate) unsafe fn tokens<'a>(ptr: *const u64, len: usize, what: impl Display) -> Result<Tokens<'a>> {
    // SAFETY: forwarded.
    let raw = unsafe { slice(ptr, len, &what) }?;
    // Sized once (collecting through `Result` would regrow it).
    let mut out = Tokens::with_capacity(raw.len());
    for (i, t) in raw.iter().enumerate() {
        let token = Token::from_raw(*t)
            .ok_or_else(|| Error::invalid_argument(format!("{what}[{i}] is the invalid token 0")))?;
        out.push(AttrRef::Token(token));
    }
    Ok(out)
}

/// Writes `value` through an out pointer that was checked non-NULL.
///
/// # Safety
/// `out` is NULL or valid for writes.
pub(crate) unsafe fn put<T>(out: *mut T, value: T, what: impl Display) -> Result<()> {
    if out.is_null() {
        return Err(Error::invalid_argument(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and writable, per the caller.
    unsafe { out.write(value) };
    Ok(())
}

/// Fails with INVALID_ARGUMENT when `ptr` is NULL.
pub(crate) fn non_null<T>(ptr: *const T, what: impl Display) -> Result<()> {
    if ptr.is_null() { Err(Error::invalid_argument(format!("{what} is NULL"))) } else { Ok(()) }
}
