//! docs/src/reference/cli.md: every command, its arguments and options,
//! their defaults, values and help, from the clap definitions that parse
//! the command line (hidden commands and options left out, as `--help`
//! leaves them out). Each option is written as clap writes it in `--help`
//! (`--demo[=<WHEN>]`, `--diff <BEFORE> <AFTER>`).

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command, CommandFactory};

use crate::cli::Cli;

pub fn page() -> String {
    // Built, as for parsing: only then does clap write an argument's syntax.
    let mut netto = Cli::command().disable_help_subcommand(true);
    netto.build();
    let mut page = format!("# Command line\n\n{}\n", super::GENERATED);
    command(&mut page, &netto, &[]);
    page
}

/// The arguments of the command run when none is named: the root takes
/// them as that command's, and the page lists them there only.
const DEFAULT_COMMAND: &str = "top";

fn command(page: &mut String, cmd: &Command, parents: &[&str]) {
    let path: Vec<&str> = parents
        .iter()
        .copied()
        .chain(std::iter::once(cmd.get_name()))
        .collect();
    let name = path.join(" ");
    let _ = write!(page, "\n## `{name}`\n\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = write!(page, "{about}\n\n");
    }
    let usage = cmd.clone().bin_name(&name).render_usage().to_string();
    let usage: Vec<&str> = usage
        .trim_start_matches("Usage:")
        .lines()
        .map(str::trim)
        .collect();
    let _ = write!(page, "```text\n{}\n```\n", usage.join("\n"));

    let commands: Vec<&Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    if !commands.is_empty() {
        page.push_str("\nCommands:\n\n");
        for sub in &commands {
            let anchor = format!("{}-{}", path.join("-"), sub.get_name());
            let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
            let _ = writeln!(page, "- [`{}`](#{anchor}): {about}", sub.get_name());
        }
    }

    let default = commands.iter().find(|c| c.get_name() == DEFAULT_COMMAND);
    // `--help` and `--version`, which clap gives every command, are listed
    // once, with the root's options.
    let generated = |a: &Arg| {
        matches!(
            a.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        )
    };
    let (globals, own): (Vec<&Arg>, Vec<&Arg>) = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && (parents.is_empty() || !generated(a)))
        .partition(|a| a.is_global_set());
    let own: Vec<&Arg> = match default {
        // The default command's own arguments are listed under it.
        Some(default) => {
            let _ = write!(
                page,
                "\nWithout a command, `{name}` runs [`{DEFAULT_COMMAND}`](#{}-{DEFAULT_COMMAND}) \
                 and takes its options.\n",
                path.join("-")
            );
            own.into_iter()
                .filter(|a| {
                    generated(a) || default.get_arguments().all(|d| d.get_id() != a.get_id())
                })
                .collect()
        }
        None => own,
    };
    let (positionals, options): (Vec<&Arg>, Vec<&Arg>) = own
        .into_iter()
        .chain(if parents.is_empty() {
            globals
        } else {
            Vec::new()
        })
        .partition(|a| a.is_positional());
    for (title, args) in [("Arguments", positionals), ("Options", options)] {
        if !args.is_empty() {
            let _ = write!(page, "\n{title}:\n\n");
            for arg in args {
                argument(page, arg, parents.is_empty());
            }
        }
    }
    for sub in commands {
        command(page, sub, &path);
    }
}

/// One argument as a list item: its syntax, help, default and values.
fn argument(page: &mut String, arg: &Arg, at_root: bool) {
    // clap writes the long form only, where there is one.
    let mut syntax = match (arg.get_short(), arg.get_long()) {
        (Some(short), Some(_)) => format!("-{short}, {arg}"),
        _ => arg.to_string(),
    };
    if let Some(aliases) = arg.get_visible_aliases() {
        for alias in aliases {
            let _ = write!(syntax, "`, `--{alias}");
        }
    }
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string().trim_end_matches('.').replace('\n', "\n  "))
        .unwrap_or_default();
    let _ = write!(page, "- `{syntax}`: {help}.");
    if arg.is_global_set() && at_root {
        page.push_str(" Taken by every command.");
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    // A flag's default (`false`) says nothing.
    if !defaults.is_empty() && !arg.is_hide_default_value_set() && arg.get_action().takes_values() {
        let _ = write!(page, " Default: {}.", defaults.join(", "));
    }
    let values: Vec<_> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    let described = values.iter().any(|v| v.get_help().is_some());
    if !values.is_empty() && arg.get_action().takes_values() {
        if described {
            page.push_str(" Values:\n");
            for value in &values {
                let _ = write!(page, "  - `{}`", value.get_name());
                if let Some(help) = value.get_help() {
                    let _ = write!(page, ": {help}");
                }
                page.push('\n');
            }
            return;
        }
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        let _ = write!(page, " Values: {}.", names.join(", "));
    }
    page.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_written_as_clap_writes_them() {
        let page = page();
        for syntax in [
            "`--demo[=<WHEN>]`",
            "`--diff <BEFORE> <AFTER>`",
            "`--group <NAME>`, `--cgroup`",
            "`-v, --verbose`",
            "`[RECORDING]`",
        ] {
            assert!(page.contains(syntax), "{syntax} missing from\n{page}");
        }
    }

    #[test]
    fn hidden_commands_stay_out_and_the_default_command_is_listed_once() {
        let page = page();
        for hidden in ["demo-traffic", "serve-http", "docs-reference"] {
            assert!(!page.contains(&format!("## `netto {hidden}`")), "{hidden}");
            assert!(!page.contains(&format!("[`{hidden}`]")), "{hidden}");
        }
        // `--flame-seconds` is top's alone: under top, not again under netto.
        assert_eq!(page.matches("`--flame-seconds <SECONDS>`").count(), 1);
        assert_eq!(page.matches("`-h, --help`").count(), 1);
        assert!(page.contains("\n## `netto top`\n"));
    }
}
