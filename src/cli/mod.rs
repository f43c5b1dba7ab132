//! Command-line arguments and their validation. Bad input is rejected here,
//! before anything touches the kernel: `measure.rs` the options every
//! measuring command shares, turned into the live configuration;
//! `commands.rs` each subcommand's own; `format.rs` what `record` and
//! `report` write; `values.rs` the parsers of option values.

mod commands;
mod format;
mod measure;
pub mod otlp;
mod values;

use clap::{Args, Parser, Subcommand};

pub use commands::*;
pub use format::*;
pub use measure::*;
pub use otlp::OtlpArgs;
pub use values::*;

#[derive(Debug, Parser)]
#[command(
    name = "netto",
    version,
    about = "How much CPU the Linux kernel network stack costs, measured exactly with eBPF",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Without a subcommand netto runs `top`, and takes its options.
    #[command(flatten)]
    pub top: TopArgs,
}

impl Cli {
    /// The subcommand to run: `top` when none was named.
    pub fn into_command(self) -> Command {
        self.command.unwrap_or(Command::Top(self.top))
    }
}

/// libbpf's log, for the commands that load BPF programs (and only
/// those: `report` or a replay loads none, so offers no `-v`). Flattened
/// beside [`MeasureArgs`], not into it: clap leaves the group of a struct
/// with a flattened field empty, and `--replay` conflicts with that group.
#[derive(Debug, Args)]
#[group(skip)]
pub struct LogArgs {
    /// Print libbpf's own log (verifier output on load failures).
    #[arg(short, long)]
    pub verbose: bool,
}

impl Command {
    /// Whether to print libbpf's log.
    pub fn libbpf_log(&self) -> bool {
        match self {
            Command::Stat(args) => args.log.verbose,
            Command::Record(args) => args.log.verbose,
            Command::Top(args) => args.source.log.verbose,
            Command::Serve(args) => args.source.log.verbose,
            Command::Check(args) => args.log.verbose,
            Command::Sketch(args) => args.log.verbose,
            Command::Report(_)
            | Command::Completions(_)
            | Command::Man(_)
            | Command::DemoTraffic(_)
            | Command::ServeHttp(_)
            | Command::DocsReference(_) => false,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the CPU time of the kernel's network entry points every interval.
    Stat(StatArgs),
    /// Report what this kernel allows and which backend netto would use.
    Check(CheckArgs),
    /// Sample where the network time goes, then write a flame graph,
    /// folded stacks, a pprof profile or a JSON recording.
    Record(RecordArgs),
    /// Render a recording again, or the difference of two.
    Report(ReportArgs),
    /// The interactive view (the default): events, history, breakdown,
    /// live or replayed.
    Top(TopArgs),
    /// Serve a live web view, a JSON API and Prometheus metrics.
    Serve(ServeArgs),
    /// Attach an XDP NitroSketch to an interface and show its heaviest
    /// flows and what the sketch costs, every interval.
    Sketch(SketchArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print a manual page (roff): netto(1), or netto-COMMAND(1) for a command.
    Man(ManArgs),
    /// The demo traffic's child process (started by `--demo`).
    #[command(name = "demo-traffic", hide = true)]
    DemoTraffic(DemoTrafficArgs),
    /// `serve`'s HTTP server process (started by `serve`).
    #[command(name = "serve-http", hide = true)]
    ServeHttp(ServeHttpArgs),
    /// Write the reference pages generated from the code (metrics, command
    /// line, JSON schemas) into a directory: for netto's own docs.
    #[command(name = "docs-reference", hide = true)]
    DocsReference(DocsReferenceArgs),
}

/// Parses the command line of a netto binary. Help and version print and
/// exit 0; bad arguments print `PROGRAM: error: message` (the form of
/// every error netto prints), then clap's tip or the subcommands there
/// are, each on a line of its own, and exit 2.
pub fn parse_or_exit_code<T: Parser>(program: &str) -> Result<T, std::process::ExitCode> {
    T::try_parse().map_err(|e| {
        if e.use_stderr() {
            let mut lines = usage_error_lines::<T>(&e).into_iter();
            eprintln!("{program}: error: {}", lines.next().unwrap_or_default());
            for line in lines {
                eprintln!("  {line}");
            }
            std::process::ExitCode::from(2)
        } else {
            let _ = e.print();
            std::process::ExitCode::SUCCESS
        }
    })
}

/// clap's message, without its usage section: the error first, then its
/// tips and possible values, a line each; for a command that does not
/// exist, the commands that do.
pub fn usage_error_lines<T: clap::CommandFactory>(e: &clap::Error) -> Vec<String> {
    use clap::error::ErrorKind;
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return vec!["missing subcommand or arguments: see --help".to_owned()];
    }
    let rendered = e.render().to_string();
    let mut lines: Vec<String> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if let Some(first) = lines.first_mut() {
        *first = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    }
    if e.kind() == ErrorKind::InvalidSubcommand {
        let commands: Vec<String> = T::command()
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_owned())
            .collect();
        lines.push(format!("commands: {}", commands.join(", ")));
    }
    lines
}

#[cfg(test)]
mod tests;
