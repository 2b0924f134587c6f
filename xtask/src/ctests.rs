//! Tests of the C headers under `crates/ovstage-ffi/include/`, with the
//! system's gcc and g++:
//!
//! - every header compiles on its own, and all of them together, each
//!   included twice (include guards), as C11 and as C++17, with warnings
//!   as errors and `-pedantic`;
//! - every enum constant of the `abi` modules' `values` has its Rust value
//!   and every C enum the size of its Rust carrier (static assertions);
//! - every inline wrapper of `ovstage_api_utils.h`, `path_dictionary_utils.h`
//!   and the placement extension has the signature of its table slot, with
//!   the instance in place of the context (C++ static assertions);
//! - a C program prints the size, alignment and field offsets of the types
//!   listed in `crates/ovstage-abi/tests/layout.txt` and must print that
//!   file back;
//! - `xtask/ctests/runtime.c` (the inline helpers, and a write/read round
//!   trip through the library) is linked against `target/debug/libovstage.so`
//!   and run, with `xtask/ctests/fake_cuda.c` as its CUDA driver;
//! - `xtask/ctests/cuda_staging.c` (writes from CUDA tensors, `cuda_sync`
//!   capture) against `xtask/ctests/fake_cuda_host.c`, a driver whose device
//!   memory is host memory;
//! - `xtask/ctests/cuda_placement.c` (the `ovstage.placement` extension:
//!   placed reads in device memory, availability events) against the same
//!   fake driver.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::codegen::{self, AbiModule};

const LAYOUT: &str = "crates/ovstage-abi/tests/layout.txt";

const C_FLAGS: &[&str] = &["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"];
const CXX_FLAGS: &[&str] = &["-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic"];

/// A family of inline wrappers checked against its function table.
struct Wrappers {
    /// The table struct.
    table: &'static str,
    /// The `abi` module declaring it.
    module: &'static str,
    /// The slots' first parameter type.
    context: &'static str,
    /// The wrappers' first parameter type.
    instance: &'static str,
    /// Wrapper name = prefix + slot name.
    prefix: &'static str,
    /// Fields that are not slots.
    skip: &'static [&'static str],
}

const WRAPPERS: &[Wrappers] = &[
    Wrappers {
        table: "ovstage_vtable_t",
        module: "api",
        context: "ovstage_context_t",
        instance: "ovstage_instance_t",
        prefix: "ovstage_",
        skip: &[],
    },
    Wrappers {
        table: "path_dictionary_vtable_t",
        module: "path_dictionary_vtable",
        context: "path_dictionary_context_t",
        instance: "path_dictionary_instance_t",
        prefix: "path_dictionary_",
        skip: &[],
    },
    Wrappers {
        table: "ovstage_placement_extension_v1_t",
        module: "placement",
        context: "ovstage_context_t",
        instance: "ovstage_instance_t",
        prefix: "ovstage_",
        skip: &["header"],
    },
];

fn work_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| crate::root().join("target"), PathBuf::from);
    let target = if target.is_absolute() { target } else { crate::root().join(target) };
    target.join("header-tests")
}

fn target_debug() -> PathBuf {
    work_dir().parent().expect("under target/").join("debug")
}

/// Runs a compiler or program; the error carries its output.
fn run(what: &str, cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: could not start {:?}: {e}", cmd.get_program()))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() { Ok(text) } else { Err(format!("{what} failed ({}):\n{text}", out.status)) }
}

fn compile(compiler: &str, flags: &[&str], source: &Path, extra: &[&str], output: &Path) -> Result<(), String> {
    let include = codegen::include_dir();
    let mut cmd = Command::new(compiler);
    cmd.args(flags).arg("-I").arg(&include).arg(source).args(extra).arg("-o").arg(output);
    run(&format!("{compiler} {}", source.display()), &mut cmd).map(drop)
}

fn headers() -> Result<Vec<String>, String> {
    let include = codegen::include_dir();
    let mut out = Vec::new();
    collect(&include, &include, &mut out)?;
    if out.is_empty() {
        return Err(format!("no headers under {}; run `cargo xtask codegen`", include.display()));
    }
    Ok(out)
}

fn collect(dir: &Path, base: &Path, out: &mut Vec<String>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, base, out)?;
        } else if p.extension().is_some_and(|e| e == "h") {
            out.push(p.strip_prefix(base).expect("under base").to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// `#include` lines for every header, each twice.
fn include_all(headers: &[String]) -> String {
    let mut s = String::new();
    for _ in 0..2 {
        for h in headers {
            let _ = writeln!(s, "#include <{h}>");
        }
    }
    s
}

/// Static assertions of every enum constant and enum size (C11).
fn enum_asserts(modules: &[AbiModule]) -> String {
    let mut s = String::from("\n/* Enum values and sizes, from the Rust definitions. */\n");
    for m in modules {
        for e in &m.enums {
            for (variant, value) in &e.variants {
                let _ = writeln!(s, "_Static_assert({variant} == {value}, \"{}::{variant} is {value}\");", e.name);
            }
            if let Some((_, repr)) = m.carriers.iter().find(|(n, _)| *n == e.name) {
                let bytes = match repr.as_str() {
                    "u8" | "i8" => 1,
                    "u16" | "i16" => 2,
                    "u32" | "i32" => 4,
                    _ => 8,
                };
                let _ = writeln!(
                    s,
                    "_Static_assert(sizeof({0}) == {bytes}, \"{0} has the size of its carrier ({repr})\");",
                    e.name
                );
            }
        }
    }
    s
}

/// C++ static assertions that each wrapper matches its slot.
fn wrapper_asserts(modules: &[AbiModule]) -> Result<String, String> {
    let mut s = String::from(
        "\n#include <type_traits>\n\n/* A wrapper takes the slot's parameters with the instance in place of the \
         context. */\ntemplate <class Slot, class Context, class Instance, class Wrapper>\nstruct wraps : \
         std::false_type {};\ntemplate <class R, class Context, class Instance, class... A>\nstruct wraps<R \
         (*)(Context*, A...), Context, Instance, R (*)(Instance*, A...)> : std::true_type {};\n\n",
    );
    for Wrappers { table, module, context, instance, prefix, skip } in WRAPPERS {
        let m = modules.iter().find(|m| m.name == *module).ok_or_else(|| format!("no abi module {module}"))?;
        let st = m.structs.iter().find(|s| s.name == *table).ok_or_else(|| format!("no struct {table}"))?;
        for (field, is_fn) in &st.fields {
            if skip.contains(&field.as_str()) {
                continue;
            }
            if !is_fn {
                return Err(format!("{table}::{field} is not a function pointer"));
            }
            let _ = writeln!(
                s,
                "static_assert(wraps<decltype({table}::{field}), {context}, {instance}, \
                 decltype(&{prefix}{field})>::value, \"{prefix}{field} wraps {table}::{field}\");"
            );
        }
    }
    Ok(s)
}

/// `Name size=N align=M` / `  field @offset` entries of layout.txt.
fn layout_entries(text: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut entries: Vec<(String, Vec<String>)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("  ") {
            let field = rest.split_whitespace().next().unwrap_or_default();
            let entry = entries.last_mut().ok_or_else(|| format!("{LAYOUT}:{}: field before any type", n + 1))?;
            entry.1.push(field.to_owned());
        } else {
            let name = line.split_whitespace().next().unwrap_or_default();
            entries.push((name.to_owned(), Vec::new()));
        }
    }
    Ok(entries)
}

/// The C spelling of a layout entry's type: its typedef when the headers
/// declare one, else its tag.
fn c_type(name: &str, header_text: &str) -> String {
    let typedefd = [format!("struct {name} {name};"), format!("union {name} {name};"), format!("}} {name};")]
        .iter()
        .any(|p| header_text.contains(p.as_str()));
    if typedefd { name.to_owned() } else { format!("struct {name}") }
}

fn layout_program(entries: &[(String, Vec<String>)], headers: &[String]) -> Result<String, String> {
    let include = codegen::include_dir();
    let mut all = String::new();
    for h in headers {
        all.push_str(&fs::read_to_string(include.join(h)).map_err(|e| format!("{h}: {e}"))?);
    }
    let mut s = include_all(headers);
    s.push_str("#include <stdio.h>\n#include <stddef.h>\n\nint main(void)\n{\n");
    for (name, fields) in entries {
        let ty = c_type(name, &all);
        let _ = writeln!(s, "    printf(\"{name} size=%zu align=%zu\\n\", sizeof({ty}), (size_t)_Alignof({ty}));");
        for f in fields {
            let _ = writeln!(s, "    printf(\"  {f} @%zu\\n\", offsetof({ty}, {f}));");
        }
    }
    s.push_str("    return 0;\n}\n");
    Ok(s)
}

/// A line diff (longest common subsequence), `-` expected, `+` got.
fn diff(expected: &[&str], got: &[&str]) -> String {
    let (n, m) = (expected.len(), got.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if expected[i] == got[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    let mut context: Option<&str> = None;
    while i < n || j < m {
        if i < n && j < m && expected[i] == got[j] {
            if !expected[i].starts_with(' ') {
                context = Some(expected[i]);
            }
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            if let Some(c) = context.take() {
                let _ = writeln!(out, "  {c}");
            }
            let _ = writeln!(out, "- {}", expected[i]);
            i += 1;
        } else {
            if let Some(c) = context.take() {
                let _ = writeln!(out, "  {c}");
            }
            let _ = writeln!(out, "+ {}", got[j]);
            j += 1;
        }
    }
    out
}

fn layout_check(dir: &Path, headers: &[String]) -> Result<(), String> {
    let text = fs::read_to_string(crate::root().join(LAYOUT)).map_err(|e| format!("{LAYOUT}: {e}"))?;
    let entries = layout_entries(&text)?;
    let source = dir.join("layout.c");
    fs::write(&source, layout_program(&entries, headers)?).map_err(|e| e.to_string())?;
    let exe = dir.join("layout");
    compile("gcc", C_FLAGS, &source, &[], &exe)?;
    let got = run("layout program", &mut Command::new(&exe))?;
    let expected: Vec<&str> =
        text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).map(str::trim_end).collect();
    let got: Vec<&str> = got.lines().collect();
    if expected != got {
        return Err(format!(
            "the headers' layouts differ from {LAYOUT} (- the file, + the headers):\n{}",
            diff(&expected, &got)
        ));
    }
    println!("    layouts of {} types match {LAYOUT}", entries.len());
    Ok(())
}

fn runtime_check(dir: &Path) -> Result<(), String> {
    let mut build = crate::cargo();
    build.args(["build", "--quiet", "-p", "ovstage-ffi"]);
    run("cargo build -p ovstage-ffi", &mut build)?;
    let lib_dir = target_debug();
    if !lib_dir.join("libovstage.so").exists() {
        return Err(format!("no libovstage.so in {}", lib_dir.display()));
    }
    let source = crate::root().join("xtask/ctests/runtime.c");
    let exe = dir.join("runtime");
    let lib = lib_dir.to_string_lossy().into_owned();
    let rpath = format!("-Wl,-rpath,{lib}");
    compile("gcc", C_FLAGS, &source, &["-L", &lib, "-lovstage", &rpath, "-lm"], &exe)?;
    let fake = dir.join("libfake_cuda.so.1");
    let fake_source = crate::root().join("xtask/ctests/fake_cuda.c");
    compile("gcc", C_FLAGS, &fake_source, &["-shared", "-fPIC"], &fake)?;
    let out = run("runtime.c", Command::new(&exe).env("OVSTAGE_LIBCUDA", &fake))?;
    for line in out.lines() {
        println!("    {line}");
    }
    // Writes from CUDA tensors end to end, against a driver whose device
    // memory is host memory.
    let host_fake = dir.join("libfake_cuda_host.so.1");
    compile("gcc", C_FLAGS, &crate::root().join("xtask/ctests/fake_cuda_host.c"), &["-shared", "-fPIC"], &host_fake)?;
    let staging = dir.join("cuda_staging");
    let source = crate::root().join("xtask/ctests/cuda_staging.c");
    compile("gcc", C_FLAGS, &source, &["-L", &lib, "-lovstage", &rpath], &staging)?;
    let out = run("cuda_staging.c", Command::new(&staging).env("OVSTAGE_LIBCUDA", &host_fake))?;
    for line in out.lines() {
        println!("    {line}");
    }
    // The placement extension, against the same driver.
    let placement = dir.join("cuda_placement");
    let source = crate::root().join("xtask/ctests/cuda_placement.c");
    compile("gcc", C_FLAGS, &source, &["-L", &lib, "-lovstage", &rpath], &placement)?;
    let out = run("cuda_placement.c", Command::new(&placement).env("OVSTAGE_LIBCUDA", &host_fake))?;
    for line in out.lines() {
        println!("    {line}");
    }
    Ok(())
}

/// Every check of the module doc; builds `ovstage-ffi` for the last one.
pub(crate) fn header_tests() -> Result<(), String> {
    let modules = codegen::read_abi()?;
    let headers = headers()?;
    let dir = work_dir();
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;

    // Each header alone: self-contained.
    for (i, h) in headers.iter().enumerate() {
        for (compiler, flags, ext) in [("gcc", C_FLAGS, "c"), ("g++", CXX_FLAGS, "cpp")] {
            let source = dir.join(format!("alone_{i}.{ext}"));
            fs::write(&source, format!("#include <{h}>\n#include <{h}>\ntypedef int translation_unit_is_not_empty;\n"))
                .map_err(|e| e.to_string())?;
            compile(compiler, flags, &source, &["-c"], &dir.join(format!("alone_{i}_{ext}.o")))?;
        }
    }
    println!("    {} headers compile alone as C11 and C++17", headers.len());

    // All together, with the static checks and uses of the macros.
    let main = "\nint main(void)\n{\n    ovx_string_t name = literal_to_ovx_string(\"example\");\n    \
                ovstage_placement_t placement = OVSTAGE_PLACEMENT_INIT;\n    return (int)name.length - 7 + \
                (int)placement.stream;\n}\n";
    let c = format!("{}{}{main}", include_all(&headers), enum_asserts(&modules));
    let cxx = format!("{}{}{main}", include_all(&headers), wrapper_asserts(&modules)?);
    let c_source = dir.join("all.c");
    let cxx_source = dir.join("all.cpp");
    fs::write(&c_source, c).map_err(|e| e.to_string())?;
    fs::write(&cxx_source, cxx).map_err(|e| e.to_string())?;
    compile("gcc", C_FLAGS, &c_source, &["-c"], &dir.join("all_c.o"))?;
    compile("g++", CXX_FLAGS, &cxx_source, &["-c"], &dir.join("all_cpp.o"))?;
    let constants: usize = modules.iter().flat_map(|m| &m.enums).map(|e| e.variants.len()).sum();
    let wrapped: BTreeSet<&str> = WRAPPERS.iter().map(|w| w.table).collect();
    println!(
        "    all headers together compile as C11 and C++17; {constants} enum constants match; the wrappers of {} \
         match their slots",
        wrapped.into_iter().collect::<Vec<_>>().join(", ")
    );

    layout_check(&dir, &headers)?;
    runtime_check(&dir)
}
