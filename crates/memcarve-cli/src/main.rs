//! The `memcarve` command-line tool. Trace import and replay arrive with their own issue; for now the binary
//! only reports its version and what it does not do yet, so that it never pretends to replay anything.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--version") | Some("-V") => {
            println!("memcarve {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "memcarve {}: no subcommands yet (replay and report are not implemented); \
                 try `cargo run --release -p memcarve-core --example virtual_block`",
                env!("CARGO_PKG_VERSION")
            );
            ExitCode::from(2)
        }
    }
}
