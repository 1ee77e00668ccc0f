//! Criterion benches (being built).

fn main() {}
