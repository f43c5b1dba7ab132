//! `netto completions SHELL` and `netto man`: shell completions and the
//! manual page, generated from the same clap definitions that parse the
//! command line, so they cannot drift from it; and `netto docs-reference
//! DIR` (hidden), which writes the reference pages generated from the code.

use std::fs;
use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::CommandFactory;
use netto::cli::{Cli, CompletionsArgs, DocsReferenceArgs, ManArgs};
use netto::output_file::write_atomically;

pub fn completions(args: &CompletionsArgs) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "netto", &mut script);
    print(&script)
}

/// netto(1), or netto-COMMAND(1): the pages netto(1)'s SUBCOMMANDS
/// section names.
pub fn man(args: &ManArgs) -> Result<ExitCode> {
    let netto = Cli::command();
    let command = match &args.command {
        None => netto,
        Some(name) => netto
            .get_subcommands()
            .find(|c| c.get_name() == name && !c.is_hide_set())
            .with_context(|| format!("no command named {name:?}; see netto --help"))?
            .clone()
            .name(format!("netto-{name}")),
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut page)
        .context("rendering the manual page")?;
    print(&page)
}

/// Every generated reference page into `args.dir`, each whole or not at
/// all; the directory must exist (a typo makes no new tree).
pub fn reference(args: &DocsReferenceArgs) -> Result<ExitCode> {
    if !args.dir.is_dir() {
        bail!("{} is not a directory", args.dir.display());
    }
    for page in netto::docs::pages() {
        let path = args.dir.join(page.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        write_atomically(&path, true, |out| out.write_all(page.text.as_bytes()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print(bytes: &[u8]) -> Result<ExitCode> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
