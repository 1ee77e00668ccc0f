//! The `jouleclaw` command-line tool (being built).

fn main() {}
