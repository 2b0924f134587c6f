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

/// One example built against both libraries, with the runs it makes.
pub(crate) struct BuiltExample {
    /// The example's directory name.
    pub(crate) name: &'static str,
    /// The argument lists it runs with.
    pub(crate) runs: &'static [&'static [&'static str]],
    /// What every run must print.
    pub(crate) expected: String,
    /// The program linked against `libovstage.so` (found through its rpath).
    pub(crate) shared: PathBuf,
    /// The program linked against `libovstage.a`.
    pub(crate) statik: PathBuf,
}

impl BuiltExample {
    /// The label of one run.
    pub(crate) fn label(&self, args: &[&str]) -> String {
        if args.is_empty() { self.name.to_string() } else { format!("{} {}", self.name, args.join(" ")) }
    }
}

/// Builds every example against the libraries in `lib` into `out`, with
/// `cflags` added to each compile and link.
pub(crate) fn build_examples(
    lib: &Path,
    include: &Path,
    out: &Path,
    cflags: &[&str],
) -> Result<Vec<BuiltExample>, String> {
    let root = crate::root();
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let mut built = Vec::new();
    for (name, runs) in EXAMPLES {
        let dir = root.join("examples/c").join(name);
        let source = dir.join("main.c");
        let expected_path = dir.join("expected-output.txt");
        let expected =
            std::fs::read_to_string(&expected_path).map_err(|e| format!("reading {}: {e}", expected_path.display()))?;
        let shared = out.join(format!("{name}-shared"));
        let mut cc = gcc(&source, &shared, include);
        cc.args(cflags)
            .arg(format!("-L{}", lib.display()))
            .arg("-lovstage")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .args(["-lpthread", "-lm"]);
        checked(&mut cc, &format!("{name}: compiling against libovstage.so"))?;
        let statik = out.join(format!("{name}-static"));
        let mut cc = gcc(&source, &statik, include);
        cc.args(cflags).arg(lib.join("libovstage.a")).args(STATIC_DEPS);
        checked(&mut cc, &format!("{name}: compiling against libovstage.a"))?;
        built.push(BuiltExample { name, runs, expected, shared, statik });
    }
    Ok(built)
}

/// Runs `cmd`, which must succeed and print `expected`; returns its output.
pub(crate) fn run_expecting(cmd: &mut Command, label: &str, expected: &str) -> Result<Output, String> {
    let o = checked(cmd, label)?;
    compare(label, expected, &String::from_utf8_lossy(&o.stdout))?;
    Ok(o)
}

/// Builds, runs and checks every example; then the dlopen test and the
/// symbol list.
pub(crate) fn run() -> Result<(), String> {
    let root = crate::root();
    let lib = build_library()?;
    let include = root.join("crates/ovstage-ffi/include");
    let out = root.join("target/c-examples");
    let valgrind = Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success());
    if !valgrind {
        return Err("valgrind is required to check the C examples (apt-get install valgrind)".into());
    }
    for example in build_examples(&lib, &include, &out, &[])? {
        for args in example.runs {
            let label = example.label(args);
            for (kind, binary) in [("shared", &example.shared), ("static", &example.statik)] {
                run_expecting(Command::new(binary).args(*args), &format!("{label} ({kind})"), &example.expected)?;
            }
            let mut vg = Command::new("valgrind");
            vg.args([
                "-q",
                "--error-exitcode=99",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
                "--show-leak-kinds=definite",
            ])
            .arg(&example.shared)
            .args(*args);
            run_expecting(&mut vg, &format!("{label} (valgrind)"), &example.expected)?;
            println!("    {label}: shared, static and valgrind runs match the expected output");
        }
    }
    dlopen_test(&root, &lib, &include, &out, &[])?;
    symbols(&root, &lib)
}

/// Loads the library by path (both names) and drives it through resolved
/// exports and vtables only; `cflags` are added to the compile.
pub(crate) fn dlopen_test(root: &Path, lib: &Path, include: &Path, out: &Path, cflags: &[&str]) -> Result<(), String> {
    let binary = out.join("dlopen_binding");
    let mut cc = gcc(&root.join("tests/c/dlopen_binding.c"), &binary, include);
    cc.args(cflags).arg("-ldl");
    checked(&mut cc, "compiling tests/c/dlopen_binding.c")?;
    for name in ["libovstage.so", "libovstage-dynamic.so"] {
        let label = format!("dlopen_binding {name}");
        run_expecting(Command::new(&binary).arg(lib.join(name)), &label, "ok\n")?;
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
    cuda_free(&lib.join("libovstage.so"))
}

/// A shared object that carries the CUDA backend but does not link the
/// driver: no `NEEDED libcuda`, no exported `cu*` symbol (the driver's entry
/// points are hidden trampolines, opened at run time).
pub(crate) fn cuda_free(so: &Path) -> Result<(), String> {
    let name = so.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let o = checked(Command::new("readelf").arg("-d").arg(so), "readelf -d")?;
    let dynamic = String::from_utf8_lossy(&o.stdout);
    if let Some(line) = dynamic.lines().find(|l| l.contains("NEEDED") && l.contains("libcuda")) {
        return Err(format!("{name} links the CUDA driver: {}", line.trim()));
    }
    let o = checked(Command::new("nm").args(["-D", "--defined-only"]).arg(so), "nm -D")?;
    let exported = String::from_utf8_lossy(&o.stdout);
    let cu: Vec<&str> = exported
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.strip_prefix("cu").is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase())))
        .collect();
    if !cu.is_empty() {
        return Err(format!("{name} exports CUDA driver symbols: {}", cu.join(", ")));
    }
    let o = checked(Command::new("nm").arg(so), "nm")?;
    let local = String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.ends_with(" cuInit")).count();
    if local != 1 {
        return Err(format!("{name} does not carry the CUDA driver trampolines (cuInit found {local} times)"));
    }
    println!("    {name}: carries the CUDA backend, no NEEDED libcuda, no exported cu* symbol");
    Ok(())
}
