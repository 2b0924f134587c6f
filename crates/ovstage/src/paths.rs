//! The path dictionary: interned tokens and prim paths, and reference-counted
//! path lists. Thread-safe; tokens and paths live as long as the dictionary.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use ovstage_types::{Error, PathList, PrimPath, Result, Token};

use crate::handles::HandleTable;
use ovstage_types::sync::{read, write};

/// One interned prim path.
#[derive(Debug)]
struct PathEntry {
    text: Arc<str>,
    parent: Option<PrimPath>,
    /// The last component (`None` for the root `/`).
    name: Option<Token>,
}

#[derive(Default)]
struct Interner {
    tokens: Vec<Arc<str>>,
    token_ids: HashMap<Arc<str>, Token>,
    paths: Vec<PathEntry>,
    path_ids: HashMap<Arc<str>, PrimPath>,
}

struct ListEntry {
    paths: Arc<[PrimPath]>,
    refs: u32,
}

/// Interned tokens and prim paths, and path lists.
///
/// Token and path handles are dense (`index + 1`), so stores can index
/// arrays by them. Path list handles are versioned and salted per
/// dictionary: a released list's handle, or another dictionary's, is
/// rejected, never confused with a live list.
pub struct PathDictionary {
    interner: RwLock<Interner>,
    lists: HandleTable<ListEntry>,
}

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
        let mut interner = Interner::default();
        let root: Arc<str> = Arc::from("/");
        let id = PrimPath::from_raw(1).expect("non-zero");
        interner.paths.push(PathEntry { text: root.clone(), parent: None, name: None });
        interner.path_ids.insert(root, id);
        PathDictionary { interner: RwLock::new(interner), lists: HandleTable::new() }
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
        Ok(Self::intern_token_locked(&mut self.write(), text))
    }

    fn intern_token_locked(interner: &mut Interner, text: &str) -> Token {
        if let Some(t) = interner.token_ids.get(text) {
            return *t;
        }
        let text: Arc<str> = Arc::from(text);
        let id = Token::from_raw(interner.tokens.len() as u64 + 1).expect("non-zero");
        interner.tokens.push(text.clone());
        interner.token_ids.insert(text, id);
        id
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
        let parts = components(text).map_err(Error::invalid_argument)?;
        let mut interner = self.write();
        let mut current = PrimPath::from_raw(1).expect("root");
        let mut prefix = String::with_capacity(text.len() + 1);
        for part in parts {
            prefix.push('/');
            prefix.push_str(part);
            current = match interner.path_ids.get(prefix.as_str()) {
                Some(p) => *p,
                None => {
                    let name = Self::intern_token_locked(&mut interner, part);
                    let text: Arc<str> = Arc::from(prefix.as_str());
                    let id = PrimPath::from_raw(interner.paths.len() as u64 + 1).expect("non-zero");
                    interner.paths.push(PathEntry { text: text.clone(), parent: Some(current), name: Some(name) });
                    interner.path_ids.insert(text, id);
                    id
                }
            };
        }
        Ok(current)
    }

    /// Interns several paths; all or nothing.
    pub fn intern_paths<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<PrimPath>> {
        texts.iter().map(|t| self.intern_path(t.as_ref())).collect()
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
        self.read()
            .paths
            .get((path.get() - 1) as usize)
            .map(f)
            .ok_or_else(|| Error::invalid_handle(format!("{path} is not from this dictionary")))
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
        (path.get() as usize) <= self.read().paths.len()
    }

    /// A new path list (reference count 1) of `paths`.
    pub fn create_path_list(&self, paths: &[PrimPath]) -> Result<PathList> {
        let known = self.read().paths.len() as u64;
        if let Some(bad) = paths.iter().find(|p| p.get() > known) {
            return Err(Error::invalid_handle(format!("{bad} is not from this dictionary")));
        }
        let raw = self.lists.insert_with(|_| ListEntry { paths: paths.into(), refs: 1 });
        Ok(PathList::from_raw(raw).expect("handles are never 0"))
    }

    /// A new path list (reference count 1) of `texts`, interned as paths.
    pub fn create_path_list_from_strings<S: AsRef<str>>(&self, texts: &[S]) -> Result<PathList> {
        let paths = self.intern_paths(texts)?;
        self.create_path_list(&paths)
    }

    fn unknown_list(list: PathList) -> Error {
        Error::invalid_handle(format!("{list} is unknown or was released"))
    }

    /// Adds a reference to a path list.
    pub fn add_path_list_reference(&self, list: PathList) -> Result<()> {
        self.lists.with_mut(list.get(), |entry| entry.refs += 1).ok_or_else(|| Self::unknown_list(list))
    }

    /// Drops a reference; the list is gone when the last one is released.
    pub fn release_path_list_reference(&self, list: PathList) -> Result<()> {
        let last = self
            .lists
            .with_mut(list.get(), |entry| {
                entry.refs -= 1;
                entry.refs == 0
            })
            .ok_or_else(|| Self::unknown_list(list))?;
        if last {
            // Only a release removes a list, and this one held a
            // reference: the entry is still there.
            self.lists.remove(list.get());
        }
        Ok(())
    }

    /// The paths of a list.
    pub fn path_list_paths(&self, list: PathList) -> Result<Arc<[PrimPath]>> {
        self.lists.with_mut(list.get(), |e| e.paths.clone()).ok_or_else(|| Self::unknown_list(list))
    }

    /// Number of paths in a list.
    pub fn path_list_len(&self, list: PathList) -> Result<usize> {
        self.path_list_paths(list).map(|p| p.len())
    }

    /// Number of live path lists (for leak checks).
    pub fn live_path_lists(&self) -> usize {
        self.lists.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
