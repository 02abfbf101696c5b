//! The `memcarve` command-line tool: a thin shell over `memcarve-trace` and `memcarve`. Each subcommand lives in
//! `commands/`.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// memcarve: GPU memory sub-allocation. Replay your allocation traces to see what memcarve would commit.
#[derive(Debug, Parser)]
#[command(name = "memcarve", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Replay traces (PyTorch snapshots or memcarve traces) on memcarve's allocator and compare with PyTorch.
    Replay(commands::replay::ReplayArgs),
    /// Replay one trace and write a self-contained HTML report: memory over time, the memory map at the peak,
    /// fragmentation, and the comparison with PyTorch.
    Report(commands::report::ReportArgs),
    /// List the backends compiled in and the devices each finds (or why none).
    Info(commands::info::InfoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay(args) => commands::replay::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::Info(args) => commands::info::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("memcarve: {error:#}");
            ExitCode::FAILURE
        }
    }
}
