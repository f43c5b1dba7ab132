//! Stack samples as flame graphs: folded text that flamegraph.pl, inferno
//! and speedscope read ([`folded`]), an SVG drawn by inferno with frames
//! coloured by category ([`svg`]), a before/after comparison ([`diff`]),
//! and pprof profiles for Parca, Pyroscope and `go tool pprof`
//! ([`pprof`]). Every renderer names frames through the folded form's
//! [`folded::frame_label`], so a frame is cleaned of addresses and
//! separators in exactly one place.

pub mod diff;
pub mod folded;
pub mod pprof;
#[cfg(any(test, feature = "test-support"))]
pub mod readback;
pub mod svg;

use std::io::{self, Write};

use inferno::flamegraph::Options;
use thiserror::Error;

use crate::model::RecordingHeader;

#[derive(Debug, Error)]
pub enum FlameError {
    /// inferno would draw an "ERROR" picture for an empty input; refusing
    /// before anything is written keeps such a file from being created.
    #[error("no stack samples to draw a flame graph from")]
    NoSamples,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Lets a renderer run inside [`crate::output::write_atomically`],
/// whose writer speaks `io::Result`, with a plain `?`.
impl From<FlameError> for io::Error {
    fn from(err: FlameError) -> io::Error {
        match err {
            FlameError::Io(err) => err,
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

/// The two text lines above a flame graph. A picture passed around on its
/// own must say where and how it was measured, or two of them cannot be
/// told apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    pub title: String,
    pub subtitle: String,
}

impl Labels {
    pub fn for_recording(header: &RecordingHeader) -> Labels {
        Labels {
            title: format!("Kernel network stack CPU on {}", header.host),
            subtitle: format!(
                "kernel {}, {:.1} s sampled at {} Hz, {} backend",
                header.kernel, header.duration_s, header.frequency_hz, header.backend
            ),
        }
    }
}

/// inferno's settings common to every graph netto draws; the caller adds
/// how frames are coloured.
fn inferno_options(labels: &Labels) -> Options<'static> {
    let mut options = Options::default();
    options.title = labels.title.clone();
    options.subtitle = Some(labels.subtitle.clone());
    options.count_name = "samples".into();
    options
}

/// Hands folded lines (`stack count` or `stack before after`) to inferno.
/// Empty input is refused here because inferno would otherwise write an
/// error picture before failing.
fn draw(
    options: &mut Options<'_>,
    lines: &[String],
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    if lines.is_empty() {
        return Err(FlameError::NoSamples);
    }
    inferno::flamegraph::from_lines(options, lines.iter().map(String::as_str), out)?;
    Ok(())
}

/// inferno's SVG starts with a DOCTYPE, which roxmltree refuses unless
/// told otherwise; the DTD itself defines no entities.
#[cfg(test)]
fn parse_svg(svg: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(svg, options).expect("well-formed XML")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recording_labels_name_host_kernel_duration_frequency_backend() {
        let header = RecordingHeader {
            netto_version: "0.1.0".into(),
            host: "box1".into(),
            kernel: "6.8.0-31-generic".into(),
            started: 1_700_000_000.0,
            duration_s: 12.04,
            frequency_hz: 99,
            backend: "tracepoint".into(),
            transport: "mmap".into(),
        };
        let labels = Labels::for_recording(&header);
        assert_eq!(labels.title, "Kernel network stack CPU on box1");
        assert_eq!(
            labels.subtitle,
            "kernel 6.8.0-31-generic, 12.0 s sampled at 99 Hz, tracepoint backend"
        );
    }

    #[test]
    fn no_samples_becomes_invalid_data_for_io_callers() {
        let err: io::Error = FlameError::NoSamples.into();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("no stack samples"));
    }
}
