//! The worker side: one library in one process, driven over stdin/stdout.
//!
//! Commands, one per line: `setup smoke|full NAME`, `run N`, `extra`,
//! `teardown`, `info`, `quit`. Replies are lines starting with `@@ ` (any
//! other output, from the library for instance, is ignored by the parent):
//! `@@ ready`, `@@ ok NANOS`, `@@ extra k=v ...`, `@@ info TEXT`,
//! `@@ error MESSAGE`.

use std::io::{BufRead, Write};
use std::path::Path;

use crate::api::Library;
use crate::workloads::{Bench, Scale, cases};

fn reply(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "@@ {text}").and_then(|()| out.flush()).map_err(|e| format!("worker: writing a reply: {e}"))
}

/// Serves the library at `path` until `quit` or the end of stdin.
pub(crate) fn serve(path: &Path) -> Result<(), String> {
    // Loaded for the whole life of the worker.
    let lib: &'static Library = Box::leak(Box::new(Library::load(path)?));
    let mut bench: Option<Box<dyn Bench>> = None;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("worker: reading a command: {e}"))?;
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["setup", scale, name] => {
                bench = None;
                let scale = if *scale == "smoke" { Scale::Smoke } else { Scale::Full };
                let case = cases(scale).into_iter().find(|c| c.name == *name);
                match case.map(|c| (c.build)(lib)) {
                    Some(Ok(b)) => {
                        bench = Some(b);
                        reply("ready")?;
                    }
                    Some(Err(e)) => reply(&format!("error {e}"))?,
                    None => reply(&format!("error no workload named {name}"))?,
                }
            }
            ["run", n] => {
                let n: u64 = n.parse().map_err(|e| format!("worker: run {n}: {e}"))?;
                match bench.as_mut().map(|b| b.run(n)) {
                    Some(Ok(d)) => reply(&format!("ok {}", d.as_nanos()))?,
                    Some(Err(e)) => reply(&format!("error {e}"))?,
                    None => reply("error no workload is set up")?,
                }
            }
            ["extra"] => {
                let pairs = bench.as_mut().map(|b| b.extra()).unwrap_or_default();
                let text: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                reply(&format!("extra {}", text.join(" ")))?;
            }
            ["teardown"] => {
                bench = None;
                reply("ok 0")?;
            }
            ["info"] => reply(&format!("info {}", lib.build_string()))?,
            ["quit"] => break,
            _ => reply(&format!("error unknown command {line:?}"))?,
        }
    }
    Ok(())
}
