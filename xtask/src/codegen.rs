//! `cargo xtask codegen`: the C headers of `crates/ovstage-ffi`.
//!
//! Each module of `crates/ovstage-abi/src/` (the contract's types) becomes
//! one header, named in the module's first doc line, together with the
//! exported functions of the same-named module of
//! `crates/ovstage-ffi/src/exports/`, if there is one. The items are read with
//! `syn` and cbindgen (as a library) is run once per header over both trees,
//! told to export exactly that module's items and to leave out every other
//! module's: what a header uses from another module comes from its
//! `#include`s. Hand-written C lives in `crates/ovstage-ffi/cheaders/`,
//! which mirrors `include/`:
//!
//! - `<header>.pre.h` is spliced into the generated `<header>` right after
//!   its `#include`s, `<header>.post.h` right before its closing `#endif`;
//! - any other file is a whole hand-written header, copied with a banner.
//!
//! `cargo xtask codegen --check` regenerates in memory and fails when
//! `include/` differs (a stale, missing or extra file).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use cbindgen::{Builder, Config, DocumentationStyle, Language, LineEndingStyle, SortKey, Style};

/// The ffi crate, relative to the workspace root.
const FFI: &str = "crates/ovstage-ffi";
/// The crate of the contract's types, relative to the workspace root.
const ABI: &str = "crates/ovstage-abi";

/// How a generated header is laid out.
struct HeaderSpec {
    /// The `abi` module (file stem).
    module: &'static str,
    /// Path under `include/`.
    path: &'static str,
    /// Include guard macro.
    guard: &'static str,
    /// `#include <...>` lines, in order.
    sys_includes: &'static [&'static str],
    /// `#include "..."` lines (after the system ones), in order.
    includes: &'static [&'static str],
    /// Structs forward-declared (`typedef struct X X;`) by a header this one
    /// includes. When non-empty the header is generated in tag style (`struct
    /// X { ... };`), and the module's other structs and unions get forward
    /// typedefs of their own right after the includes.
    forward_declared: &'static [&'static str],
}

/// Every generated header, in dependency order.
const HEADERS: &[HeaderSpec] = &[
    HeaderSpec {
        module: "dlpack",
        path: "ovx/dlpack/dlpack.h",
        guard: "DLPACK_DLPACK_H_",
        sys_includes: &["stddef.h", "stdint.h"],
        includes: &[],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "ovx_string",
        path: "ovx/string_types.h",
        guard: "OVX_STRING_TYPES_H",
        sys_includes: &["stddef.h", "stdint.h"],
        includes: &[],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "ovx_types",
        path: "ovx/types.h",
        guard: "OVX_TYPES_H",
        sys_includes: &["stdbool.h", "stddef.h", "stdint.h", "ovx/string_types.h"],
        includes: &[],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "path_dictionary",
        path: "ovx/path_dictionary/path_dictionary_types.h",
        guard: "PATH_DICTIONARY_TYPES_H",
        sys_includes: &["stdint.h"],
        includes: &["../types.h"],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "path_dictionary_vtable",
        path: "ovx/path_dictionary/path_dictionary_vtable.h",
        guard: "PATH_DICTIONARY_VTABLE_H",
        sys_includes: &[],
        includes: &["path_dictionary_types.h"],
        forward_declared: &["path_dictionary_vtable_t"],
    },
    HeaderSpec {
        module: "api_types",
        path: "ovstage/ovstage_api/ovstage_api_types.h",
        guard: "OVSTAGE_API_TYPES_H",
        sys_includes: &[
            "stdint.h",
            "stddef.h",
            "stdbool.h",
            "dlpack/dlpack.h",
            "ovx/path_dictionary/path_dictionary_types.h",
        ],
        includes: &[],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "api",
        path: "ovstage/ovstage_api/ovstage_api.h",
        guard: "OVSTAGE_API_H",
        sys_includes: &[],
        includes: &["ovstage_api_types.h"],
        forward_declared: &["ovstage_vtable_t"],
    },
    HeaderSpec {
        module: "placement",
        path: "ovstage/ovstage_api/experimental/ovstage_placement_extension.h",
        guard: "OVSTAGE_EXPERIMENTAL_PLACEMENT_EXTENSION_H",
        sys_includes: &[],
        includes: &["../ovstage_api.h"],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "stage_types",
        path: "ovstage/ovstage_types.h",
        guard: "OVSTAGE_TYPES_H",
        sys_includes: &[],
        includes: &["ovstage_api/ovstage_api_types.h"],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "config",
        path: "ovstage/ovstage_config.h",
        guard: "OVSTAGE_CONFIG_H",
        sys_includes: &["string.h", "ovx/config_tokens.h"],
        includes: &["ovstage_types.h"],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "stage",
        path: "ovstage/ovstage.h",
        guard: "OVSTAGE_H",
        sys_includes: &[],
        includes: &["ovstage_api/ovstage_api.h", "ovstage_config.h", "ovstage_types.h"],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "instancing",
        path: "ovstage/ovstage_instancing.h",
        guard: "OVSTAGE_INSTANCING_H",
        sys_includes: &[],
        includes: &["ovstage_api/ovstage_api.h"],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "population_predicate",
        path: "ovstage/ovstage_population_predicate.h",
        guard: "OVSTAGE_POPULATION_PREDICATE_H",
        sys_includes: &[],
        includes: &["ovstage_api/ovstage_api.h"],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "population",
        path: "ovstage/ovstage_population.h",
        guard: "OVSTAGE_POPULATION_H",
        sys_includes: &["math.h"],
        includes: &["ovstage_api/ovstage_api.h", "ovstage_population_predicate.h"],
        forward_declared: &[],
    },
    HeaderSpec {
        module: "population_export",
        path: "ovstage/ovstage_population_export.h",
        guard: "OVSTAGE_POPULATION_EXPORT_H",
        sys_includes: &[
            "ovstage/ovstage.h",
            "ovstage/ovstage_population.h",
            "ovstage/ovstage_population_predicate.h",
            "stddef.h",
            "stdint.h",
        ],
        includes: &[],
        forward_declared: &[],
    },
];

/// Rust names spelled differently in C. (`CBool` and the other items of
/// the abi crate's `lib.rs` itself are left out of every header.)
const RENAMES: &[(&str, &str)] = &[("CBool", "bool")];

/// The source folder of the contract's types (one file per header).
fn abi_dir() -> PathBuf {
    crate::root().join(ABI).join("src")
}

/// The source folder of the exported functions (one file per header that
/// declares functions).
fn exports_dir() -> PathBuf {
    crate::root().join(FFI).join("src/exports")
}

/// The hand-written C folder.
fn cheaders_dir() -> PathBuf {
    crate::root().join(FFI).join("cheaders")
}

/// The generated header root (committed).
pub(crate) fn include_dir() -> PathBuf {
    crate::root().join(FFI).join("include")
}

/// A `#[repr(C)]` enum of a `values` module: its C name and constants.
pub(crate) struct CEnum {
    pub(crate) name: String,
    pub(crate) variants: Vec<(String, i64)>,
}

/// A struct's name and fields, with whether each field is a function
/// pointer (an `Option<extern "C" fn>`).
pub(crate) struct CStruct {
    pub(crate) name: String,
    pub(crate) fields: Vec<(String, bool)>,
}

/// A struct or union, with the types its fields hold by value (not
/// through a pointer).
pub(crate) struct Record {
    pub(crate) name: String,
    /// `struct` or `union`.
    pub(crate) kind: &'static str,
    pub(crate) by_value: Vec<String>,
}

/// What codegen reads from one `abi` module.
pub(crate) struct AbiModule {
    /// File stem.
    pub(crate) name: String,
    /// Header path from the first doc line.
    pub(crate) header: String,
    /// Every item cbindgen may declare, in source order (structs, unions,
    /// enums, type aliases, constants, statics, functions).
    pub(crate) items: Vec<String>,
    /// Structs (not unions), in source order.
    pub(crate) structs: Vec<CStruct>,
    /// Structs and unions.
    pub(crate) records: Vec<Record>,
    /// The C enums of its `values` submodule.
    pub(crate) enums: Vec<CEnum>,
    /// Exported function names.
    pub(crate) functions: Vec<String>,
    /// Enum carriers (`c_enum_carrier!`): name and Rust integer type.
    pub(crate) carriers: Vec<(String, String)>,
}

impl AbiModule {
    /// A module with nothing collected yet.
    fn new(name: &str, header: String) -> AbiModule {
        AbiModule {
            name: name.to_owned(),
            header,
            items: Vec::new(),
            structs: Vec::new(),
            records: Vec::new(),
            enums: Vec::new(),
            functions: Vec::new(),
            carriers: Vec::new(),
        }
    }
}

fn doc_lines(attrs: &[syn::Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn ignored(attrs: &[syn::Attribute]) -> bool {
    doc_lines(attrs).iter().any(|l| l.contains("cbindgen:ignore"))
}

fn int_value(expr: &syn::Expr) -> Option<i64> {
    match expr {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse().ok(),
        syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => int_value(expr).map(|v| -v),
        syn::Expr::Paren(p) => int_value(&p.expr),
        syn::Expr::Group(g) => int_value(&g.expr),
        _ => None,
    }
}

fn is_fn_pointer(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::BareFn(_) => true,
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|seg| {
            seg.ident == "Option"
                && matches!(&seg.arguments, syn::PathArguments::AngleBracketed(args)
                    if args.args.iter().any(|a| matches!(a, syn::GenericArgument::Type(syn::Type::BareFn(_)))))
        }),
        _ => false,
    }
}

/// The named types `ty` holds by value: pointers, references and function
/// pointers (also as `Option<fn>`) hold nothing.
fn by_value(ty: &syn::Type, out: &mut Vec<String>) {
    match ty {
        syn::Type::Array(a) => by_value(&a.elem, out),
        syn::Type::Paren(p) => by_value(&p.elem, out),
        syn::Type::Group(g) => by_value(&g.elem, out),
        syn::Type::Path(p) if !is_fn_pointer(ty) => {
            if let Some(seg) = p.path.segments.last() {
                out.push(seg.ident.to_string());
            }
        }
        _ => {}
    }
}

fn record(name: &str, kind: &'static str, fields: &syn::Fields) -> Record {
    let mut held = Vec::new();
    for f in fields {
        by_value(&f.ty, &mut held);
    }
    Record { name: name.to_owned(), kind, by_value: held }
}

fn collect_items(items: &[syn::Item], in_values: bool, out: &mut AbiModule) -> Result<(), String> {
    for item in items {
        let (name, attrs) = match item {
            syn::Item::Struct(s) => (s.ident.to_string(), &s.attrs),
            syn::Item::Union(u) => (u.ident.to_string(), &u.attrs),
            syn::Item::Enum(e) => (e.ident.to_string(), &e.attrs),
            syn::Item::Type(t) => (t.ident.to_string(), &t.attrs),
            syn::Item::Const(c) => (c.ident.to_string(), &c.attrs),
            syn::Item::Static(s) => (s.ident.to_string(), &s.attrs),
            syn::Item::Fn(f) => (f.sig.ident.to_string(), &f.attrs),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    if !ignored(&m.attrs) {
                        collect_items(inner, m.ident == "values", out)?;
                    }
                } else {
                    return Err(format!("abi/{}.rs: out-of-line module `{}` is not supported", out.name, m.ident));
                }
                continue;
            }
            syn::Item::Macro(m) if m.mac.path.segments.last().is_some_and(|s| s.ident == "c_enum_carrier") => {
                // `$(#[meta])* name: repr`: the last three tokens.
                let tokens: Vec<String> = m.mac.tokens.clone().into_iter().map(|t| t.to_string()).collect();
                if let [.., name, colon, repr] = tokens.as_slice()
                    && colon == ":"
                {
                    out.carriers.push((name.clone(), repr.clone()));
                }
                continue;
            }
            // Other macro invocations, uses, impls: nothing to export.
            _ => continue,
        };
        if ignored(attrs) {
            continue;
        }
        match item {
            syn::Item::Struct(s) => {
                let fields = s
                    .fields
                    .iter()
                    .filter_map(|f| f.ident.as_ref().map(|i| (i.to_string(), is_fn_pointer(&f.ty))))
                    .collect();
                out.structs.push(CStruct { name: name.clone(), fields });
                out.records.push(record(&name, "struct", &s.fields));
            }
            syn::Item::Union(u) => out.records.push(record(&name, "union", &syn::Fields::Named(u.fields.clone()))),
            syn::Item::Enum(e) if in_values => {
                let mut next = 0i64;
                let mut variants = Vec::new();
                for v in &e.variants {
                    let value = match &v.discriminant {
                        Some((_, expr)) => int_value(expr).ok_or_else(|| {
                            format!(
                                "abi/{}.rs: {}::{}: discriminant is not an integer literal",
                                out.name, name, v.ident
                            )
                        })?,
                        None => next,
                    };
                    variants.push((v.ident.to_string(), value));
                    next = value + 1;
                }
                out.enums.push(CEnum { name: name.clone(), variants });
            }
            syn::Item::Fn(_) => out.functions.push(name.clone()),
            _ => {}
        }
        out.items.push(name);
    }
    Ok(())
}

/// The module names declared (`pub mod x;`) by the abi crate's `lib.rs`, in
/// order, and the names of the items `lib.rs` itself declares.
fn abi_module_names() -> Result<(Vec<String>, Vec<String>), String> {
    let path = abi_dir().join("lib.rs");
    let file = parse_file(&path)?;
    let mut modules = Vec::new();
    let mut own = AbiModule::new("mod", String::new());
    for item in &file.items {
        if let syn::Item::Mod(m) = item
            && m.content.is_none()
        {
            modules.push(m.ident.to_string());
        }
    }
    let rest: Vec<syn::Item> = file.items.into_iter().filter(|i| !matches!(i, syn::Item::Mod(_))).collect();
    collect_items(&rest, false, &mut own)?;
    Ok((modules, own.items))
}

fn parse_file(path: &Path) -> Result<syn::File, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    syn::parse_file(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads one module: its types from the abi crate and, when the ffi crate
/// has a same-named exports module, its exported functions.
fn read_module(name: &str) -> Result<AbiModule, String> {
    let path = abi_dir().join(format!("{name}.rs"));
    let file = parse_file(&path)?;
    let first = doc_lines(&file.attrs).into_iter().next().unwrap_or_default();
    let header = first
        .split('`')
        .nth(1)
        .filter(|h| h.ends_with(".h"))
        .ok_or_else(|| format!("abi/{name}.rs: the first doc line must name the header in backquotes"))?
        .to_owned();
    let mut module = AbiModule::new(name, header);
    collect_items(&file.items, false, &mut module)?;
    if !module.functions.is_empty() {
        return Err(format!("abi/{name}.rs defines functions; exported functions belong in {FFI}/src/exports"));
    }
    let exports = exports_dir().join(format!("{name}.rs"));
    if exports.exists() {
        let file = parse_file(&exports)?;
        let mut functions = AbiModule::new(name, String::new());
        collect_items(&file.items, false, &mut functions)?;
        if functions.items.len() != functions.functions.len() {
            return Err(format!("exports/{name}.rs declares items other than exported functions"));
        }
        module.items.extend(functions.items);
        module.functions = functions.functions;
    }
    Ok(module)
}

/// Every `abi` module (those of the abi crate's `lib.rs`, in its order), checked against
/// the header table.
pub(crate) fn read_abi() -> Result<Vec<AbiModule>, String> {
    let (names, _) = abi_module_names()?;
    let modules = names.iter().map(|n| read_module(n)).collect::<Result<Vec<_>, _>>()?;
    for m in &modules {
        let spec = HEADERS
            .iter()
            .find(|h| h.module == m.name)
            .ok_or_else(|| format!("abi/{}.rs has no entry in xtask's header table", m.name))?;
        if spec.path != m.header {
            return Err(format!(
                "abi/{}.rs says it is `{}` but xtask's header table says `{}`",
                m.name, m.header, spec.path
            ));
        }
    }
    for spec in HEADERS {
        if !modules.iter().any(|m| m.name == spec.module) {
            return Err(format!(
                "xtask's header table names abi/{}.rs, which the abi crate's lib.rs does not declare",
                spec.module
            ));
        }
    }
    let mut seen = BTreeMap::new();
    for m in &modules {
        for item in &m.items {
            if let Some(other) = seen.insert(item.clone(), m.name.clone()) {
                return Err(format!("`{item}` is declared in both abi/{other}.rs and abi/{}.rs", m.name));
            }
        }
    }
    Ok(modules)
}

const SPDX: &str = "SPDX-License-Identifier: Apache-2.0";

fn generated_banner(path: &str, module: &str, fragments: &[String]) -> String {
    let mut text = format!("/*\n * {path}\n *\n * Generated by `cargo xtask codegen` from {ABI}/src/{module}.rs");
    if exports_dir().join(format!("{module}.rs")).exists() {
        text.push_str(&format!("\n * and {FFI}/src/exports/{module}.rs"));
    }
    for f in fragments {
        text.push_str(&format!("\n * and {FFI}/cheaders/{f}"));
    }
    text.push_str(&format!(".\n * Do not edit: change those and regenerate.\n *\n * {SPDX}\n */"));
    text
}

fn handwritten_banner(path: &str) -> String {
    format!(
        "/*\n * {path}\n *\n * Hand-written: kept in {FFI}/cheaders/{path} and copied here by\n * `cargo xtask \
         codegen`. Do not edit this copy.\n *\n * {SPDX}\n */\n"
    )
}

fn config_for(spec: &HeaderSpec, module: &AbiModule, all: &[AbiModule], mod_rs_items: &[String]) -> Config {
    let mut config = Config {
        language: Language::C,
        cpp_compat: true,
        usize_is_size_t: true,
        no_includes: true,
        documentation: true,
        documentation_style: DocumentationStyle::Doxy,
        sort_by: SortKey::None,
        line_endings: LineEndingStyle::LF,
        line_length: 100,
        tab_width: 4,
        style: if spec.forward_declared.is_empty() { Style::Both } else { Style::Tag },
        header: Some(generated_banner(
            spec.path,
            spec.module,
            &["pre", "post"]
                .iter()
                .map(|w| format!("{}.{w}.h", spec.path))
                .filter(|f| cheaders_dir().join(f).exists())
                .collect::<Vec<_>>(),
        )),
        include_guard: Some(spec.guard.to_owned()),
        sys_includes: spec.sys_includes.iter().map(|s| (*s).to_owned()).collect(),
        includes: spec.includes.iter().map(|s| (*s).to_owned()).collect(),
        ..Config::default()
    };
    let mut after = String::new();
    if let Some(pre) = fragment(spec.path, "pre") {
        after.push('\n');
        after.push_str(pre.trim_end());
        after.push('\n');
    }
    if !spec.forward_declared.is_empty() {
        let own: Vec<_> = module.records.iter().filter(|r| !spec.forward_declared.contains(&r.name.as_str())).collect();
        if !own.is_empty() {
            after.push('\n');
            for r in own {
                after.push_str(&format!("typedef {0} {1} {1};\n", r.kind, r.name));
            }
        }
    }
    if !after.is_empty() {
        config.after_includes = Some(after.trim_end().to_owned());
    }
    config.export.include = export_order(module);
    config.export.exclude = all
        .iter()
        .filter(|m| m.name != module.name)
        .flat_map(|m| m.items.iter().cloned())
        .chain(mod_rs_items.iter().cloned())
        .collect();
    config.export.rename = RENAMES.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect();
    config
}

/// The module's items in the order cbindgen should start from: records
/// that no other record of the module holds by value first, then the
/// records they hold, then everything else in source order. cbindgen emits
/// what an item depends on before it, but cannot tell a pointer from a
/// value, so a walk started at a record reached through a pointer from its
/// own container would emit the container first.
fn export_order(module: &AbiModule) -> Vec<String> {
    let names: BTreeSet<&str> = module.records.iter().map(|r| r.name.as_str()).collect();
    let mut holders: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &module.records {
        for held in &r.by_value {
            if names.contains(held.as_str()) && *held != r.name {
                *holders.entry(held.as_str()).or_default() += 1;
            }
        }
    }
    // Kahn's algorithm over "holds by value" edges, in source order.
    let mut order: Vec<String> = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    while done.len() < module.records.len() {
        let next = module
            .records
            .iter()
            .find(|r| !done.contains(r.name.as_str()) && holders.get(r.name.as_str()).copied().unwrap_or(0) == 0)
            // A by-value cycle cannot compile anyway; fall back to source order.
            .or_else(|| module.records.iter().find(|r| !done.contains(r.name.as_str())))
            .expect("records left");
        done.insert(next.name.as_str());
        for held in &next.by_value {
            if let Some(n) = holders.get_mut(held.as_str()) {
                *n = n.saturating_sub(1);
            }
        }
        order.push(next.name.clone());
    }
    order.extend(module.items.iter().filter(|i| !names.contains(i.as_str())).cloned());
    order
}

/// A hand-written fragment of a generated header, if there is one.
fn fragment(path: &str, which: &str) -> Option<String> {
    fs::read_to_string(cheaders_dir().join(format!("{path}.{which}.h"))).ok()
}

fn generate_header(
    spec: &HeaderSpec,
    module: &AbiModule,
    all: &[AbiModule],
    mod_rs_items: &[String],
) -> Result<(String, String), String> {
    let config = config_for(spec, module, all, mod_rs_items);
    let bindings = Builder::new()
        .with_config(config)
        .with_src(abi_dir().join("lib.rs"))
        .with_src(exports_dir().join("mod.rs"))
        .generate()
        .map_err(|e| format!("{}: cbindgen: {e}", spec.path))?;
    let mut bytes = Vec::new();
    bindings.write(&mut bytes);
    let raw = String::from_utf8(bytes).map_err(|e| format!("{}: {e}", spec.path))?;
    let mut text = raw.clone();
    if let Some(post) = fragment(spec.path, "post") {
        let end = format!("#endif  /* {} */", spec.guard);
        let at = text.rfind(&end).ok_or_else(|| format!("{}: no closing `{end}` in cbindgen's output", spec.path))?;
        text.insert_str(at, &format!("{}\n\n", post.trim_end()));
    }
    Ok((tidy(&text), raw))
}

/// `text` without its `/* */` and `//` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                rest = rest[b + 2..].find("*/").map_or("", |e| &rest[b + 2 + e + 2..]);
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |e| &rest[l + e..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// Whether `text` has `name(` with no identifier character before it.
fn mentions_call(text: &str, name: &str) -> bool {
    let pattern = format!("{name}(");
    text.match_indices(&pattern)
        .any(|(at, _)| !text[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// Trailing spaces off, runs of blank lines collapsed, one final newline.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) -> Result<(), String> {
    if !dir.exists() {
        return Ok(());
    }
    let mut entries = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, base, out)?;
        } else {
            let rel = path.strip_prefix(base).expect("walked under base");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(())
}

/// Every header under `include/`, by relative path, as codegen makes it.
pub(crate) fn generate_all() -> Result<BTreeMap<String, String>, String> {
    let modules = read_abi()?;
    let (_, mod_rs_items) = abi_module_names()?;
    let mut out = BTreeMap::new();
    let mut raw = BTreeMap::new();
    for spec in HEADERS {
        let module = modules.iter().find(|m| m.name == spec.module).expect("checked by read_abi");
        let (text, generated) = generate_header(spec, module, &modules, &mod_rs_items)?;
        out.insert(spec.path.to_owned(), text);
        raw.insert(spec.module, strip_comments(&generated));
    }
    // Each exported function is declared by its own module's header only.
    for m in &modules {
        for f in &m.functions {
            for (module, text) in &raw {
                if mentions_call(text, f) != (*module == m.name) {
                    return Err(format!(
                        "`{f}` (abi/{}.rs) is {} the header of abi/{module}.rs",
                        m.name,
                        if *module == m.name { "missing from" } else { "also declared in" }
                    ));
                }
            }
        }
    }
    let mut hand = Vec::new();
    walk(&cheaders_dir(), &cheaders_dir(), &mut hand)?;
    for rel in hand {
        if let Some(target) = rel.strip_suffix(".pre.h").or_else(|| rel.strip_suffix(".post.h")) {
            if !HEADERS.iter().any(|h| h.path == target) {
                return Err(format!("cheaders/{rel} is a fragment of `{target}`, which is not a generated header"));
            }
            continue;
        }
        if !rel.ends_with(".h") {
            return Err(format!("cheaders/{rel}: only .h files belong there"));
        }
        if out.contains_key(&rel) {
            return Err(format!("cheaders/{rel} would replace a generated header (use .pre.h / .post.h fragments)"));
        }
        let text = fs::read_to_string(cheaders_dir().join(&rel)).map_err(|e| format!("cheaders/{rel}: {e}"))?;
        out.insert(rel.clone(), tidy(&format!("{}\n{text}", handwritten_banner(&rel))));
    }
    Ok(out)
}

/// `cargo xtask codegen [--check]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => return Err("usage: cargo xtask codegen [--check]".into()),
    };
    crate::cuda_entries::run(&crate::root(), check)?;
    crate::ptx::run(check)?;
    let headers = generate_all()?;
    let include = include_dir();
    let mut present = Vec::new();
    walk(&include, &include, &mut present)?;
    let present: BTreeSet<String> = present.into_iter().collect();

    let mut stale = Vec::new();
    for (rel, text) in &headers {
        match fs::read_to_string(include.join(rel)) {
            Ok(old) if old == *text => {}
            Ok(_) => stale.push(format!("{rel} (differs)")),
            Err(_) => stale.push(format!("{rel} (missing)")),
        }
    }
    let extra: Vec<&String> = present.iter().filter(|p| !headers.contains_key(*p)).collect();
    stale.extend(extra.iter().map(|p| format!("{p} (not generated)")));

    if check {
        if stale.is_empty() {
            println!("codegen: {} headers under {FFI}/include are up to date", headers.len());
            return Ok(());
        }
        return Err(format!("{FFI}/include is out of date; run `cargo xtask codegen`:\n  {}", stale.join("\n  ")));
    }
    for p in &extra {
        fs::remove_file(include.join(p)).map_err(|e| format!("{p}: {e}"))?;
    }
    for (rel, text) in &headers {
        let path = include.join(rel);
        if fs::read_to_string(&path).is_ok_and(|old| old == *text) {
            continue;
        }
        fs::create_dir_all(path.parent().expect("under include/")).map_err(|e| format!("{rel}: {e}"))?;
        fs::write(&path, text).map_err(|e| format!("{rel}: {e}"))?;
    }
    remove_empty_dirs(&include);
    if stale.is_empty() {
        println!("codegen: {} headers under {FFI}/include, none changed", headers.len());
    } else {
        println!("codegen: {} headers under {FFI}/include; updated:\n  {}", headers.len(), stale.join("\n  "));
    }
    Ok(())
}

fn remove_empty_dirs(dir: &Path) {
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                remove_empty_dirs(&p);
                let _ = fs::remove_dir(&p);
            }
        }
    }
}
