//! The path dictionary: interned tokens and prim paths, and reference-counted
//! path lists. Thread-safe; tokens and paths live as long as the dictionary.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use ovstage_types::{Error, PathList, PrimPath, Result, Status, Token};
use smallvec::SmallVec;

use crate::handles::HandleTable;
use crate::list_spares::{SpareHint, Spares};
use ovstage_types::sync::{read, write};

/// A path as a caller hands it to a new list: a [`PrimPath`], or a raw id
/// as C passes it (which may be 0).
trait PathId: Copy {
    /// The id.
    fn raw(self) -> u64;
    /// The path, once the ids were checked (see `all_known`): 0 never gets
    /// into a list (it becomes `/` here, only to keep a refused list's
    /// scratch copy valid).
    fn path(self) -> PrimPath;

    /// Checked `paths` in a new shared buffer.
    fn shared(paths: &[Self]) -> Arc<[PrimPath]>;
}

impl PathId for PrimPath {
    #[inline(always)]
    fn raw(self) -> u64 {
        self.get()
    }

    #[inline(always)]
    fn path(self) -> PrimPath {
        self
    }

    /// One memcpy (collecting converted them one by one, unvectorized).
    fn shared(paths: &[Self]) -> Arc<[PrimPath]> {
        paths.into()
    }
}

impl PathId for u64 {
    #[inline(always)]
    fn raw(self) -> u64 {
        self
    }

    #[inline(always)]
    fn path(self) -> PrimPath {
        // A compare and a blend per vector: a branch would not vectorize.
        PrimPath::from_raw(self).unwrap_or(ROOT)
    }

    fn shared(paths: &[Self]) -> Arc<[PrimPath]> {
        paths.iter().map(|p| p.path()).collect()
    }
}

/// Whether an id is a path the dictionary knows, as a top bit, for
/// `known` below 2^63: branch-free, so that a loop over a list vectorizes
/// with the instructions every x86-64 has (no unsigned 64-bit compare
/// among them).
///
/// A path `p` is known when `1 <= p <= known`: then `known - p` and
/// `p - 1` are both below 2^63. For `p = 0`, or `p > known + 2^63`,
/// `p - 1` is at least 2^63; for any other `p > known`, `known - p` wraps
/// to at least 2^63. So the top bit of `(known - p) | (p - 1)`, ORed over
/// a list, is clear exactly when all its ids are known (and none is 0).
#[inline(always)]
fn unknown_bit(p: u64, known: u64) -> u64 {
    known.wrapping_sub(p) | p.wrapping_sub(1)
}

/// Whether every path is known (see `unknown_bit`), in one pass without
/// branches or an early exit.
#[inline(always)]
fn all_known<P: PathId>(paths: &[P], known: u64) -> bool {
    debug_assert!((1..1 << 63).contains(&known));
    let acc = paths.iter().fold(0u64, |acc, p| acc | unknown_bit(p.raw(), known));
    acc >> 63 == 0
}

/// Copies `paths` into `to` (of their length) and checks them (as
/// `all_known` does) in the same loop; false when one is unknown (`to`
/// then holds a copy that must not be used).
#[inline(always)]
fn copy_known<P: PathId>(to: &mut [PrimPath], paths: &[P], known: u64) -> bool {
    let mut acc = 0u64;
    for (to, p) in to.iter_mut().zip(paths) {
        acc |= unknown_bit(p.raw(), known);
        *to = p.path();
    }
    acc >> 63 == 0
}

/// The root path `/`, the first path of every dictionary.
const ROOT: PrimPath = PrimPath::from_raw(1).expect("non-zero");

/// One interned prim path.
#[derive(Debug)]
struct PathEntry {
    text: Arc<str>,
    parent: Option<PrimPath>,
    /// The last component (`None` for the root `/`).
    name: Option<Token>,
}

/// The 64-bit folded multiply: the product's halves XORed.
fn fold(a: u64, b: u64) -> u64 {
    let m = u128::from(a) * u128::from(b);
    (m as u64) ^ ((m >> 64) as u64)
}

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

/// Hashes token and path text 8 bytes at a time by folded multiplies, from
/// a random seed per dictionary (the text comes from clients: a seed
/// nobody knows keeps crafted collisions out). SipHash, the std default,
/// cost more than the rest of a lookup.
#[derive(Clone, Copy)]
struct TextHasher {
    state: u64,
    seed: u64,
}

impl Hasher for TextHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.state;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let word = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            h = fold(h ^ word, self.seed);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut tail = [0u8; 8];
            tail[..rest.len()].copy_from_slice(rest);
            h = fold(h ^ u64::from_le_bytes(tail), self.seed ^ MIX);
        }
        self.state = h.rotate_left(23) ^ bytes.len() as u64;
    }

    fn write_u8(&mut self, i: u8) {
        // `str` hashes end with a 0xff byte.
        self.state = fold(self.state ^ u64::from(i), self.seed);
    }

    fn finish(&self) -> u64 {
        fold(self.state, self.seed ^ MIX)
    }
}

/// Builds [`TextHasher`]s with one dictionary's seed.
#[derive(Clone, Copy)]
struct TextBuild {
    seed: u64,
}

impl TextBuild {
    fn new() -> TextBuild {
        // `RandomState` holds the process's random keys; hashing a counter
        // with it gives every dictionary a seed of its own. Odd, so the
        // multiply never loses the low bits.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        TextBuild { seed: RandomState::new().hash_one(n) | 1 }
    }
}

impl BuildHasher for TextBuild {
    type Hasher = TextHasher;

    fn build_hasher(&self) -> TextHasher {
        TextHasher { state: self.seed.rotate_left(32), seed: self.seed }
    }
}

struct Interner {
    tokens: Vec<Arc<str>>,
    token_ids: HashMap<Arc<str>, Token, TextBuild>,
    paths: Vec<PathEntry>,
    path_ids: HashMap<Arc<str>, PrimPath, TextBuild>,
}

struct ListEntry {
    paths: ListPaths,
    refs: u32,
}

/// Lists of up to this many paths start inside their table entry.
const INLINE_PATHS: usize = 8;

/// A list's paths: a short list lives in its entry until something asks for
/// them as a shared slice (a query made from it), so a list created and
/// released without that allocates nothing; a longer one is shared from
/// the start.
enum ListPaths {
    Inline(SmallVec<[PrimPath; INLINE_PATHS]>),
    Shared(Arc<[PrimPath]>),
}

impl ListPaths {
    fn len(&self) -> usize {
        match self {
            ListPaths::Inline(paths) => paths.len(),
            ListPaths::Shared(paths) => paths.len(),
        }
    }

    /// The paths as a shared slice, made (once) from inline ones.
    fn shared(&mut self) -> Arc<[PrimPath]> {
        match self {
            ListPaths::Shared(paths) => paths.clone(),
            ListPaths::Inline(paths) => {
                let shared: Arc<[PrimPath]> = paths.as_slice().into();
                *self = ListPaths::Shared(shared.clone());
                shared
            }
        }
    }
}

/// Interned tokens and prim paths, and path lists.
///
/// Token and path handles are dense (`index + 1`), so stores can index
/// arrays by them. Path list handles are versioned and salted per
/// dictionary: a released list's handle, or another dictionary's, is
/// rejected, never confused with a live list.
pub struct PathDictionary {
    interner: RwLock<Interner>,
    /// `interner.paths.len()`, raised (under the write lock) after each
    /// path is pushed: paths are never removed, so a path id at most this
    /// is known without taking the lock.
    path_count: AtomicUsize,
    /// `interner.tokens.len()`, raised the same way: a token at most this
    /// is known without taking the lock.
    token_count: AtomicUsize,
    /// The lists, and the buffers of released lists that nothing else
    /// held (of at least `SPARE_MIN_PATHS` paths), reused by the next list
    /// of their length (see `list_spares`): a loop that creates and
    /// destroys lists allocates nothing. Kept under the table's lock, so
    /// taking one and inserting the list (or removing a list and keeping
    /// its buffer) is one lock, not two.
    lists: HandleTable<ListEntry, Spares>,
    /// Which lengths `lists` keeps a buffer of, readable without the lock:
    /// a list of a length not kept, and a release while one of its length
    /// is, cost one load.
    spare_hint: SpareHint,
}

/// The largest released list buffer kept for reuse.
const SPARE_BYTES: usize = 1 << 20;

/// The longest list filled into the kept buffer under the table's lock
/// (32 KiB, well under a microsecond to copy); a longer one is filled
/// after the lock is released (one more lock to insert it).
const LOCKED_FILL_PATHS: usize = 4096;

/// The smallest list kept for reuse (in paths): every list that does not
/// live in its entry. Keeping the buffer costs nothing more than the
/// table's lock, which the release takes anyway; reusing it saves an
/// allocation and a free (churn of 64-path lists through the C ABI: 77 ->
/// 50 ns).
const SPARE_MIN_PATHS: usize = INLINE_PATHS + 1;

impl Default for PathDictionary {
    fn default() -> Self {
        PathDictionary::new()
    }
}

fn is_name_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_name_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Splits an absolute prim path into its components, or explains why it is
/// not one. A leading `/` may be omitted (`World/A` is `/World/A`).
fn components(path: &str) -> std::result::Result<Vec<&str>, String> {
    if path.is_empty() {
        return Err("a prim path must not be empty".into());
    }
    if path.contains('\0') {
        return Err(format!("prim path {path:?} contains a NUL byte"));
    }
    let body = path.strip_prefix('/').unwrap_or(path);
    if body.is_empty() {
        return Ok(Vec::new());
    }
    body.split('/')
        .map(|c| {
            let mut chars = c.chars();
            match chars.next() {
                Some(first) if is_name_start(first) && chars.all(is_name_char) => Ok(c),
                _ => Err(format!(
                    "prim path {path:?} is not valid: component {c:?} must be a name (a letter or '_' then letters, digits or '_')"
                )),
            }
        })
        .collect()
}

impl PathDictionary {
    /// An empty dictionary holding only the root path `/`.
    pub fn new() -> PathDictionary {
        let build = TextBuild::new();
        let mut interner = Interner {
            tokens: Vec::new(),
            token_ids: HashMap::with_hasher(build),
            paths: Vec::new(),
            path_ids: HashMap::with_hasher(build),
        };
        let root: Arc<str> = Arc::from("/");
        interner.paths.push(PathEntry { text: root.clone(), parent: None, name: None });
        interner.path_ids.insert(root, ROOT);
        PathDictionary {
            interner: RwLock::new(interner),
            path_count: AtomicUsize::new(1),
            token_count: AtomicUsize::new(0),
            lists: HandleTable::new(),
            spare_hint: SpareHint::new(),
        }
    }

    /// How many paths this dictionary has minted (ids `1..=count`).
    fn known_paths(&self) -> u64 {
        self.path_count.load(Ordering::Acquire) as u64
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Interner> {
        read(&self.interner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Interner> {
        write(&self.interner)
    }

    /// Interns `text` as a token. Empty strings and strings with NUL bytes
    /// are rejected.
    pub fn intern_token(&self, text: &str) -> Result<Token> {
        if text.is_empty() {
            return Err(Error::invalid_argument("a token must not be empty"));
        }
        if text.contains('\0') {
            return Err(Error::invalid_argument(format!("token {text:?} contains a NUL byte")));
        }
        if let Some(t) = self.read().token_ids.get(text) {
            return Ok(*t);
        }
        Ok(self.intern_token_locked(&mut self.write(), text))
    }

    fn intern_token_locked(&self, interner: &mut Interner, text: &str) -> Token {
        if let Some(t) = interner.token_ids.get(text) {
            return *t;
        }
        let text: Arc<str> = Arc::from(text);
        let id = Token::from_raw(interner.tokens.len() as u64 + 1).expect("non-zero");
        interner.tokens.push(text.clone());
        interner.token_ids.insert(text, id);
        self.token_count.store(interner.tokens.len(), Ordering::Release);
        id
    }

    /// Whether `token` was minted by this dictionary; no lock taken.
    pub fn is_token(&self, token: Token) -> bool {
        token.get() <= self.token_count.load(Ordering::Acquire) as u64
    }

    /// Interns several tokens; all or nothing.
    pub fn intern_tokens<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Token>> {
        texts.iter().map(|t| self.intern_token(t.as_ref())).collect()
    }

    /// The token of `text` if it is interned.
    pub fn lookup_token(&self, text: &str) -> Option<Token> {
        self.read().token_ids.get(text).copied()
    }

    /// The text of a token.
    pub fn token_text(&self, token: Token) -> Result<Arc<str>> {
        self.read()
            .tokens
            .get((token.get() - 1) as usize)
            .cloned()
            .ok_or_else(|| Error::invalid_handle(format!("{token} is not from this dictionary")))
    }

    /// Interns an absolute prim path such as `/World/Env0/Robot` (its
    /// ancestors are interned too).
    pub fn intern_path(&self, text: &str) -> Result<PrimPath> {
        if let Some(p) = self.read().path_ids.get(text) {
            return Ok(*p);
        }
        self.intern_new_path(text)
    }

    /// Interns a path the lookup under the read lock did not find.
    fn intern_new_path(&self, text: &str) -> Result<PrimPath> {
        let parts = components(text).map_err(Error::invalid_argument)?;
        let mut interner = self.write();
        let mut current = ROOT;
        let mut prefix = String::with_capacity(text.len() + 1);
        for part in parts {
            prefix.push('/');
            prefix.push_str(part);
            current = match interner.path_ids.get(prefix.as_str()) {
                Some(p) => *p,
                None => {
                    let name = self.intern_token_locked(&mut interner, part);
                    let text: Arc<str> = Arc::from(prefix.as_str());
                    let id = PrimPath::from_raw(interner.paths.len() as u64 + 1).expect("non-zero");
                    interner.paths.push(PathEntry { text: text.clone(), parent: Some(current), name: Some(name) });
                    interner.path_ids.insert(text, id);
                    self.path_count.store(interner.paths.len(), Ordering::Release);
                    id
                }
            };
        }
        Ok(current)
    }

    /// Interns several paths; the first that is not a path fails the call
    /// (those before it stay interned). Known paths are looked up under one
    /// read lock.
    pub fn intern_paths<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<PrimPath>> {
        let mut out = Vec::with_capacity(texts.len());
        {
            let interner = self.read();
            for t in texts {
                match interner.path_ids.get(t.as_ref()) {
                    Some(p) => out.push(*p),
                    None => break,
                }
            }
        }
        for t in &texts[out.len()..] {
            out.push(self.intern_path(t.as_ref())?);
        }
        Ok(out)
    }

    /// Interns the path whose components are `tokens` (none: `/`).
    pub fn path_from_tokens(&self, tokens: &[Token]) -> Result<PrimPath> {
        let mut text = String::new();
        for t in tokens {
            text.push('/');
            text.push_str(&self.token_text(*t)?);
        }
        if text.is_empty() {
            text.push('/');
        }
        self.intern_path(&text)
    }

    fn entry<T>(&self, path: PrimPath, f: impl FnOnce(&PathEntry) -> T) -> Result<T> {
        self.read().paths.get((path.get() - 1) as usize).map(f).ok_or_else(|| Self::unknown_path(path))
    }

    /// The text of a path.
    pub fn path_text(&self, path: PrimPath) -> Result<Arc<str>> {
        self.entry(path, |e| e.text.clone())
    }

    /// The text of a path, or a placeholder naming the handle when it is not
    /// from this dictionary (for error messages).
    pub(crate) fn describe_path(&self, path: PrimPath) -> String {
        self.path_text(path).map_or_else(|_| path.to_string(), |t| t.to_string())
    }

    /// The parent of a path (`None` for `/`).
    pub fn parent(&self, path: PrimPath) -> Result<Option<PrimPath>> {
        self.entry(path, |e| e.parent)
    }

    /// The components of a path, root first.
    pub fn path_tokens(&self, path: PrimPath) -> Result<Vec<Token>> {
        let interner = self.read();
        let mut out = Vec::new();
        let mut at = Some(path);
        while let Some(p) = at {
            let e = interner
                .paths
                .get((p.get() - 1) as usize)
                .ok_or_else(|| Error::invalid_handle(format!("{path} is not from this dictionary")))?;
            out.extend(e.name);
            at = e.parent;
        }
        out.reverse();
        Ok(out)
    }

    /// Whether `path` was minted by this dictionary.
    pub fn contains_path(&self, path: PrimPath) -> bool {
        path.get() <= self.known_paths()
    }

    fn unknown_path(path: impl std::fmt::Display) -> Error {
        Error::invalid_handle(format!("{path} is not from this dictionary"))
    }

    /// A new path list (reference count 1) of `paths`: checked in one
    /// pass (see `all_known`) and copied once, the check and the copy in
    /// one loop when the list goes into the kept buffer; the message is
    /// built only on failure. Always inlined, so that a caller compiled
    /// for wider vectors (the C binding, where the CPU has AVX2) checks
    /// and copies with them.
    #[inline(always)]
    pub fn create_path_list(&self, paths: &[PrimPath]) -> Result<PathList> {
        self.create_list_of(paths)
    }

    /// [`PathDictionary::create_path_list`] of raw path ids as C passes
    /// them: `paths[i]` = 0 is an error naming `i`. Checked in the loop
    /// that copies them, not in a pass before.
    #[inline(always)]
    pub fn create_path_list_from_ids(&self, paths: &[u64]) -> Result<PathList> {
        self.create_list_of(paths)
    }

    /// Whether a new list of `len` paths would get a new shared buffer
    /// (it is too long to live in its entry, and no released list left a
    /// buffer of its length): a hint, as of now, for a caller choosing how
    /// to pass its paths, since converting raw ids into a new buffer costs
    /// more than copying paths (either call gives the same list and the
    /// same errors whatever the answer).
    #[inline(always)]
    pub fn needs_new_buffer(&self, len: usize) -> bool {
        len > INLINE_PATHS && !self.keeps_buffer_for(len)
    }

    #[inline(always)]
    fn keeps_buffer_for(&self, len: usize) -> bool {
        len >= SPARE_MIN_PATHS && self.spare_hint.has(len)
    }

    #[inline(always)]
    fn create_list_of<P: PathId>(&self, paths: &[P]) -> Result<PathList> {
        let known = self.known_paths();
        if self.keeps_buffer_for(paths.len()) {
            return self.insert_into_kept(paths, known);
        }
        self.insert_fresh(paths, known)
    }

    /// [`PathDictionary::create_path_list`] into a new entry: inline for
    /// a short list, else a new buffer.
    #[inline(always)]
    fn insert_fresh<P: PathId>(&self, paths: &[P], known: u64) -> Result<PathList> {
        if !all_known(paths, known) {
            return Err(Self::first_unknown(paths, known));
        }
        let paths = if paths.len() <= INLINE_PATHS {
            // Filled in place: collecting into the SmallVec pushed one by
            // one, checking its capacity each time (a third of the cost
            // of a short list).
            let mut inline = [ROOT; INLINE_PATHS];
            for (to, p) in inline.iter_mut().zip(paths) {
                *to = p.path();
            }
            ListPaths::Inline(SmallVec::from_buf_and_len(inline, paths.len()))
        } else {
            ListPaths::Shared(P::shared(paths))
        };
        Ok(self.insert_list(paths))
    }

    /// [`PathDictionary::create_path_list`] into the kept buffer, which
    /// has the list's length: filled and inserted under the table's one
    /// lock when the list is short enough (`LOCKED_FILL_PATHS`), taken out
    /// first otherwise. A refused list leaves the buffer kept.
    #[inline(always)]
    fn insert_into_kept<P: PathId>(&self, paths: &[P], known: u64) -> Result<PathList> {
        let len = paths.len();
        let mut t = self.lists.locked();
        let Some(mut buffer) = t.extra().take(len) else {
            drop(t);
            return self.insert_fresh(paths, known);
        };
        self.spare_hint.set(len, false);
        // Kept buffers are unique (see `worth_keeping`; nothing reaches a
        // kept one), so this is their one uniqueness check (an atomic
        // compare-exchange, not free).
        let Some(to) = Arc::get_mut(&mut buffer) else {
            drop(t);
            return self.insert_fresh(paths, known);
        };
        if len > LOCKED_FILL_PATHS {
            drop(t);
            if !copy_known(to, paths, known) {
                self.keep_spare(buffer);
                return Err(Self::first_unknown(paths, known));
            }
            return Ok(self.insert_list(ListPaths::Shared(buffer)));
        }
        if !copy_known(to, paths, known) {
            let refused = self.keep_locked(t.extra(), buffer);
            drop(t);
            drop(refused);
            return Err(Self::first_unknown(paths, known));
        }
        let raw = t.insert_with(|_| ListEntry { paths: ListPaths::Shared(buffer), refs: 1 });
        Ok(PathList::from_raw(raw).expect("handles are never 0"))
    }

    /// Whether a released list's buffer may be kept: nothing else holds
    /// it (no `Weak` of a list's buffer is ever made, so one strong
    /// reference is uniqueness), it is not too small or too large, and
    /// there is room to keep it (`SpareHint::room_for`).
    fn worth_keeping(&self, buffer: &Arc<[PrimPath]>) -> bool {
        let len = buffer.len();
        len >= SPARE_MIN_PATHS
            && self.spare_hint.room_for(len)
            && std::mem::size_of_val(&**buffer) <= SPARE_BYTES
            && Arc::strong_count(buffer) == 1
    }

    /// Keeps a released list's buffer for reuse when it is worth keeping
    /// (see `worth_keeping`) and none is kept in its place; otherwise it
    /// is freed.
    fn keep_spare(&self, buffer: Arc<[PrimPath]>) {
        if !self.worth_keeping(&buffer) {
            return;
        }
        let mut t = self.lists.locked();
        let refused = self.keep_locked(t.extra(), buffer);
        drop(t);
        drop(refused);
    }

    /// Keeps `buffer` in `spares` (the table's, locked) unless one is kept
    /// in its place, and records it in the hint; returns the buffer not
    /// kept, to be freed once the lock is released.
    fn keep_locked(&self, spares: &mut Spares, buffer: Arc<[PrimPath]>) -> Option<Arc<[PrimPath]>> {
        let len = buffer.len();
        let refused = spares.put(buffer);
        if refused.is_none() {
            self.spare_hint.set(len, true);
        }
        refused
    }

    /// The error of a list that `all_known` refused: its first 0 (C's
    /// invalid path) if it has one, else its first unknown path.
    #[cold]
    fn first_unknown<P: PathId>(paths: &[P], known: u64) -> Error {
        if let Some(i) = paths.iter().position(|p| p.raw() == 0) {
            return Error::invalid_argument(format!("paths[{i}] is the invalid path 0"));
        }
        let bad = paths.iter().find(|p| p.raw() > known).expect("an unknown path");
        Self::unknown_path(bad.path())
    }

    fn insert_list(&self, paths: ListPaths) -> PathList {
        let raw = self.lists.insert_with(|_| ListEntry { paths, refs: 1 });
        PathList::from_raw(raw).expect("handles are never 0")
    }

    /// A new path list (reference count 1) of `texts`, interned as paths.
    pub fn create_path_list_from_strings<S: AsRef<str>>(&self, texts: &[S]) -> Result<PathList> {
        let paths = self.intern_paths(texts)?;
        self.create_path_list(&paths)
    }

    fn unknown_list(list: PathList) -> Error {
        Error::invalid_handle(format!("{list} is unknown or was released"))
    }

    /// Adds a reference to a path list. A count that would overflow is an
    /// error, not a wrap (which would free the list under its holders).
    pub fn add_path_list_reference(&self, list: PathList) -> Result<()> {
        let added = self.lists.with_mut(list.get(), |entry| {
            entry.refs = entry.refs.checked_add(1).ok_or(())?;
            Ok(())
        });
        added.ok_or_else(|| Self::unknown_list(list))?.map_err(|()| {
            Error::new(Status::OutOfRange, format!("{list} already holds the most references a path list can count"))
        })
    }

    /// Drops a reference; the list is gone when the last one is released.
    pub fn release_path_list_reference(&self, list: PathList) -> Result<()> {
        let mut t = self.lists.locked();
        let entry = t.get_mut(list.get()).ok_or_else(|| Self::unknown_list(list))?;
        entry.refs -= 1;
        if entry.refs > 0 {
            return Ok(());
        }
        // The last reference's buffer is kept for reuse under the same
        // lock, or freed after it.
        match t.remove(list.get()) {
            Some(ListEntry { paths: ListPaths::Shared(paths), .. }) if self.worth_keeping(&paths) => {
                let refused = self.keep_locked(t.extra(), paths);
                drop(t);
                drop(refused);
            }
            removed => {
                drop(t);
                drop(removed);
            }
        }
        Ok(())
    }

    /// The paths of a list.
    pub fn path_list_paths(&self, list: PathList) -> Result<Arc<[PrimPath]>> {
        self.lists.with_mut(list.get(), |e| e.paths.shared()).ok_or_else(|| Self::unknown_list(list))
    }

    /// Number of paths in a list.
    pub fn path_list_len(&self, list: PathList) -> Result<usize> {
        self.lists.with_mut(list.get(), |e| e.paths.len()).ok_or_else(|| Self::unknown_list(list))
    }

    /// Number of live path lists (for leak checks).
    pub fn live_path_lists(&self) -> usize {
        self.lists.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A released list's buffer is reused only when nothing else holds
    /// it, by a list of its length, one per length, and only buffers of
    /// SPARE_MIN_PATHS to SPARE_BYTES are kept.
    #[test]
    fn released_list_buffers_are_reused_only_when_unshared() {
        let d = PathDictionary::new();
        let p = d.intern_paths(&["/A", "/B", "/C"]).unwrap();
        let n = SPARE_MIN_PATHS;
        let list = |d: &PathDictionary, first: PrimPath, rest: PrimPath| {
            let mut paths = vec![rest; n];
            paths[0] = first;
            d.create_path_list(&paths).unwrap()
        };
        let paths = |d: &PathDictionary, l: PathList| d.path_list_paths(l).unwrap()[..2].to_vec();
        let kept = |d: &PathDictionary| d.lists.locked().extra().lengths();
        let first = list(&d, p[0], p[1]);
        let held = d.path_list_paths(first).unwrap();
        d.release_path_list_reference(first).unwrap();
        assert_eq!(kept(&d), [0; 0], "a buffer someone holds is not kept");
        let second = list(&d, p[2], p[2]);
        assert_eq!(&held[..2], &[p[0], p[1]]);
        assert_eq!(paths(&d, second), [p[2], p[2]]);
        d.release_path_list_reference(second).unwrap();
        assert_eq!(kept(&d), [n], "unshared: kept");
        let other = d.create_path_list(&vec![p[1]; n + 1]).unwrap();
        assert_eq!(kept(&d), [n], "another length does not take it");
        let third = list(&d, p[1], p[0]);
        assert_eq!(kept(&d), [0; 0], "reused");
        assert_eq!(paths(&d, third), [p[1], p[0]]);
        assert!(d.path_list_paths(third).unwrap()[1..].iter().all(|x| *x == p[0]), "every path rewritten");
        assert_eq!(paths(&d, other), [p[1], p[1]]);
        let fourth = list(&d, p[0], p[0]);
        for l in [third, other, fourth] {
            d.release_path_list_reference(l).unwrap();
        }
        assert_eq!(kept(&d), [n, n + 1], "one per length: the first of each released is kept, the next freed");
        assert!(!d.needs_new_buffer(n) && !d.needs_new_buffer(n + 1) && d.needs_new_buffer(n + 2));
        // Past list_spares::SMALL_MAX, one buffer in all.
        let long = crate::list_spares::SMALL_MAX + 1;
        let a = d.create_path_list(&vec![p[0]; long]).unwrap();
        let b = d.create_path_list(&vec![p[0]; long + 1]).unwrap();
        for l in [a, b] {
            d.release_path_list_reference(l).unwrap();
        }
        assert_eq!(kept(&d), [n, n + 1, long], "one longer buffer");
        let _ = std::mem::take(d.lists.locked().extra());
        d.spare_hint.clear();
        // Too small or too large: freed.
        let small = d.create_path_list(&p).unwrap();
        d.release_path_list_reference(small).unwrap();
        assert_eq!(kept(&d), [0; 0], "a list under SPARE_MIN_PATHS is not kept");
        let big = SPARE_BYTES / std::mem::size_of::<PrimPath>() + 1;
        let l = d.create_path_list(&vec![p[0]; big]).unwrap();
        d.release_path_list_reference(l).unwrap();
        assert_eq!(kept(&d), [0; 0], "a buffer over SPARE_BYTES is not kept");
    }

    /// Paths are checked whichever buffer takes them (the kept one, filled
    /// under the table's lock or taken out for a long list, or a new one):
    /// a refused list leaves the kept buffer kept and no list behind, and
    /// an accepted one holds exactly the paths.
    #[test]
    fn paths_are_checked_into_every_kind_of_buffer() {
        let d = PathDictionary::new();
        let p = d.intern_paths(&["/A", "/B"]).unwrap();
        let kept = |d: &PathDictionary| d.lists.locked().extra().lengths();
        for n in [3, SPARE_MIN_PATHS, 64, LOCKED_FILL_PATHS, LOCKED_FILL_PATHS + 1] {
            let good: Vec<PrimPath> = (0..n).map(|i| p[i % 2]).collect();
            let mut unknown = good.clone();
            unknown[n / 2] = PrimPath::from_raw(99).unwrap();
            let expect_kept: Vec<usize> = (n > INLINE_PATHS).then_some(n).into_iter().collect();
            for round in 0..2 {
                // Round 0 fills a new buffer, round 1 the kept one.
                let l = d.create_path_list(&good).unwrap();
                assert_eq!(&d.path_list_paths(l).unwrap()[..], &good[..], "{n} paths, round {round}");
                d.release_path_list_reference(l).unwrap();
                assert_eq!(kept(&d), expect_kept, "{n} paths, round {round}");
                let e = d.create_path_list(&unknown).unwrap_err();
                assert_eq!(e.message(), "prim path 0x63 is not from this dictionary");
                assert_eq!(kept(&d), expect_kept, "a refused list leaves the kept buffer kept");
                assert_eq!(d.live_path_lists(), 0);
                // Raw ids as C passes them: a 0 anywhere is named (before
                // an unknown path), and the kept buffer, which the refused
                // ids were copied into, is kept and fills right next time.
                let raw: Vec<u64> = good.iter().map(|p| p.get()).collect();
                let mut zero = raw.clone();
                zero[n - 1] = 0;
                zero[0] = 99;
                let e = d.create_path_list_from_ids(&zero).unwrap_err();
                assert_eq!(e.status(), Status::InvalidArgument);
                assert_eq!(e.message(), format!("paths[{}] is the invalid path 0", n - 1));
                assert_eq!(kept(&d), expect_kept, "a refused list leaves the kept buffer kept");
                let l = d.create_path_list_from_ids(&raw).unwrap();
                assert_eq!(&d.path_list_paths(l).unwrap()[..], &good[..], "{n} raw ids, round {round}");
                d.release_path_list_reference(l).unwrap();
                assert_eq!(d.live_path_lists(), 0);
            }
            let _ = std::mem::take(d.lists.locked().extra());
            d.spare_hint.clear();
        }
    }

    /// The hint a caller uses to choose how to pass its paths: a list
    /// needs a new buffer when it is too long for its entry and no
    /// released list of its length left one.
    #[test]
    fn a_new_buffer_is_needed_unless_the_list_is_short_or_one_is_kept() {
        let d = PathDictionary::new();
        let p = d.intern_path("/A").unwrap();
        assert!(!d.needs_new_buffer(0));
        assert!(!d.needs_new_buffer(INLINE_PATHS));
        assert!(d.needs_new_buffer(INLINE_PATHS + 1));
        let l = d.create_path_list(&[p; 64]).unwrap();
        assert!(d.needs_new_buffer(64), "the list holds its buffer");
        d.release_path_list_reference(l).unwrap();
        assert!(!d.needs_new_buffer(64), "kept for the next list of 64");
        assert!(d.needs_new_buffer(65));
        let l = d.create_path_list_from_ids(&[p.get(); 64]).unwrap();
        assert!(d.needs_new_buffer(64), "taken again");
        d.release_path_list_reference(l).unwrap();
    }

    /// A short list stays in its entry until its paths are asked for as a
    /// shared slice; then it is shared once, and every later ask gets the
    /// same slice. Lists one longer are shared from the start.
    #[test]
    fn short_lists_are_shared_only_once_asked() {
        let d = PathDictionary::default();
        let p = d.intern_paths(&["/A", "/B", "/C", "/D", "/E", "/F", "/G", "/H", "/I"]).unwrap();
        let short = d.create_path_list(&p[..INLINE_PATHS]).unwrap();
        let long = d.create_path_list(&p).unwrap();
        let inline = |l: PathList| d.lists.with_mut(l.get(), |e| matches!(e.paths, ListPaths::Inline(_))).unwrap();
        assert!(inline(short));
        assert!(!inline(long));
        assert_eq!(d.path_list_len(short).unwrap(), INLINE_PATHS);
        assert!(inline(short), "its length needs no shared slice");
        let first = d.path_list_paths(short).unwrap();
        assert_eq!(&first[..], &p[..INLINE_PATHS]);
        assert!(!inline(short));
        assert!(Arc::ptr_eq(&first, &d.path_list_paths(short).unwrap()), "shared once");
        assert_eq!(&d.path_list_paths(long).unwrap()[..], &p[..]);
        d.add_path_list_reference(short).unwrap();
        for l in [short, short, long] {
            d.release_path_list_reference(l).unwrap();
        }
        assert_eq!(&first[..], &p[..INLINE_PATHS], "a holder keeps the paths after the release");
        assert_eq!(d.live_path_lists(), 0);
    }

    #[test]
    fn a_reference_count_that_would_overflow_is_an_error() {
        let d = PathDictionary::new();
        let list = d.create_path_list_from_strings(&["/A"]).unwrap();
        d.lists.with_mut(list.get(), |entry| entry.refs = u32::MAX).unwrap();
        let err = d.add_path_list_reference(list).unwrap_err();
        assert_eq!(err.status(), Status::OutOfRange, "{err}");
        // The count did not wrap: the list is still there after one release.
        d.release_path_list_reference(list).unwrap();
        assert!(d.path_list_paths(list).is_ok());
    }

    #[test]
    fn tokens_intern_once() {
        let d = PathDictionary::new();
        let a = d.intern_token("pos").unwrap();
        assert_eq!(d.intern_token("pos").unwrap(), a);
        assert_ne!(d.intern_token("vel").unwrap(), a);
        assert_eq!(&*d.token_text(a).unwrap(), "pos");
        assert_eq!(d.intern_token("").unwrap_err().status(), ovstage_types::Status::InvalidArgument);
        assert!(d.intern_token("a\0b").is_err());
        assert!(d.token_text(Token::from_raw(999).unwrap()).is_err());
    }

    #[test]
    fn paths_and_hierarchy() {
        let d = PathDictionary::new();
        let b = d.intern_path("/World/A/B").unwrap();
        let a = d.intern_path("/World/A").unwrap();
        assert_eq!(d.parent(b).unwrap(), Some(a));
        assert_eq!(d.intern_path("World/A/B").unwrap(), b, "a missing leading slash is accepted");
        assert_eq!(&*d.path_text(b).unwrap(), "/World/A/B");
        let toks = d.path_tokens(b).unwrap();
        assert_eq!(toks.len(), 3);
        assert_eq!(d.path_from_tokens(&toks).unwrap(), b);
        let root = d.intern_path("/").unwrap();
        assert_eq!(d.path_from_tokens(&[]).unwrap(), root);
        assert_eq!(d.parent(root).unwrap(), None);
        for bad in ["", "//", "/World//A", "/World/A/", "/1A", "/A B", "/A-b", "/A/../B", "/A\0"] {
            assert!(d.intern_path(bad).is_err(), "{bad:?} accepted");
        }
        assert!(d.intern_path("/Ä/_x1").is_ok());
    }

    #[test]
    fn path_lists_are_refcounted() {
        let d = PathDictionary::new();
        let l = d.create_path_list_from_strings(&["/A", "/B", "/A"]).unwrap();
        assert_eq!(d.path_list_len(l).unwrap(), 3);
        d.add_path_list_reference(l).unwrap();
        d.release_path_list_reference(l).unwrap();
        assert_eq!(d.path_list_len(l).unwrap(), 3);
        d.release_path_list_reference(l).unwrap();
        assert_eq!(d.path_list_len(l).unwrap_err().status(), ovstage_types::Status::InvalidHandle);
        assert!(d.release_path_list_reference(l).is_err());
        let l2 = d.create_path_list(&[]).unwrap();
        assert_ne!(l2, l, "a released list's handle is not reused");
        assert_eq!(d.path_list_len(l2).unwrap(), 0);
        assert!(d.create_path_list(&[PrimPath::from_raw(1000).unwrap()]).is_err());
        assert_eq!(d.live_path_lists(), 1);
    }

    #[test]
    fn known_check_is_exact_at_every_bound() {
        for known in [1u64, 2, 7, 1000, (1 << 32) + 5, (1 << 63) - 1] {
            let ok = |ids: &[u64]| {
                all_known(&ids.iter().map(|i| PrimPath::from_raw(*i).unwrap()).collect::<Vec<_>>(), known)
            };
            assert!(ok(&[]));
            assert!(ok(&[1, known]));
            for id in [known + 1, known + 2, 1 << 32, 1 << 63, (1 << 63) + known, (1 << 63) + 1, u64::MAX, u64::MAX - 1]
            {
                assert_eq!(ok(&[1, id, known]), id <= known, "{id} with {known} paths");
                assert_eq!(ok(&[id]), id <= known, "{id} with {known} paths");
                // The same ids raw, as C passes them.
                assert_eq!(all_known(&[1, id, known], known), id <= known, "raw {id} with {known} paths");
            }
            for ids in [&[0][..], &[1, 0, known], &[known, u64::MAX, 0]] {
                assert!(!all_known(ids, known), "{ids:?} with {known} paths: 0 is never known");
            }
        }
    }

    #[test]
    fn lists_check_every_path() {
        let d = PathDictionary::new();
        let p = d.intern_paths(&["/A", "/A/B", "/C"]).unwrap();
        let l = d.create_path_list(&p).unwrap();
        assert_eq!(&*d.path_list_paths(l).unwrap(), &p[..]);
        for unknown in [5, 99, 1 << 63, u64::MAX] {
            let e = d.create_path_list(&[p[0], PrimPath::from_raw(unknown).unwrap(), p[2]]).unwrap_err();
            assert_eq!(e.status(), ovstage_types::Status::InvalidHandle, "{unknown}");
            assert_eq!(e.message(), format!("prim path {unknown:#x} is not from this dictionary"));
        }
        assert_eq!(d.live_path_lists(), 1, "failed creates hold nothing");
    }

    #[test]
    fn batches_mix_known_and_new_paths() {
        let d = PathDictionary::new();
        let a = d.intern_path("/A/B").unwrap();
        let got = d.intern_paths(&["/A/B", "/A", "/C/D", "/A/B", "/C"]).unwrap();
        assert_eq!(got[0], a);
        assert_eq!(got[3], a);
        assert_eq!(d.parent(a).unwrap(), Some(got[1]));
        assert_eq!(d.parent(got[2]).unwrap(), Some(got[4]));
        assert!(d.intern_paths(&["/A", "/bad path", "/E"]).is_err());
        assert!(d.lookup_token("E").is_none(), "paths after the bad one are not interned");
        // Many texts in one map: the hasher spreads them.
        let texts: Vec<String> = (0..20_000).map(|i| format!("/World/Env{}/Robot{}", i / 100, i % 100)).collect();
        let ids = d.intern_paths(&texts).unwrap();
        assert_eq!(d.intern_paths(&texts).unwrap(), ids);
        for (t, id) in texts.iter().zip(&ids).step_by(997) {
            assert_eq!(&*d.path_text(*id).unwrap(), t.as_str());
        }
    }

    #[test]
    fn paths_minted_on_another_thread_are_known_at_once() {
        let d = Arc::new(PathDictionary::new());
        let (tx, rx) = std::sync::mpsc::channel();
        let minter = {
            let d = d.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    tx.send(d.intern_path(&format!("/P{i}")).unwrap().get()).unwrap();
                }
            })
        };
        for raw in rx {
            let l = d.create_path_list(&[PrimPath::from_raw(raw).unwrap()]).unwrap();
            d.release_path_list_reference(l).unwrap();
            assert!(d.contains_path(PrimPath::from_raw(raw).unwrap()));
        }
        minter.join().unwrap();
        assert_eq!(d.live_path_lists(), 0);
    }
}
