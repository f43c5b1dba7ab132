//! Stack samples as flame graphs: folded text that flamegraph.pl, inferno
//! and speedscope read ([`folded`]), an SVG drawn by inferno with frames
//! coloured by category ([`svg`]), a before/after comparison ([`diff`]),
//! and pprof profiles for Parca, Pyroscope and `go tool pprof`
//! ([`pprof`]). Every renderer names frames through the folded form's
//! [`folded::frame_label`], so a frame is cleaned of addresses and
//! separators in exactly one place.
//!
//! A graph's widths are exact time by default ([`Weight`]): samples say
//! where inside a context the time goes, the exact accounting how much
//! time the context took, so each interval's samples of a context are
//! scaled to the context's exact time ([`exact_shares`], which pprof's
//! nanoseconds share too). Counted as samples, contexts would be misstated
//! against each other by how differently they are sampled (README,
//! "Agreement").

pub mod diff;
pub mod folded;
pub mod pprof;
#[cfg(any(test, feature = "test-support"))]
pub mod readback;
pub mod svg;

use std::collections::HashMap;
use std::io::{self, Write};

use inferno::flamegraph::Options;
use thiserror::Error;

use crate::breakdown::split_ns;
use crate::model::{merge_stacks, Recording, SampleContext, Snapshot, StackCount, Tier};

/// What a flame graph's widths stand for. The names are public (the
/// `--weight` option, serve's `weight` query parameter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Weight {
    /// Nanoseconds of exact event time.
    #[default]
    Time,
    /// Stack samples.
    Samples,
}

impl Weight {
    pub const ALL: [Weight; 2] = [Weight::Time, Weight::Samples];

    pub fn name(self) -> &'static str {
        match self {
            Weight::Time => "time",
            Weight::Samples => "samples",
        }
    }

    /// What a width counts, as the graph says it.
    fn unit(self) -> &'static str {
        match self {
            Weight::Time => "ns",
            Weight::Samples => "samples",
        }
    }
}

/// One tower of a flame graph: a stack of a context and its width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlameStack {
    pub context: SampleContext,
    /// Outermost first.
    pub frames: Vec<String>,
    /// Nanoseconds or samples, as the [`Weight`] says.
    pub width: u64,
}

#[cfg(test)]
impl FlameStack {
    /// Test shorthand.
    pub(crate) fn of(context: SampleContext, frames: &[&str], width: u64) -> FlameStack {
        FlameStack {
            context,
            frames: frames.iter().map(|&f| f.to_owned()).collect(),
            width,
        }
    }
}

/// The frame that carries a context's exact time in an interval where none
/// of its time was sampled, so that a graph in exact time adds up to every
/// nanosecond measured.
pub const NOT_SAMPLED: &str = "[not sampled]";

/// The stacks of `snapshots` as flame graph towers, merged across
/// snapshots, ordered by context, then widest first.
pub fn flame_stacks<'a>(
    snapshots: impl IntoIterator<Item = &'a Snapshot>,
    weight: Weight,
) -> Vec<FlameStack> {
    let towers: Vec<FlameStack> = match weight {
        Weight::Samples => merge_stacks(snapshots)
            .into_iter()
            .map(|stack| FlameStack {
                context: stack.context,
                frames: stack.frames,
                width: stack.count,
            })
            .collect(),
        Weight::Time => {
            let mut widths: HashMap<(SampleContext, &[String]), u64> = HashMap::new();
            let not_sampled = [NOT_SAMPLED.to_owned()];
            for snapshot in snapshots {
                let shares = exact_shares(snapshot);
                for (stack, ns) in &shares {
                    *widths.entry((stack.context, &stack.frames)).or_default() += ns;
                }
                for context in SampleContext::ALL {
                    if !shares.iter().any(|(stack, _)| stack.context == context) {
                        let ns = snapshot
                            .events
                            .get(&context.event())
                            .map_or(0, |t| t.total_ns);
                        *widths.entry((context, &not_sampled[..])).or_default() += ns;
                    }
                }
            }
            // The borrowed keys end with the loop: own them.
            widths
                .into_iter()
                .filter(|&(_, width)| width > 0)
                .map(|((context, frames), width)| FlameStack {
                    context,
                    frames: frames.to_vec(),
                    width,
                })
                .collect()
        }
    };
    let mut towers = towers;
    towers.sort_by(|a, b| {
        (a.context, std::cmp::Reverse(a.width), &a.frames).cmp(&(
            b.context,
            std::cmp::Reverse(b.width),
            &b.frames,
        ))
    });
    towers
}

/// Each stack of `snapshot` that has samples, with its part of its
/// context's exact time in the snapshot: the time shared out in proportion
/// to samples, by largest remainder as the breakdown shares it
/// ([`split_ns`]), so a context's stacks add up to its exact time. A
/// context without samples in the snapshot has no stack here.
pub fn exact_shares(snapshot: &Snapshot) -> Vec<(&StackCount, u64)> {
    let mut shares = Vec::new();
    for context in SampleContext::ALL {
        let of_context: Vec<&StackCount> = snapshot
            .stacks
            .iter()
            .filter(|s| s.context == context && s.count > 0)
            .collect();
        if of_context.is_empty() {
            continue;
        }
        let counts: Vec<u64> = of_context.iter().map(|s| s.count).collect();
        let total_ns = snapshot
            .events
            .get(&context.event())
            .map_or(0, |t| t.total_ns);
        shares.extend(of_context.into_iter().zip(split_ns(total_ns, &counts)));
    }
    shares
}

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
    /// Whether some of the time drawn is estimated (snapshots of a tier
    /// that estimates): the widths then say so instead of "exact time".
    pub estimated: bool,
}

impl Labels {
    pub fn for_recording(recording: &Recording) -> Labels {
        let header = &recording.header;
        Labels {
            title: format!("Kernel network stack CPU on {}", header.host),
            subtitle: format!(
                "kernel {}, {:.1} s sampled at {} Hz, {} backend",
                header.kernel, header.duration_s, header.frequency_hz, header.backend
            ),
            estimated: any_estimated(&recording.snapshots),
        }
    }
}

/// Whether any of `snapshots` estimates an event rather than measuring it.
pub fn any_estimated<'a>(snapshots: impl IntoIterator<Item = &'a Snapshot>) -> bool {
    snapshots.into_iter().any(|s| s.tier != Tier::Exact)
}

/// inferno's settings common to every graph netto draws; the caller adds
/// how frames are coloured.
fn inferno_options(labels: &Labels, weight: Weight) -> Options<'static> {
    let mut options = Options::default();
    options.title = labels.title.clone();
    options.subtitle = Some(format!(
        "{}; widths: {}",
        labels.subtitle,
        match weight {
            Weight::Time if labels.estimated => {
                "time, estimated from samples where the tier does not measure it"
            }
            Weight::Time => "exact time",
            Weight::Samples => "samples",
        }
    ));
    options.count_name = weight.unit().into();
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
    use crate::model::RecordingHeader;

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
        let mut recording = Recording {
            header,
            snapshots: vec![Snapshot::empty("tracepoint", 1)],
        };
        let labels = Labels::for_recording(&recording);
        assert_eq!(labels.title, "Kernel network stack CPU on box1");
        assert_eq!(
            labels.subtitle,
            "kernel 6.8.0-31-generic, 12.0 s sampled at 99 Hz, tracepoint backend"
        );
        assert!(!labels.estimated);
        let widths = inferno_options(&labels, Weight::Time).subtitle.unwrap();
        assert!(widths.ends_with("widths: exact time"), "{widths}");
        // One interval in a tier that estimates, and the widths say so.
        recording.snapshots.push(Snapshot {
            tier: Tier::Softirq,
            ..Snapshot::empty("tracepoint", 1)
        });
        let labels = Labels::for_recording(&recording);
        let widths = inferno_options(&labels, Weight::Time).subtitle.unwrap();
        assert!(widths.contains("estimated from samples"), "{widths}");
    }

    fn interval(net_rx_ns: u64, timers_ns: u64, stacks: Vec<StackCount>) -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 1);
        for (key, ns) in [
            (crate::model::EventKey::NetRxSoftirq, net_rx_ns),
            (crate::model::EventKey::NetTimers, timers_ns),
        ] {
            let time = s.events.get_mut(&key).unwrap();
            time.total_ns = ns;
            time.per_cpu_ns = vec![ns];
        }
        s.stacks = stacks;
        s
    }

    #[test]
    fn exact_time_scales_each_interval_to_its_context_time() {
        let tcp = ["net_rx_action", "tcp_v4_rcv"];
        let gro = ["net_rx_action", "napi_gro_receive"];
        let pace = ["hrtimer_run_softirq", "tcp_pace_kick"];
        // Interval 1: 3 samples stand for 900 ns of NET_RX; interval 2: 1
        // sample for 1000 ns; the timers were sampled in interval 2 only.
        let snapshots = [
            interval(
                900,
                50,
                vec![
                    StackCount::of(SampleContext::NetRx, &tcp, 2),
                    StackCount::of(SampleContext::NetRx, &gro, 1),
                ],
            ),
            interval(
                1_000,
                70,
                vec![
                    StackCount::of(SampleContext::NetRx, &gro, 1),
                    StackCount::of(SampleContext::NetTimers, &pace, 4),
                ],
            ),
        ];
        let towers = |weight| -> Vec<(SampleContext, String, u64)> {
            flame_stacks(&snapshots, weight)
                .into_iter()
                .map(|t| (t.context, t.frames.join(";"), t.width))
                .collect()
        };
        assert_eq!(
            towers(Weight::Time),
            [
                (SampleContext::NetRx, gro.join(";"), 300 + 1_000),
                (SampleContext::NetRx, tcp.join(";"), 600),
                (SampleContext::NetTimers, pace.join(";"), 70),
                (SampleContext::NetTimers, NOT_SAMPLED.to_owned(), 50),
            ]
        );
        let total: u64 = towers(Weight::Time).iter().map(|t| t.2).sum();
        assert_eq!(total, 900 + 50 + 1_000 + 70, "every nanosecond measured");
        assert_eq!(
            towers(Weight::Samples),
            [
                (SampleContext::NetRx, gro.join(";"), 2),
                (SampleContext::NetRx, tcp.join(";"), 2),
                (SampleContext::NetTimers, pace.join(";"), 4),
            ]
        );
    }

    #[test]
    fn no_samples_becomes_invalid_data_for_io_callers() {
        let err: io::Error = FlameError::NoSamples.into();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("no stack samples"));
    }
}
