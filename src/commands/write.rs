//! Writing a recording in the format the user asked for; shared by `record`
//! and `report` so both produce the same files.

use std::path::Path;

use anyhow::{bail, Context, Result};
use netto::cli::Format;
use netto::frontends::flame::svg;
use netto::frontends::flame::{
    any_estimated, diff, flame_stacks, folded, pprof, FlameStack, Labels, Scope, Weight,
};
use netto::model::Recording;
use netto::output::write_atomically;

/// Writes `recording` as `format`, the graphs of its stacks in `scope`
/// (checked by the caller; refused for json, which is the whole
/// recording).
pub fn write_recording(
    recording: &Recording,
    format: Format,
    weight: Weight,
    scope: Scope<'_>,
    path: &Path,
    force: bool,
) -> Result<()> {
    if format == Format::Json && scope != Scope::All {
        bail!("a recording is written whole: --group and --group-frames draw svg, folded or pprof");
    }
    let labels = Labels::for_recording(recording).scoped(scope);
    let stacks = || flame_stacks(&recording.snapshots, weight, scope);
    write_atomically(path, force, |out| match format {
        Format::Json => {
            serde_json::to_writer(&mut *out, recording)?;
            out.write_all(b"\n")
        }
        Format::Folded => folded::write_folded(&stacks(), out),
        Format::Svg => Ok(svg::write_categorized_svg(&stacks(), &labels, weight, out)?),
        Format::Pprof => Ok(pprof::write_pprof(
            &recording.snapshots,
            &labels,
            weight,
            scope,
            out,
        )?),
    })
    .with_context(|| format!("writing {}", path.display()))
}

/// A flame graph of `stacks` at `path` (`top`'s `s`), coloured as every
/// netto flame graph is.
pub fn write_flame_graph(
    stacks: &[FlameStack],
    labels: &Labels,
    weight: Weight,
    path: &Path,
    force: bool,
) -> Result<()> {
    write_atomically(path, force, |out| {
        Ok(svg::write_categorized_svg(stacks, labels, weight, out)?)
    })
    .with_context(|| format!("writing {}", path.display()))
}

pub fn write_diff(
    before: &Recording,
    after: &Recording,
    format: Format,
    weight: Weight,
    scope: Scope<'_>,
    path: &Path,
    force: bool,
) -> Result<()> {
    let labels = Labels {
        title: format!(
            "Differential: {} -> {}",
            before.header.host, after.header.host
        ),
        subtitle: "red: more after, blue: less (normalised to the after run)".to_owned(),
        estimated: any_estimated(before.snapshots.iter().chain(&after.snapshots)),
    };
    if matches!(format, Format::Json | Format::Pprof) {
        bail!(
            "a differential report is written as svg or folded, not {}",
            format.name()
        );
    }
    let labels = labels.scoped(scope);
    let b = flame_stacks(&before.snapshots, weight, scope);
    let a = flame_stacks(&after.snapshots, weight, scope);
    write_atomically(path, force, |out| {
        if format == Format::Folded {
            diff::write_diff_folded(&b, &a, true, out)
        } else {
            Ok(diff::write_diff_svg(&b, &a, true, &labels, weight, out)?)
        }
    })
    .with_context(|| format!("writing {}", path.display()))
}
