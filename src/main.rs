//! The `netto` command: argument dispatch only.

mod commands;

use std::process::ExitCode;

use clap::Parser;
use netto::cli::{usage_error_line, Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("netto: {}", usage_error_line(&e));
            return ExitCode::from(2);
        }
    };
    if !cli.verbose {
        libbpf_rs::set_print(None);
    }
    let result = match cli.command {
        Command::Stat(args) => commands::stat::run(&args),
        Command::Check(args) => commands::check::run(&args),
        Command::Record(args) => commands::record::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::DemoLoad => netto::demo::run_until_stdin_closes().map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("netto: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
