//! What `record` and `report` write: the format, told by `--format` or by
//! the output file's name, and what a flame graph's widths count.

use clap::ValueEnum;

use crate::frontends::flame::Weight;
use crate::output_file::Destination;

/// What `record` and `report` write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// inferno flame graph, frames coloured by category
    Svg,
    /// folded stacks (flamegraph.pl, inferno, speedscope)
    Folded,
    /// a netto recording: snapshots and symbolized stacks, replayable
    Json,
    /// gzip-compressed pprof profile (Parca, Pyroscope, go tool pprof)
    Pprof,
    /// OTLP profiles (an ExportProfilesServiceRequest, protobuf), as serve
    /// --otlp-endpoint pushes them, for uploading later
    Otlp,
}

impl Format {
    /// As written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Folded => "folded",
            Format::Json => "json",
            Format::Pprof => "pprof",
            Format::Otlp => "otlp",
        }
    }

    /// The format to write `output` in: `explicit` (--format) when given,
    /// svg on standard output, else the one [`EXTENSIONS`] gives the file
    /// name's end (in any case).
    pub fn for_output(
        output: &Destination,
        explicit: Option<Format>,
    ) -> Result<Format, UnknownFormat> {
        let path = match (explicit, output) {
            (Some(format), _) => return Ok(format),
            (None, Destination::Stdout) => return Ok(Format::Svg),
            (None, Destination::File(path)) => path,
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        EXTENSIONS
            .iter()
            .find(|(_, ends)| ends.iter().any(|end| name.ends_with(end)))
            .map(|&(format, _)| format)
            .ok_or_else(|| UnknownFormat(path.clone()))
    }
}

/// The file name endings each format is recognised by (`-o` without
/// `--format`). pprof is gzip-compressed under either name: `go tool
/// pprof`, Parca and Pyroscope read it so, and it is what pprof itself
/// names `.pb.gz`.
pub const EXTENSIONS: &[(Format, &[&str])] = &[
    (Format::Svg, &[".svg"]),
    (Format::Folded, &[".folded", ".txt"]),
    (Format::Json, &[".json"]),
    (Format::Pprof, &[".pprof", ".pb.gz"]),
    (Format::Otlp, &[".otlp"]),
];

/// An `-o` file name whose end names no format, without --format.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot tell the format of {} from its name: use {}, or pass --format",
    .0.display(),
    known_extensions()
)]
pub struct UnknownFormat(pub std::path::PathBuf);

/// `.svg, .folded or .txt, ...`: every format's endings, from [`EXTENSIONS`].
fn known_extensions() -> String {
    EXTENSIONS
        .iter()
        .map(|(_, ends)| ends.join(" or "))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--format`'s help: the default, with the endings from [`EXTENSIONS`].
pub(super) fn format_help() -> String {
    format!(
        "Output format [default: from the end of the file name ({}); svg for -o -]",
        known_extensions()
    )
}

/// What a flame graph's widths count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WeightArg {
    /// nanoseconds of exact event time: each interval's samples of a
    /// context scaled to the context's measured time
    Time,
    /// stack samples
    Samples,
}

impl From<WeightArg> for Weight {
    fn from(arg: WeightArg) -> Self {
        match arg {
            WeightArg::Time => Weight::Time,
            WeightArg::Samples => Weight::Samples,
        }
    }
}
