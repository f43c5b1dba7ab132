//! Writing a recording in the format the user asked for; shared by `record`
//! and `report` so both produce the same files, and check them the same
//! way before any work.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{bail, Result};
use netto::breakdown::ProgramNames;
use netto::cli::Format;
use netto::frontends::flame::otlp::{self, Measured};
use netto::frontends::flame::svg;
use netto::frontends::flame::{
    any_estimated, diff, flame_stacks, folded, pprof, FlameStack, Labels, Scope, Weight,
};
use netto::model::Recording;
use netto::output_file::{write_atomically, Destination};
use prost::Message;

/// Where `record` or `report` writes, and as what; made by [`Output::check`].
pub struct Output {
    destination: Destination,
    format: Format,
    force: bool,
}

impl Output {
    /// Everything about `-o`, `--format` and `--force` that can be refused
    /// before the work (minutes of recording) starts: the format, a binary
    /// format for a terminal, and what [`Destination::check`] refuses.
    pub fn check(destination: &Destination, format: Option<Format>, force: bool) -> Result<Output> {
        let format = Format::for_output(destination, format)?;
        let binary = match format {
            Format::Pprof => Some("a pprof profile"),
            Format::Otlp => Some("an OTLP export"),
            Format::Svg | Format::Folded | Format::Json => None,
        };
        if let Some(what) = binary {
            if *destination == Destination::Stdout && std::io::stdout().is_terminal() {
                bail!(
                    "{what} is binary: redirect standard output to a file or a pipe, \
                     or use -o FILE"
                );
            }
        }
        destination.check(force)?;
        Ok(Output {
            destination: destination.clone(),
            format,
            force,
        })
    }

    /// What `netto: wrote ...` names.
    pub fn destination(&self) -> &Destination {
        &self.destination
    }
}

/// Writes `recording` as the output's format, the graphs of its stacks in
/// `scope` (checked by the caller; refused for json, which is the whole
/// recording).
pub fn write_recording(
    recording: &Recording,
    output: &Output,
    weight: Weight,
    scope: Scope<'_>,
) -> Result<()> {
    if output.format == Format::Json && scope != Scope::All {
        bail!("a recording is written whole: --group and --group-frames draw svg, folded or pprof");
    }
    let labels = Labels::for_recording(recording).scoped(scope);
    let stacks = || flame_stacks(&recording.snapshots, weight, scope);
    Ok(output
        .destination
        .write(output.force, |out| match output.format {
            Format::Json => {
                serde_json::to_writer(&mut *out, recording)?;
                out.write_all(b"\n")
            }
            Format::Folded => folded::write_folded(&stacks(), out),
            Format::Svg => {
                let programs = ProgramNames::of(&recording.snapshots);
                Ok(svg::write_categorized_svg(
                    &stacks(),
                    &labels,
                    weight,
                    &programs,
                    out,
                )?)
            }
            Format::Pprof => Ok(pprof::write_pprof(
                &recording.snapshots,
                &labels,
                weight,
                scope,
                out,
            )?),
            Format::Otlp => {
                let profile = pprof::profile(&recording.snapshots, &labels, weight, scope);
                let measured = Measured {
                    host: recording.header.host.clone(),
                    kernel: recording.header.kernel.clone(),
                };
                out.write_all(&otlp::request(&profile, &measured).encode_to_vec())
            }
        })?)
}

/// A flame graph of `stacks` at `path` (`top`'s `s`), coloured as every
/// netto flame graph is. The name is new each time, so nothing is ever
/// replaced.
pub fn write_flame_graph(
    stacks: &[FlameStack],
    labels: &Labels,
    weight: Weight,
    programs: &ProgramNames,
    path: &Path,
) -> Result<()> {
    Ok(write_atomically(path, false, |out| {
        Ok(svg::write_categorized_svg(
            stacks, labels, weight, programs, out,
        )?)
    })?)
}

pub fn write_diff(
    before: &Recording,
    after: &Recording,
    output: &Output,
    weight: Weight,
    scope: Scope<'_>,
) -> Result<()> {
    let labels = Labels {
        title: format!(
            "Differential: {} -> {}",
            before.header.host, after.header.host
        ),
        subtitle: "red: more after, blue: less (normalised to the after run)".to_owned(),
        estimated: any_estimated(before.snapshots.iter().chain(&after.snapshots)),
    };
    if matches!(output.format, Format::Json | Format::Pprof | Format::Otlp) {
        bail!(
            "a differential report is written as svg or folded, not {}",
            output.format.name()
        );
    }
    let labels = labels.scoped(scope);
    let b = flame_stacks(&before.snapshots, weight, scope);
    let a = flame_stacks(&after.snapshots, weight, scope);
    Ok(output.destination.write(output.force, |out| {
        if output.format == Format::Folded {
            diff::write_diff_folded(&b, &a, true, out)
        } else {
            Ok(diff::write_diff_svg(&b, &a, true, &labels, weight, out)?)
        }
    })?)
}
