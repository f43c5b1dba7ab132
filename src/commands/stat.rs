//! `netto stat`.

use std::io::{self, IsTerminal};
use std::process::ExitCode;

use anyhow::Result;
use netto::cli::StatArgs;
use netto::frontends::stat;

use super::startup;
use super::stdout::still_read;

/// Prints every interval, the one in progress at a stop (Ctrl-C) too: it is
/// measured time like the others, and its snapshot says how long it ran.
pub fn run(args: &StatArgs) -> Result<ExitCode> {
    let config = args.measure.live_config(None, args.duration, true);
    let source = startup::live(config, &args.measure)?;
    let mut stdout = io::stdout().lock();
    let terminal = stdout.is_terminal();
    let mut table = stat::Table::default();
    let mut brief = stat::Brief::new(terminal, args.measure.interval);
    for snapshot in source.snapshots.iter() {
        startup::announce_budget(&snapshot);
        let written = if args.json {
            stat::write_json(&mut stdout, &snapshot)
        } else if args.brief {
            brief.write(&mut stdout, &snapshot)
        } else {
            table.fit_to(terminal.then(terminal_width).flatten());
            table.write(&mut stdout, &snapshot)
        };
        if !still_read(written)? {
            break;
        }
    }
    source.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// The terminal's width in columns, if it tells.
fn terminal_width() -> Option<usize> {
    let (columns, _) = ratatui::crossterm::terminal::size().ok()?;
    Some(usize::from(columns))
}
