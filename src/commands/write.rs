//! Writing a recording in the format the user asked for; shared by `record`
//! and `report` so both produce the same files.

use std::path::Path;

use anyhow::{bail, Context, Result};
use netto::cli::Format;
use netto::frontends::flame::svg;
use netto::frontends::flame::{diff, folded, pprof, Labels};
use netto::model::{Recording, StackCount};
use netto::output::write_atomically;

pub fn write_recording(
    recording: &Recording,
    format: Format,
    path: &Path,
    force: bool,
) -> Result<()> {
    let labels = Labels::for_recording(&recording.header);
    let stacks = recording.stacks();
    write_atomically(path, force, |out| match format {
        Format::Json => {
            serde_json::to_writer(&mut *out, recording)?;
            out.write_all(b"\n")
        }
        Format::Folded => folded::write_folded(&stacks, out),
        Format::Svg => Ok(svg::write_categorized_svg(&stacks, &labels, out)?),
        Format::Pprof => Ok(pprof::write_pprof(&recording.snapshots, &labels, out)?),
    })
    .with_context(|| format!("writing {}", path.display()))
}

/// A flame graph of `stacks` at `path`, as `record` draws one.
pub fn write_flame_graph(
    stacks: &[StackCount],
    labels: &Labels,
    path: &Path,
    force: bool,
) -> Result<()> {
    write_atomically(path, force, |out| {
        Ok(svg::write_categorized_svg(stacks, labels, out)?)
    })
    .with_context(|| format!("writing {}", path.display()))
}

pub fn write_diff(
    before: &Recording,
    after: &Recording,
    format: Format,
    path: &Path,
    force: bool,
) -> Result<()> {
    let labels = Labels {
        title: format!(
            "Differential: {} -> {}",
            before.header.host, after.header.host
        ),
        subtitle: "red: more samples after, blue: fewer (counts normalised to the after run)"
            .to_owned(),
    };
    let (b, a): (&[StackCount], &[StackCount]) = (&before.stacks(), &after.stacks());
    if matches!(format, Format::Json | Format::Pprof) {
        bail!(
            "a differential report is written as svg or folded, not {}",
            format.name()
        );
    }
    write_atomically(path, force, |out| {
        if format == Format::Folded {
            diff::write_diff_folded(b, a, true, out)
        } else {
            Ok(diff::write_diff_svg(b, a, true, &labels, out)?)
        }
    })
    .with_context(|| format!("writing {}", path.display()))
}
