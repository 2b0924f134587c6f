//! The C side of `cargo xtask test`: builds the C examples against the
//! shared and the static library, runs them and compares their output with
//! `expected-output.txt`, runs them under valgrind, loads the library the
//! way a binding does (`tests/c/dlopen_binding.c`), and checks the exported
//! symbols against the contract's list.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Native libraries a program linking `libovstage.a` also needs (what
/// `rustc --print native-static-libs` reports for the staticlib).
pub(crate) const STATIC_DEPS: &[&str] = &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

/// Each example and the argument lists it runs with; every run must print
/// the example's expected output.
const EXAMPLES: &[(&str, &[&[&str]])] =
    &[("minimal", &[&[]]), ("write-flavors", &[&[]]), ("producer-consumer", &[&[], &["--threads"]])];

fn run_output(cmd: &mut Command, what: &str) -> Result<Output, String> {
    cmd.output().map_err(|e| format!("{what}: could not start {:?}: {e}", cmd.get_program()))
}

fn checked(cmd: &mut Command, what: &str) -> Result<Output, String> {
    let out = run_output(cmd, what)?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out)
}

/// Builds the library (debug profile) and returns its directory, with
/// `libovstage-dynamic.so` next to `libovstage.so`.
pub(crate) fn build_library() -> Result<PathBuf, String> {
    checked(crate::cargo().args(["build", "-p", "ovstage-ffi"]), "cargo build -p ovstage-ffi")?;
    let dir = crate::root().join("target/debug");
    dynamic_alias(&dir)?;
    Ok(dir)
}

/// Copies `libovstage.so` to `libovstage-dynamic.so`, the name existing
/// loaders and the published Python bindings look for.
pub(crate) fn dynamic_alias(dir: &Path) -> Result<(), String> {
    let from = dir.join("libovstage.so");
    let to = dir.join("libovstage-dynamic.so");
    std::fs::copy(&from, &to).map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
    Ok(())
}

fn gcc(source: &Path, output: &Path, include: &Path) -> Command {
    let mut cmd = Command::new("gcc");
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"])
        .arg("-I")
        .arg(include)
        .arg(source)
        .arg("-o")
        .arg(output);
    cmd
}

/// Compares a run's stdout with the expected text, line by line.
fn compare(what: &str, expected: &str, got: &str) -> Result<(), String> {
    if expected == got {
        return Ok(());
    }
    let mut report = format!("{what}: output differs from the expected output\n");
    let (e, g): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), got.lines().collect());
    for i in 0..e.len().max(g.len()) {
        match (e.get(i), g.get(i)) {
            (Some(a), Some(b)) if a == b => {}
            (a, b) => report.push_str(&format!("  line {}: expected {:?}\n           got      {:?}\n", i + 1, a, b)),
        }
    }
    Err(report)
}

/// Builds, runs and checks every example; then the dlopen test and the
/// symbol list.
pub(crate) fn run() -> Result<(), String> {
    let root = crate::root();
    let lib = build_library()?;
    let include = root.join("crates/ovstage-ffi/include");
    let out = root.join("target/c-examples");
    std::fs::create_dir_all(&out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let valgrind = Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if !valgrind {
        return Err("valgrind is required to check the C examples (apt-get install valgrind)".into());
    }
    for (name, runs) in EXAMPLES {
        let dir = root.join("examples/c").join(name);
        let source = dir.join("main.c");
        let expected_path = dir.join("expected-output.txt");
        let expected =
            std::fs::read_to_string(&expected_path).map_err(|e| format!("reading {}: {e}", expected_path.display()))?;
        let shared = out.join(format!("{name}-shared"));
        let mut cc = gcc(&source, &shared, &include);
        cc.arg(format!("-L{}", lib.display()))
            .arg("-lovstage")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .args(["-lpthread", "-lm"]);
        checked(&mut cc, &format!("{name}: compiling against libovstage.so"))?;
        let statik = out.join(format!("{name}-static"));
        let mut cc = gcc(&source, &statik, &include);
        cc.arg(lib.join("libovstage.a")).args(STATIC_DEPS);
        checked(&mut cc, &format!("{name}: compiling against libovstage.a"))?;
        for args in *runs {
            let label = if args.is_empty() { name.to_string() } else { format!("{name} {}", args.join(" ")) };
            for (kind, binary) in [("shared", &shared), ("static", &statik)] {
                let o = checked(Command::new(binary).args(*args), &format!("{label} ({kind})"))?;
                compare(&format!("{label} ({kind})"), &expected, &String::from_utf8_lossy(&o.stdout))?;
            }
            let mut vg = Command::new("valgrind");
            vg.args([
                "-q",
                "--error-exitcode=99",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
                "--show-leak-kinds=definite",
            ])
            .arg(&shared)
            .args(*args);
            let o = checked(&mut vg, &format!("{label} under valgrind"))?;
            compare(&format!("{label} (valgrind)"), &expected, &String::from_utf8_lossy(&o.stdout))?;
            println!("    {label}: shared, static and valgrind runs match the expected output");
        }
    }
    dlopen_test(&root, &lib, &include, &out)?;
    symbols(&root, &lib)
}

/// Loads the library by path (both names) and drives it through resolved
/// exports and vtables only.
fn dlopen_test(root: &Path, lib: &Path, include: &Path, out: &Path) -> Result<(), String> {
    let binary = out.join("dlopen_binding");
    let mut cc = gcc(&root.join("tests/c/dlopen_binding.c"), &binary, include);
    cc.arg("-ldl");
    checked(&mut cc, "compiling tests/c/dlopen_binding.c")?;
    for name in ["libovstage.so", "libovstage-dynamic.so"] {
        let o = checked(Command::new(&binary).arg(lib.join(name)), &format!("dlopen_binding {name}"))?;
        compare(&format!("dlopen_binding {name}"), "ok\n", &String::from_utf8_lossy(&o.stdout))?;
    }
    println!("    dlopen_binding: both library names load and work through the vtables");
    Ok(())
}

/// Every export of the contract is exported by `libovstage.so`.
fn symbols(root: &Path, lib: &Path) -> Result<(), String> {
    let list = std::fs::read_to_string(root.join("crates/ovstage-ffi/tests/symbols.txt"))
        .map_err(|e| format!("reading the contract's symbol list: {e}"))?;
    let o = checked(Command::new("nm").args(["-D", "--defined-only"]).arg(lib.join("libovstage.so")), "nm -D")?;
    let text = String::from_utf8_lossy(&o.stdout);
    let ours: std::collections::BTreeSet<&str> = text.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    let missing: Vec<&str> =
        list.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).filter(|s| !ours.contains(s)).collect();
    if !missing.is_empty() {
        return Err(format!("libovstage.so does not export: {}", missing.join(", ")));
    }
    println!("    symbols: every contract export is present ({} exported)", ours.len());
    Ok(())
}
