//! Project automation. `cargo xtask test` runs the whole test suite.
fn main() {}
