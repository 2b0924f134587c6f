//! `cargo xtask bench-suite --against DIR`: the published package's own
//! benchmark binary (`DIR/benchmark.ovstage`, Google Benchmark) run twice in
//! one session, once on the published library beside it and once on ours
//! copied beside it as `libovstage.so`, and the two results side by side.
//! Nothing of the package enters the repository: the binary and its
//! libraries are copied to a temporary directory for each run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const USAGE: &str = "usage: cargo xtask bench-suite --against DIR [--filter REGEX] [--min-time SECONDS] [--report FILE]

Runs DIR/benchmark.ovstage (the published package's bin/) on the published
library and on ours (release build), one after the other, and prints every
case with both times and the ratio reference / ours. --report writes the
table as Markdown.";

/// One case's outcome: time per iteration in nanoseconds, or its error.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Time(f64),
    Error(String),
}

/// Splits one CSV line (fields may be quoted, with `""` for a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    out.push(field);
    out
}

fn nanos(value: f64, unit: &str) -> f64 {
    match unit {
        "s" => value * 1e9,
        "ms" => value * 1e6,
        "us" => value * 1e3,
        _ => value,
    }
}

/// Cases of a Google Benchmark CSV report, in order.
fn parse(csv: &str) -> Vec<(String, Outcome)> {
    let mut lines = csv.lines().skip_while(|l| !l.starts_with("name,"));
    let Some(header) = lines.next() else { return Vec::new() };
    let cols = csv_fields(header);
    let at = |name: &str| cols.iter().position(|c| c == name);
    let (Some(name), Some(real), Some(unit)) = (at("name"), at("real_time"), at("time_unit")) else {
        return Vec::new();
    };
    let (err, msg) = (at("error_occurred"), at("error_message"));
    let mut out = Vec::new();
    for line in lines {
        let f = csv_fields(line);
        let Some(case) = f.get(name) else { continue };
        let failed = err.and_then(|i| f.get(i)).is_some_and(|v| v == "true");
        let outcome = if failed {
            Outcome::Error(msg.and_then(|i| f.get(i)).cloned().unwrap_or_default())
        } else {
            match (f.get(real).and_then(|v| v.parse::<f64>().ok()), f.get(unit)) {
                (Some(v), Some(u)) => Outcome::Time(nanos(v, u)),
                _ => continue,
            }
        };
        out.push((case.clone(), outcome));
    }
    out
}

fn show(o: Option<&Outcome>) -> String {
    match o {
        None => "-".into(),
        Some(Outcome::Error(m)) => format!("error: {m}"),
        Some(Outcome::Time(ns)) if *ns >= 1e6 => format!("{:.2} ms", ns / 1e6),
        Some(Outcome::Time(ns)) if *ns >= 1e3 => format!("{:.2} µs", ns / 1e3),
        Some(Outcome::Time(ns)) => format!("{ns:.0} ns"),
    }
}

/// Copies the files under `from` (its plugins included) to `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Runs the binary from a copy of `dir` where `libovstage.so` is `lib`.
fn run_suite(dir: &Path, lib: Option<&Path>, args: &[String]) -> Result<String, String> {
    let work = std::env::temp_dir().join(format!("ovstage-suite-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    copy_tree(dir, &work)?;
    if let Some(lib) = lib {
        for name in ["libovstage.so", "libovstage-dynamic.so"] {
            std::fs::copy(lib, work.join(name)).map_err(|e| format!("{}: {e}", lib.display()))?;
        }
    }
    let out = Command::new(work.join("benchmark.ovstage"))
        .args(args)
        .arg("--benchmark_format=csv")
        .current_dir(&work)
        .env("LD_LIBRARY_PATH", &work)
        .output()
        .map_err(|e| format!("benchmark.ovstage: {e}"))?;
    let _ = std::fs::remove_dir_all(&work);
    if out.stdout.is_empty() {
        return Err(format!("benchmark.ovstage printed nothing: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `cargo xtask bench-suite [...]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let (mut dir, mut report, mut pass) = (None::<PathBuf>, None::<PathBuf>, Vec::new());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--against" => dir = Some(PathBuf::from(it.next().ok_or(USAGE)?)),
            "--filter" => pass.push(format!("--benchmark_filter={}", it.next().ok_or(USAGE)?)),
            "--min-time" => pass.push(format!("--benchmark_min_time={}s", it.next().ok_or(USAGE)?)),
            "--report" => report = Some(PathBuf::from(it.next().ok_or(USAGE)?)),
            _ => return Err(USAGE.into()),
        }
    }
    let dir = dir.ok_or(USAGE)?;
    if !dir.join("benchmark.ovstage").exists() {
        return Err(format!("--against: {} has no benchmark.ovstage", dir.display()));
    }
    let mut cargo = crate::cargo();
    cargo.args(["build", "--release", "-p", "ovstage-ffi"]);
    if !cargo.status().map_err(|e| e.to_string())?.success() {
        return Err("building the library failed".into());
    }
    let ours_lib = crate::root().join("target/release/libovstage.so");
    eprintln!("running the published suite on the published library...");
    let theirs = parse(&run_suite(&dir, None, &pass)?);
    eprintln!("running the published suite on ours...");
    let ours: BTreeMap<String, Outcome> = parse(&run_suite(&dir, Some(&ours_lib), &pass)?).into_iter().collect();
    let mut table = String::from("| case | ours | published | published / ours |\n|---|---:|---:|---:|\n");
    let (mut faster, mut slower, mut errors) = (0, 0, 0);
    for (case, reference) in &theirs {
        let mine = ours.get(case);
        let ratio = match (mine, reference) {
            (Some(Outcome::Time(o)), Outcome::Time(r)) if *o > 0.0 => {
                if r >= o {
                    faster += 1
                } else {
                    slower += 1
                }
                format!("{:.2}×", r / o)
            }
            _ => "-".into(),
        };
        // A case that errors on both (the GPU cases without a GPU) is no
        // difference; one that errors on ours only is a conformance bug.
        if matches!(mine, Some(Outcome::Error(_)) | None) && matches!(reference, Outcome::Time(_)) {
            errors += 1;
        }
        table.push_str(&format!("| {case} | {} | {} | {ratio} |\n", show(mine), show(Some(reference))));
    }
    let summary = format!(
        "{} cases: ours faster or equal in {faster}, slower in {slower}; {errors} fail on ours and not on the published library.\n",
        theirs.len()
    );
    print!("{table}\n{summary}");
    if let Some(path) = report {
        std::fs::write(&path, format!("{table}\n{summary}")).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_reports_parse_with_quotes_errors_and_units() {
        let csv = "noise\nname,iterations,real_time,cpu_time,time_unit,error_occurred,error_message\n\
                   \"BM_A/1/min_time:0.050\",10,1.5,1.4,us,,\n\
                   \"BM_B/x,y\",,,,,true,\"CUDA device is unavailable\"\n\
                   \"BM_C\",3,2,2,ms,,\n";
        let got = parse(csv);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], ("BM_A/1/min_time:0.050".into(), Outcome::Time(1500.0)));
        assert_eq!(got[1], ("BM_B/x,y".into(), Outcome::Error("CUDA device is unavailable".into())));
        assert_eq!(got[2].1, Outcome::Time(2e6));
        assert_eq!(show(Some(&Outcome::Time(1500.0))), "1.50 µs");
    }
}
