//! The `netto` command: argument dispatch only.

mod commands;

use std::process::ExitCode;

use netto::cli::{parse_or_exit_code, Cli, Command};

fn main() -> ExitCode {
    let cli: Cli = match parse_or_exit_code("netto") {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let command = cli.into_command();
    if !command.libbpf_log() {
        libbpf_rs::set_print(None);
    }
    if let Err(e) = commands::startup::raise_file_limit() {
        eprintln!("netto: warning: {e:#}");
    }
    let result = match command {
        Command::Stat(args) => commands::stat::run(&args),
        Command::Check(args) => commands::check::run(&args),
        Command::Record(args) => commands::record::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::Top(args) => commands::top::run(&args),
        Command::Serve(args) => commands::serve::run(&args),
        Command::Sketch(args) => commands::sketch::run(&args),
        Command::Completions(args) => commands::docs::completions(&args),
        Command::Man(args) => commands::docs::man(&args),
        Command::DocsReference(args) => commands::docs::reference(&args),
        Command::DemoTraffic(args) => {
            netto::workload::demo::run_until_stdin_closes(args.rate).map(|()| ExitCode::SUCCESS)
        }
        Command::ServeHttp(args) => commands::serve::run_http(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("netto: error: {e:#}");
            // A malformed recording is bad input, like a bad argument; so
            // is a group the recording does not have.
            let bad_input = e
                .downcast_ref::<netto::recording::RecordingError>()
                .is_some_and(|e| e.is_bad_input())
                || e.downcast_ref::<netto::frontends::flame::ScopeError>()
                    .is_some()
                || e.downcast_ref::<netto::cli::otlp::OtlpOptionError>()
                    .is_some();
            ExitCode::from(if bad_input { 2 } else { 1 })
        }
    }
}
