//! `cargo xtask check-snippets`: docs cite code from example programs, and
//! this checks that every citation points at a snippet that exists.
//!
//! In a source file a snippet runs from a line containing `[snippet:NAME]` to
//! a later line containing `[/snippet:NAME]` (usually inside comments). NAME is
//! `[a-z0-9][a-z0-9-]*`. Snippets of different names may nest but not overlap.
//! Markdown cites a snippet with a line of the form
//!
//! ```text
//! > **Source:** `examples/c/minimal/main.c` snippet `enqueue-wait-error`
//! ```
//!
//! with the path relative to the repository root. Citations inside fenced code
//! blocks are examples, not citations, and are skipped.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Extensions of the source files scanned for markers.
const SOURCE_EXTENSIONS: &[&str] = &["c", "h", "cc", "cpp", "hpp", "rs", "py"];
/// Directories under the root scanned for markers.
const SOURCE_DIRS: &[&str] = &["examples", "tests"];
const START: &str = "[snippet:";
const END: &str = "[/snippet:";
const CITATION: &str = "> **Source:**";
const CITATION_FORMAT: &str = "> **Source:** `path/from/repo/root` snippet `name`";

/// What a successful check looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Source files scanned for snippet markers.
    pub(crate) source_files: usize,
    /// Snippets defined in those files.
    pub(crate) snippets: usize,
    /// Markdown files scanned for citations.
    pub(crate) doc_files: usize,
    /// Citations checked.
    pub(crate) citations: usize,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} snippets in {} source files, {} citations in {} Markdown files",
            self.snippets, self.source_files, self.citations, self.doc_files
        )
    }
}

/// A marked region of a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snippet {
    pub(crate) name: String,
    /// 1-based line of the start marker.
    pub(crate) start: usize,
    /// 1-based line of the end marker.
    pub(crate) end: usize,
    /// The lines between the markers, without nested snippets' marker lines.
    pub(crate) body: String,
}

/// One marker found on a line.
enum Marker<'a> {
    Start(&'a str),
    End(&'a str),
}

fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'0'..=b'9'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
}

/// The markers on one line, in order, or the first malformed one.
fn markers(line: &str) -> Result<Vec<Marker<'_>>, String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let tail = &rest[open..];
        let (is_end, after) = if let Some(after) = tail.strip_prefix(START) {
            (false, after)
        } else if let Some(after) = tail.strip_prefix(END) {
            (true, after)
        } else {
            rest = &tail[1..];
            continue;
        };
        let Some(close) = after.find(']') else {
            return Err(format!("malformed snippet marker `{}`: no closing `]`", tail.trim_end()));
        };
        let name = &after[..close];
        if !valid_name(name) {
            return Err(format!(
                "malformed snippet marker `{}`: names are lowercase letters, digits and `-`, \
                 not starting with `-`",
                &tail[..tail.len() - after.len() + close + 1]
            ));
        }
        found.push(if is_end { Marker::End(name) } else { Marker::Start(name) });
        rest = &after[close + 1..];
    }
    Ok(found)
}

/// Finds the snippets of one source file's text. On failure returns every
/// problem, each as `line N: message`, in line order.
pub(crate) fn extract(text: &str) -> Result<Vec<Snippet>, Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut errors: Vec<(usize, String)> = Vec::new();
    let mut snippets: Vec<Snippet> = Vec::new();
    // Open snippets, innermost last: (name, start line).
    let mut open: Vec<(&str, usize)> = Vec::new();
    // Lines holding markers are left out of bodies.
    let mut marker_line = vec![false; lines.len()];

    for (index, line) in lines.iter().enumerate() {
        let number = index + 1;
        let found = match markers(line) {
            Ok(found) => found,
            Err(e) => {
                errors.push((number, e));
                marker_line[index] = true;
                continue;
            }
        };
        marker_line[index] = !found.is_empty();
        for marker in found {
            match marker {
                Marker::Start(name) => open.push((name, number)),
                Marker::End(name) => match open.iter().rposition(|&(n, _)| n == name) {
                    None => errors.push((number, format!("`[/snippet:{name}]` ends a snippet that was never started"))),
                    Some(at) => {
                        let (_, start) = open.remove(at);
                        if let Some(&(inner, inner_start)) = open.get(at) {
                            errors.push((
                                number,
                                format!(
                                    "`[/snippet:{name}]` ends `{name}` (started on line {start}) while `{inner}` \
                                     (started on line {inner_start}) is still open: snippets may nest but not overlap"
                                ),
                            ));
                        }
                        snippets.push(Snippet { name: name.to_owned(), start, end: number, body: String::new() });
                    }
                },
            }
        }
    }
    for (name, start) in open {
        errors.push((start, format!("`[snippet:{name}]` is never ended by `[/snippet:{name}]`")));
    }

    snippets.sort_by_key(|s| s.start);
    let mut first: HashMap<&str, &Snippet> = HashMap::new();
    for snippet in &mut snippets {
        let body: Vec<&str> = (snippet.start..snippet.end - 1).filter(|&i| !marker_line[i]).map(|i| lines[i]).collect();
        snippet.body = body.join("\n");
    }
    for snippet in &snippets {
        if snippet.body.trim().is_empty() {
            errors.push((snippet.start, format!("snippet `{}` is empty", snippet.name)));
        }
        if let Some(earlier) = first.get(snippet.name.as_str()) {
            errors.push((
                snippet.start,
                format!(
                    "snippet `{}` is defined twice (first on lines {}-{})",
                    snippet.name, earlier.start, earlier.end
                ),
            ));
        } else {
            first.insert(&snippet.name, snippet);
        }
    }

    if errors.is_empty() {
        Ok(snippets)
    } else {
        errors.sort_by_key(|&(line, _)| line);
        Err(errors.into_iter().map(|(line, e)| format!("line {line}: {e}")).collect())
    }
}

/// Parses a `> **Source:**` line into (path, snippet name).
fn parse_citation(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix(CITATION)?.trim_start().strip_prefix('`')?;
    let (path, rest) = rest.split_once('`')?;
    let rest = rest.trim_start().strip_prefix("snippet")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let (name, rest) = rest.trim_start().strip_prefix('`')?.split_once('`')?;
    (!path.trim().is_empty() && valid_name(name) && rest.trim().is_empty()).then_some((path, name))
}

/// A citation's (path, snippet name), or why its line is malformed.
type Citation<'a> = Result<(&'a str, &'a str), String>;

/// Citations in one Markdown text, outside fenced code blocks, with their lines.
fn citations(text: &str) -> Vec<(usize, Citation<'_>)> {
    let mut found = Vec::new();
    let mut fence: Option<char> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(c) = ['`', '~'].into_iter().find(|&c| trimmed.starts_with(&c.to_string().repeat(3))) {
            match fence {
                None => fence = Some(c),
                Some(open) if open == c => fence = None,
                Some(_) => {}
            }
            continue;
        }
        // Lenient detection, strict parsing: near misses are reported, not skipped.
        let cites = trimmed.contains("**Source:**") && (trimmed.starts_with('>') || trimmed.starts_with("**"));
        if fence.is_some() || !cites {
            continue;
        }
        let parsed = parse_citation(line).ok_or_else(|| format!("malformed citation; expected {CITATION_FORMAT}"));
        found.push((index + 1, parsed));
    }
    found
}

/// `path` relative to `root`, with `/` separators.
fn display(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Files under `dir` (recursively, skipping `target` and hidden directories)
/// whose extension is in `extensions`, sorted.
fn walk(root: &Path, dir: &Path, extensions: &[&str], out: &mut Vec<PathBuf>, errors: &mut Vec<String>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            errors.push(format!("{}: cannot list directory: {e}", display(root, dir)));
            return;
        }
    };
    let mut paths: Vec<(PathBuf, bool)> = Vec::new();
    for entry in entries {
        match entry.and_then(|entry| Ok((entry.path(), entry.file_type()?.is_dir()))) {
            Ok(found) => paths.push(found),
            Err(e) => errors.push(format!("{}: cannot list directory: {e}", display(root, dir))),
        }
    }
    paths.sort();
    for (path, is_dir) in paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if is_dir {
            if name != "target" && !name.starts_with('.') {
                walk(root, &path, extensions, out, errors);
            }
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| extensions.contains(&e)) && path.is_file() {
            out.push(path);
        }
    }
}

/// Reads and extracts one source file, adding its problems to `errors`.
/// `None` if it could not be read or has marker problems.
fn extract_file(root: &Path, path: &Path, errors: &mut Vec<String>) -> Option<Vec<Snippet>> {
    let shown = display(root, path);
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            errors.push(format!("{shown}: cannot read: {e}"));
            return None;
        }
    };
    match extract(&text) {
        Ok(snippets) => Some(snippets),
        Err(problems) => {
            errors.extend(problems.into_iter().map(|p| format!("{shown}: {p}")));
            None
        }
    }
}

/// Checks every snippet marker under `root/examples` and `root/tests`, and
/// every citation in the Markdown under `root/docs`, `root/README.md` and
/// `root/ARCHITECTURE.md`. On failure returns every problem found, each a
/// line of the form `path: line N: message`.
pub(crate) fn check(root: &Path) -> Result<Summary, Vec<String>> {
    let mut errors = Vec::new();
    let mut summary = Summary::default();

    let mut sources = Vec::new();
    for dir in SOURCE_DIRS {
        let dir = root.join(dir);
        if dir.is_dir() {
            walk(root, &dir, SOURCE_EXTENSIONS, &mut sources, &mut errors);
        }
    }
    // Snippets by file, as cited (relative, `/`-separated); `None` for a file
    // with problems, which are already reported.
    let mut files: HashMap<String, Option<Vec<Snippet>>> = HashMap::new();
    for path in &sources {
        let snippets = extract_file(root, path, &mut errors);
        summary.source_files += 1;
        summary.snippets += snippets.as_ref().map_or(0, Vec::len);
        files.insert(display(root, path), snippets);
    }

    let mut docs = Vec::new();
    if root.join("docs").is_dir() {
        walk(root, &root.join("docs"), &["md"], &mut docs, &mut errors);
    }
    docs.extend(["README.md", "ARCHITECTURE.md"].map(|name| root.join(name)).into_iter().filter(|p| p.is_file()));
    for doc in &docs {
        let shown = display(root, doc);
        let text = match fs::read_to_string(doc) {
            Ok(text) => text,
            Err(e) => {
                errors.push(format!("{shown}: cannot read: {e}"));
                continue;
            }
        };
        summary.doc_files += 1;
        for (line, citation) in citations(&text) {
            summary.citations += 1;
            let at = format!("{shown}: line {line}");
            let (cited, name) = match citation {
                Ok(found) => found,
                Err(e) => {
                    errors.push(format!("{at}: {e}"));
                    continue;
                }
            };
            let relative = Path::new(cited);
            if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
                errors
                    .push(format!("{at}: cited path `{cited}` must be relative to the repository root, without `..`"));
                continue;
            }
            let path = root.join(relative);
            let key = display(root, &path);
            if !files.contains_key(&key) {
                if !path.is_file() {
                    errors.push(format!("{at}: cited file `{cited}` does not exist"));
                    continue;
                }
                // A cited file outside the scanned directories.
                let snippets = extract_file(root, &path, &mut errors);
                files.insert(key.clone(), snippets);
            }
            if let Some(Some(snippets)) = files.get(&key)
                && !snippets.iter().any(|s| s.name == name)
            {
                let defined: Vec<&str> = snippets.iter().map(|s| s.name.as_str()).collect();
                let defined = if defined.is_empty() { "none".to_owned() } else { defined.join(", ") };
                errors.push(format!("{at}: `{cited}` has no snippet `{name}` (it defines: {defined})"));
            }
        }
    }

    if errors.is_empty() { Ok(summary) } else { Err(errors) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// One error from `extract`, which must fail with exactly one.
    fn only_error(text: &str) -> String {
        let errors = extract(text).expect_err("extract should fail");
        assert_eq!(errors.len(), 1, "{errors:#?}");
        errors.into_iter().next().unwrap()
    }

    #[test]
    fn extracts_nested_snippets_with_bodies_and_lines() {
        let text = "\
int main(void) {
    // [snippet:outer]
    setup();
    // [snippet:inner-1]
    run();

    // [/snippet:inner-1]
    teardown();
    // [/snippet:outer]
}
";
        let snippets = extract(text).unwrap();
        assert_eq!(
            snippets,
            [
                Snippet {
                    name: "outer".into(),
                    start: 2,
                    end: 9,
                    body: "    setup();\n    run();\n\n    teardown();".into()
                },
                Snippet { name: "inner-1".into(), start: 4, end: 7, body: "    run();\n".into() },
            ]
        );
    }

    #[test]
    fn python_comments_and_no_markers() {
        let snippets = extract("# [snippet:py-read]\nx = stage.read()\n# [/snippet:py-read]\n").unwrap();
        assert_eq!(snippets.len(), 1);
        assert_eq!(snippets[0].body, "x = stage.read()");
        assert_eq!(extract("fn main() { let v = [1]; v[0]; }\n").unwrap(), []);
    }

    #[test]
    fn end_without_start() {
        let e = only_error("a\n// [/snippet:lost]\n");
        assert_eq!(e, "line 2: `[/snippet:lost]` ends a snippet that was never started");
    }

    #[test]
    fn start_never_ended() {
        let e = only_error("// [snippet:open]\ncode();\n");
        assert_eq!(e, "line 1: `[snippet:open]` is never ended by `[/snippet:open]`");
    }

    #[test]
    fn overlap_is_an_error() {
        let e = only_error("// [snippet:a]\nx\n// [snippet:b]\ny\n// [/snippet:a]\nz\n// [/snippet:b]\n");
        assert!(e.starts_with("line 5: `[/snippet:a]` ends `a` (started on line 1) while `b`"), "{e}");
        assert!(e.contains("nest but not overlap"), "{e}");
    }

    #[test]
    fn defined_twice() {
        let e = only_error("// [snippet:x]\n1\n// [/snippet:x]\n// [snippet:x]\n2\n// [/snippet:x]\n");
        assert_eq!(e, "line 4: snippet `x` is defined twice (first on lines 1-3)");
    }

    #[test]
    fn empty_snippets() {
        let e = only_error("// [snippet:blank]\n   \n\n// [/snippet:blank]\n");
        assert_eq!(e, "line 1: snippet `blank` is empty");
        let e = only_error("// [snippet:same-line] [/snippet:same-line]\n");
        assert_eq!(e, "line 1: snippet `same-line` is empty");
    }

    #[test]
    fn malformed_markers() {
        for (text, shown) in [
            ("// [snippet:Upper]\n", "`[snippet:Upper]`"),
            ("// [snippet:-dash]\n", "`[snippet:-dash]`"),
            ("// [snippet:]\n", "`[snippet:]`"),
            ("// [/snippet:under_score]\n", "`[/snippet:under_score]`"),
            ("// [snippet: spaced]\n", "`[snippet: spaced]`"),
        ] {
            let e = only_error(text);
            assert!(e.starts_with(&format!("line 1: malformed snippet marker {shown}: names are")), "{e}");
        }
        let e = only_error("x\n// [snippet:unclosed\n");
        assert_eq!(e, "line 2: malformed snippet marker `[snippet:unclosed`: no closing `]`");
    }

    #[test]
    fn reports_every_problem_in_line_order() {
        let errors = extract("// [/snippet:a]\n// [snippet:b]\n// [/snippet:b]\n// [snippet:Bad]\n// [snippet:c]\n")
            .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:#?}");
        assert!(errors[0].starts_with("line 1: "), "{errors:#?}");
        assert!(errors[1].starts_with("line 2: snippet `b` is empty"), "{errors:#?}");
        assert!(errors[2].starts_with("line 4: malformed"), "{errors:#?}");
        assert!(errors[3].starts_with("line 5: `[snippet:c]` is never ended"), "{errors:#?}");
    }

    #[test]
    fn parses_citations() {
        assert_eq!(
            parse_citation("> **Source:** `examples/c/minimal/main.c` snippet `enqueue-wait-error`"),
            Some(("examples/c/minimal/main.c", "enqueue-wait-error"))
        );
        assert_eq!(parse_citation("  >  **Source:**  `a.rs`  snippet  `x`  "), None); // `>  **` is not the prefix
        assert_eq!(parse_citation("> **Source:**  `a.rs`  snippet  `x`  "), Some(("a.rs", "x")));
        for bad in [
            "> **Source:** examples/a.c snippet `x`",
            "> **Source:** `examples/a.c` `x`",
            "> **Source:** `examples/a.c` snippet x",
            "> **Source:** `examples/a.c` snippet `X`",
            "> **Source:** `examples/a.c` snippet `x` and more",
            "> **Source:** `` snippet `x`",
            "> **Source:** `examples/a.c` snippets `x`",
        ] {
            assert_eq!(parse_citation(bad), None, "{bad}");
        }
    }

    #[test]
    fn citations_skip_fenced_blocks() {
        let text = "\
> **Source:** `a.c` snippet `one`
```markdown
> **Source:** `b.c` snippet `two`
> **Source:** not a citation
```
~~~
> **Source:** `c.c` snippet `three`
```
~~~
> **Source:** `d.c`
>**Source:** `e.c` snippet `five`
**Source:** `f.c` snippet `six`
The **Source:** of a claim, in prose, is no citation.
";
        let found = citations(text);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert_eq!(found[0], (1, Ok(("a.c", "one"))));
        for (at, (line, parsed)) in found[1..].iter().enumerate() {
            assert_eq!(*line, 10 + at);
            assert!(parsed.as_ref().unwrap_err().starts_with("malformed citation"));
        }
    }

    /// A directory tree under the system temp dir, removed on drop.
    struct TempTree(PathBuf);

    impl TempTree {
        fn new() -> Self {
            static COUNT: AtomicUsize = AtomicUsize::new(0);
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
            let dir = std::env::temp_dir().join(format!(
                "xtask-snippets-{}-{}-{nanos}",
                std::process::id(),
                COUNT.fetch_add(1, Ordering::Relaxed)
            ));
            fs::create_dir_all(&dir).unwrap();
            TempTree(dir)
        }

        fn write(&self, path: &str, text: &str) -> &Self {
            let path = self.0.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
            self
        }
    }

    impl Drop for TempTree {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    const MAIN_C: &str = "\
int main(void) {
    /* [snippet:enqueue-wait-error] */
    if (ovs_wait(q) != OVS_OK) return 1;
    /* [/snippet:enqueue-wait-error] */
}
";

    #[test]
    fn check_passes_on_a_good_tree() {
        let tree = TempTree::new();
        tree.write("examples/c/minimal/main.c", MAIN_C)
            .write("examples/c/minimal/util.h", "// [snippet:decl]\nint f(void);\n// [/snippet:decl]\n")
            .write("tests/py/test_a.py", "# [snippet:py-open]\nopen()\n# [/snippet:py-open]\n")
            .write("examples/notes.txt", "[snippet:not-scanned]")
            // Broken markers in skipped directories are ignored.
            .write("examples/target/debug/gen.rs", "// [snippet:broken]\n")
            .write("examples/.cache/x.c", "// [/snippet:broken]\n")
            .write(
                "docs/guide/errors.md",
                "# Errors\n\n> **Source:** `examples/c/minimal/main.c` snippet `enqueue-wait-error`\n",
            )
            .write("README.md", "> **Source:** `tests/py/test_a.py` snippet `py-open`\n")
            // A cited file outside the scanned directories is read on demand.
            .write(
                "ARCHITECTURE.md",
                "```\n> **Source:** `x` snippet `y`\n```\n> **Source:** `crates/a/lib.rs` snippet `api`\n",
            )
            .write("crates/a/lib.rs", "// [snippet:api]\npub fn api() {}\n// [/snippet:api]\n");
        let summary = check(&tree.0).unwrap();
        assert_eq!(summary, Summary { source_files: 3, snippets: 3, doc_files: 3, citations: 3 });
        assert_eq!(summary.to_string(), "3 snippets in 3 source files, 3 citations in 3 Markdown files");
    }

    #[test]
    fn check_reports_every_problem() {
        let tree = TempTree::new();
        tree.write("examples/c/minimal/main.c", MAIN_C)
            .write("examples/rust/bad.rs", "// [snippet:a]\nfn a() {}\n")
            .write("crates/b.rs", "// [/snippet:b]\n")
            .write(
                "docs/api.md",
                "\
> **Source:** `examples/c/minimal/main.c` snippet `enqueue-wait-error`
> **Source:** `examples/c/minimal/main.c` snippet `missing`
> **Source:** `examples/c/nothing.c` snippet `x`
> **Source:** `examples/c/minimal/main.c`
> **Source:** `../outside.c` snippet `x`
> **Source:** `crates/b.rs` snippet `b`
",
            );
        let errors = check(&tree.0).unwrap_err();
        assert_eq!(
            errors,
            [
                "examples/rust/bad.rs: line 1: `[snippet:a]` is never ended by `[/snippet:a]`",
                "docs/api.md: line 2: `examples/c/minimal/main.c` has no snippet `missing` \
                 (it defines: enqueue-wait-error)",
                "docs/api.md: line 3: cited file `examples/c/nothing.c` does not exist",
                "docs/api.md: line 4: malformed citation; expected \
                 > **Source:** `path/from/repo/root` snippet `name`",
                "docs/api.md: line 5: cited path `../outside.c` must be relative to the repository root, without `..`",
                "crates/b.rs: line 1: `[/snippet:b]` ends a snippet that was never started",
            ]
        );
    }

    #[test]
    fn check_on_an_empty_tree() {
        let tree = TempTree::new();
        assert_eq!(check(&tree.0).unwrap(), Summary::default());
    }
}
