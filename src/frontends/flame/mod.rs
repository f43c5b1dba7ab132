//! Stack samples as flame graphs: folded text that flamegraph.pl, inferno
//! and speedscope read ([`folded`]), an SVG drawn by inferno with frames
//! coloured by category ([`svg`]), a before/after comparison ([`diff`]),
//! and pprof profiles for Parca, Pyroscope and `go tool pprof`
//! ([`pprof`]). Every renderer names frames through the folded form's
//! `folded::frame_label`, so a frame is cleaned of addresses and
//! separators in exactly one place.
//!
//! A graph's widths are exact time by default ([`Weight`]): samples say
//! where inside a context the time goes, the exact accounting how much
//! time the context took, so each interval's samples of a context are
//! scaled to the context's exact time ([`exact_shares`], which pprof's
//! nanoseconds share too). Counted as samples, contexts would be misstated
//! against each other by how differently they are sampled
//! (docs/src/concepts/breakdown.md, "Agreement").

pub mod diff;
pub mod folded;
pub mod otlp;
pub mod pprof;
#[cfg(any(test, feature = "test-support"))]
pub mod readback;
pub mod svg;

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use inferno::flamegraph::Options;
use thiserror::Error;

use super::label::printable;
use crate::breakdown::split_ns;
use crate::model::{EventKey, Recording, SampleContext, Snapshot, StackCount, Tier};

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

/// Whose stacks a graph shows, and whose exact time they share out. A
/// stack says whom it was sampled for (`StackCount::group`, with `--by`);
/// the snapshot's attribution says how much time each group took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Every stack, sharing out each context's whole exact time.
    #[default]
    All,
    /// The stacks sampled for one group (a `name` of the attribution),
    /// sharing out that group's exact time per event.
    Group(&'a str),
    /// Every stack under a root frame of its group ([`group_frame`]), each
    /// group's time its own and what no group claimed under
    /// [`UNATTRIBUTED_FRAME`]; the groups add up to the whole.
    EachGroup,
}

/// The root frame of the stacks no group claimed, in a graph of
/// [`Scope::EachGroup`].
pub const UNATTRIBUTED_FRAME: &str = "[unattributed]";

/// A group's root frame in a graph of [`Scope::EachGroup`]: bracketed, as
/// frames that name no function are, and printable (a cgroup's name is
/// anyone's with a delegated subtree; an SVG cannot hold a control
/// character).
pub fn group_frame(name: &str) -> String {
    format!("[{}]", printable(name))
}

/// One tower of a flame graph: a stack of a context and its width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlameStack {
    pub context: SampleContext,
    /// A frame above the context: the group the stack was for, in a graph
    /// of [`Scope::EachGroup`].
    pub root: Option<String>,
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
            root: None,
            frames: frames.iter().map(|&f| f.to_owned()).collect(),
            width,
        }
    }
}

/// The frame that carries a context's exact time in an interval where none
/// of its time was sampled, so that a graph in exact time adds up to every
/// nanosecond measured.
pub const NOT_SAMPLED: &str = "[not sampled]";

/// One context's exact time in one snapshot, for the scope's group (or
/// for everyone), and the stacks with samples that share it out.
struct Part<'s> {
    context: SampleContext,
    /// The group whose time it is: none for everyone ([`Scope::All`]) or
    /// for what no group claimed ([`Scope::EachGroup`]).
    group: Option<&'s str>,
    total_ns: u64,
    stacks: Vec<&'s StackCount>,
}

/// Whose time a part is: a group's name and its time per event; for
/// everyone or for what no group claimed, no name, and the events' own
/// totals or the unattributed part (`None`: the totals).
type Owner<'s> = (Option<&'s str>, Option<&'s BTreeMap<EventKey, u64>>);

/// `snapshot`'s parts under `scope`, every context's. A snapshot without
/// attribution has no group's time: under [`Scope::EachGroup`] it is all
/// unattributed.
fn parts<'s>(snapshot: &'s Snapshot, scope: Scope<'s>) -> Vec<Part<'s>> {
    let attribution = snapshot.attribution.as_ref();
    let groups = attribution.map_or(&[][..], |a| &a.groups[..]);
    let owners: Vec<Owner<'s>> = match scope {
        Scope::All => vec![(None, None)],
        Scope::Group(name) => {
            let group = groups.iter().find(|g| g.name == name);
            vec![(Some(name), Some(group.map_or(&NO_TIME, |g| &g.events)))]
        }
        Scope::EachGroup => groups
            .iter()
            .map(|g| (Some(g.name.as_str()), Some(&g.events)))
            .chain([(None, attribution.map(|a| &a.unattributed))])
            .collect(),
    };
    let mut parts = Vec::new();
    for context in SampleContext::ALL {
        let event = context.event();
        for &(group, times) in &owners {
            let total_ns = match times {
                Some(times) => times.get(&event).copied().unwrap_or(0),
                None => snapshot.events.get(&event).map_or(0, |t| t.total_ns),
            };
            let stacks = snapshot
                .stacks
                .iter()
                .filter(|s| s.context == context && s.count > 0)
                .filter(|s| scope == Scope::All || s.group.as_deref() == group)
                .collect();
            parts.push(Part {
                context,
                group,
                total_ns,
                stacks,
            });
        }
    }
    parts
}

/// A group absent from a snapshot took no time in it.
static NO_TIME: BTreeMap<EventKey, u64> = BTreeMap::new();

/// The stacks of `snapshots` under `scope` as flame graph towers, merged
/// across snapshots, ordered by context, then widest first.
pub fn flame_stacks<'a>(
    snapshots: impl IntoIterator<Item = &'a Snapshot>,
    weight: Weight,
    scope: Scope<'a>,
) -> Vec<FlameStack> {
    let not_sampled = [NOT_SAMPLED.to_owned()];
    let mut widths: HashMap<(SampleContext, Option<String>, &[String]), u64> = HashMap::new();
    for snapshot in snapshots {
        for part in parts(snapshot, scope) {
            let root = part.root(scope);
            match weight {
                Weight::Samples => {
                    for stack in &part.stacks {
                        *widths
                            .entry((part.context, root.clone(), &stack.frames))
                            .or_default() += stack.count;
                    }
                }
                Weight::Time if part.stacks.is_empty() => {
                    *widths
                        .entry((part.context, root, &not_sampled[..]))
                        .or_default() += part.total_ns;
                }
                Weight::Time => {
                    for (stack, ns) in part.shares() {
                        *widths
                            .entry((part.context, root.clone(), &stack.frames))
                            .or_default() += ns;
                    }
                }
            }
        }
    }
    // The borrowed keys end with the loop: own them.
    let mut towers: Vec<FlameStack> = widths
        .into_iter()
        .filter(|&(_, width)| width > 0)
        .map(|((context, root, frames), width)| FlameStack {
            context,
            root,
            frames: frames.to_vec(),
            width,
        })
        .collect();
    towers.sort_by(|a, b| {
        (a.context, std::cmp::Reverse(a.width), &a.root, &a.frames).cmp(&(
            b.context,
            std::cmp::Reverse(b.width),
            &b.root,
            &b.frames,
        ))
    });
    towers
}

impl<'s> Part<'s> {
    /// The root frame of its towers.
    fn root(&self, scope: Scope<'_>) -> Option<String> {
        (scope == Scope::EachGroup).then(|| {
            self.group
                .map_or_else(|| UNATTRIBUTED_FRAME.to_owned(), group_frame)
        })
    }

    /// Its stacks, each with its part of the time: shared out in
    /// proportion to samples, by largest remainder as the breakdown shares
    /// it ([`split_ns`]), so the stacks add up to the part's time.
    fn shares(&self) -> impl Iterator<Item = (&'s StackCount, u64)> + '_ {
        let counts: Vec<u64> = self.stacks.iter().map(|s| s.count).collect();
        self.stacks
            .iter()
            .copied()
            .zip(split_ns(self.total_ns, &counts))
    }
}

/// Each stack of `snapshot` that has samples, under `scope`, with its part
/// of its context's exact time in the snapshot (for [`Scope::Group`], of
/// the group's): the time shared out in proportion to samples, by largest
/// remainder as the breakdown shares it (`split_ns`), so a context's
/// stacks add up to its exact time. A context without samples in the
/// snapshot has no stack here.
pub fn exact_shares<'s>(snapshot: &'s Snapshot, scope: Scope<'s>) -> Vec<(&'s StackCount, u64)> {
    let mut shares = Vec::new();
    for part in parts(snapshot, scope) {
        shares.extend(part.shares());
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

/// A [`Scope`] the snapshots cannot be drawn in.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ScopeError {
    #[error(
        "recorded without --by: it has no groups to draw (record with --by process|cgroup|netns|flow|port)"
    )]
    NoAttribution,
    #[error("no group {name:?} (by {by}); groups: {known}")]
    NoSuchGroup {
        name: String,
        by: &'static str,
        /// The heaviest groups' names, for the user to pick from.
        known: String,
    },
}

/// How many of the heaviest groups an unknown name's error lists.
const GROUPS_LISTED: usize = 5;

/// Whether `snapshots` can be drawn in `scope`: a group's graph, or one of
/// every group, needs attribution, and a group must be one of them (a
/// name that matches none would draw an empty graph).
pub fn check_scope(snapshots: &[Snapshot], scope: Scope<'_>) -> Result<(), ScopeError> {
    if scope == Scope::All {
        return Ok(());
    }
    let attributions: Vec<_> = snapshots
        .iter()
        .filter_map(|s| s.attribution.as_ref())
        .collect();
    let Some(first) = attributions.first() else {
        return Err(ScopeError::NoAttribution);
    };
    let Scope::Group(name) = scope else {
        return Ok(());
    };
    let mut totals: HashMap<&str, u64> = HashMap::new();
    for group in attributions.iter().flat_map(|a| &a.groups) {
        *totals.entry(&group.name).or_default() += group.total_ns();
    }
    if totals.contains_key(name) {
        return Ok(());
    }
    let mut heaviest: Vec<(&str, u64)> = totals.into_iter().collect();
    heaviest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut known: Vec<String> = heaviest
        .iter()
        .take(GROUPS_LISTED)
        .map(|(name, _)| printable(name).into_owned())
        .collect();
    if heaviest.len() > GROUPS_LISTED {
        known.push(format!("and {} more", heaviest.len() - GROUPS_LISTED));
    }
    Err(ScopeError::NoSuchGroup {
        name: name.to_owned(),
        by: first.by.name(),
        known: if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        },
    })
}

/// Lets a renderer run inside [`crate::output_file::write_atomically`],
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
    /// Says whose stacks a graph of `scope` shows.
    pub fn scoped(mut self, scope: Scope<'_>) -> Labels {
        match scope {
            Scope::All => {}
            Scope::Group(name) => self.title.push_str(&format!(" for {name}")),
            Scope::EachGroup => self.title.push_str(" by group"),
        }
        self
    }

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
mod tests;
