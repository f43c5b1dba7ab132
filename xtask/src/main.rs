//! netto's development tasks, run as `cargo xtask <task>` (the alias is in
//! .cargo/config.toml). They are no part of the product; today there is one:
//! the kernel matrix, which boots stock kernels under qemu and runs netto's
//! kernel-dependent tests inside them.

mod vm;
mod vm_matrix;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "netto's development tasks"
)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// The kernel matrix: netto's kernel-dependent tests inside stock
    /// Debian kernels under qemu (root; downloads each kernel once).
    VmMatrix(vm_matrix::Options),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.task {
        Task::VmMatrix(options) => vm_matrix::run(options),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
