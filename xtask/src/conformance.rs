//! `cargo xtask conformance`: the differential conformance harness.
//!
//! - `cargo xtask conformance` (what `cargo xtask test` runs): our
//!   library's transcript against the snapshots in
//!   `crates/ovstage-conformance/snapshots/`, one file per scenario.
//!   Snapshots hold the reference's transcript, except where ours differs
//!   on purpose; those files hold ours, with `#` comment lines saying why.
//! - `--against DIR`: ours and `DIR/libovstage-dynamic.so` (the published
//!   library) side by side, each in its own process; every difference is
//!   printed. `--bless` then rewrites the snapshots from the reference's
//!   transcript, except files that carry a `#` comment (documented
//!   differences): those get ours, under their comments.
//! - `--filter TEXT`: only scenarios whose name contains TEXT.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, root};

const USAGE: &str = "usage: cargo xtask conformance [--against DIR [--bless]] [--filter TEXT]";

fn snapshots() -> PathBuf {
    root().join("crates/ovstage-conformance/snapshots")
}

/// Builds our C library and the driver (debug).
fn build() -> Result<(), String> {
    let status = cargo()
        .args(["build", "--quiet", "-p", "ovstage-ffi", "-p", "ovstage-conformance"])
        .status()
        .map_err(|e| format!("cargo build: {e}"))?;
    if status.success() { Ok(()) } else { Err("building ovstage-ffi and ovstage-conformance failed".into()) }
}

/// The transcript of the library at `lib`, per scenario.
fn transcript(lib: &Path, filter: Option<&str>) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut cmd = Command::new(root().join("target/debug/ovstage-conformance"));
    cmd.arg(lib);
    if let Some(f) = filter {
        cmd.args(["--filter", f]);
    }
    let out = cmd.output().map_err(|e| format!("running the conformance driver: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the conformance driver failed on {} ({}): {}",
            lib.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(split(&String::from_utf8_lossy(&out.stdout)))
}

/// A transcript's lines per scenario (`=== NAME` headers); `#` comment
/// lines are dropped.
fn split(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("=== ") {
            current = Some(name.to_string());
            out.entry(name.to_string()).or_default();
        } else if let Some(name) = &current
            && !line.starts_with('#')
        {
            out.entry(name.clone()).or_default().push(line.to_string());
        }
    }
    out
}

/// The lines of `a` and `b` that differ, as `-`/`+` lines with a little
/// context (a longest-common-subsequence diff; transcripts are short).
fn diff(a: &[String], b: &[String]) -> Vec<String> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(format!("+ {}", b[j]));
            j += 1;
        } else {
            out.push(format!("- {}", a[i]));
            i += 1;
        }
    }
    out
}

/// Compares `ours` with `expected` scenario by scenario; prints every
/// difference and returns how many scenarios differ.
fn compare(
    expected: &BTreeMap<String, Vec<String>>,
    ours: &BTreeMap<String, Vec<String>>,
    expected_label: &str,
) -> usize {
    let mut differing = 0;
    for (name, lines) in ours {
        match expected.get(name) {
            None => {
                println!("--- {name}: no {expected_label} transcript");
                differing += 1;
            }
            Some(e) if e != lines => {
                differing += 1;
                println!("--- {name} (- {expected_label}, + ours)");
                for d in diff(e, lines) {
                    println!("    {d}");
                }
            }
            Some(_) => {}
        }
    }
    differing
}

fn read_snapshots(filter: Option<&str>) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut out = BTreeMap::new();
    let dir = snapshots();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else { continue };
        if path.extension().is_none_or(|e| e != "txt") || filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        out.extend(split(&format!("=== {name}\n{text}")));
    }
    Ok(out)
}

/// Our transcript against the committed snapshots (CI).
pub(crate) fn check() -> Result<(), String> {
    build()?;
    let ours = transcript(&root().join("target/debug/libovstage.so"), None)?;
    let expected = read_snapshots(None)?;
    let differing = compare(&expected, &ours, "snapshot");
    let lines: usize = ours.values().map(Vec::len).sum();
    if differing > 0 {
        return Err(format!("{differing} scenario(s) differ from their snapshots"));
    }
    if let Some(stale) = expected.keys().find(|k| !ours.contains_key(*k)) {
        return Err(format!("snapshot {stale}.txt has no scenario"));
    }
    println!("    conformance: {} scenarios, {lines} checked lines match the snapshots", ours.len());
    Ok(())
}

/// `cargo xtask conformance [...]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let (mut against, mut bless, mut filter) = (None, false, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--against" => against = Some(PathBuf::from(it.next().ok_or("--against needs a directory")?)),
            "--bless" => bless = true,
            "--filter" => filter = Some(it.next().ok_or("--filter needs a value")?.clone()),
            _ => return Err(USAGE.into()),
        }
    }
    let Some(dir) = against else {
        if bless || filter.is_some() {
            return Err(USAGE.into());
        }
        return check();
    };
    let reference = dir.join("libovstage-dynamic.so");
    if !reference.exists() {
        return Err(format!("--against: {} does not exist", reference.display()));
    }
    build()?;
    let ours = transcript(&root().join("target/debug/libovstage.so"), filter.as_deref())?;
    let theirs = transcript(&reference, filter.as_deref())?;
    let differing = compare(&theirs, &ours, "reference");
    let snaps = read_snapshots(filter.as_deref())?;
    let documented =
        ours.iter().filter(|(name, lines)| theirs.get(*name) != Some(lines) && snaps.get(*name) == Some(lines));
    println!(
        "conformance: {} scenarios, {differing} differ from the reference ({} of them as their snapshots record)",
        ours.len(),
        documented.count()
    );
    if bless {
        std::fs::create_dir_all(snapshots()).map_err(|e| e.to_string())?;
        for (name, lines) in &theirs {
            let path = snapshots().join(format!("{name}.txt"));
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            let comments: Vec<&str> = old.lines().filter(|l| l.starts_with('#')).collect();
            // A commented file documents a difference and holds ours: its
            // lines follow ours, under the same comments.
            let lines = match ours.get(name) {
                Some(mine) if !comments.is_empty() => {
                    println!("re-recorded ours in {} (documents a difference)", path.display());
                    comments.iter().map(|c| c.to_string()).chain(mine.iter().cloned()).collect()
                }
                _ => lines.clone(),
            };
            let mut text = lines.join("\n");
            text.push('\n');
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &[&str]) -> Vec<String> {
        s.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn diff_lists_removed_and_added_lines() {
        let a = lines(&["x", "y", "z"]);
        let b = lines(&["x", "w", "z", "v"]);
        assert_eq!(diff(&a, &b), ["+ w", "- y", "+ v"]);
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn transcripts_split_by_scenario_without_comments() {
        let t = split("=== a\none\n# why\ntwo\n=== b\n=== c\nthree\n");
        assert_eq!(t["a"], ["one", "two"]);
        assert!(t["b"].is_empty());
        assert_eq!(t["c"], ["three"]);
    }
}
