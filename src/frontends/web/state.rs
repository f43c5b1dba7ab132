//! What the web server knows: the source's description, the recent past
//! (for the history endpoint, new clients and flame graphs of the offered
//! windows), the cumulative metrics and the stream clients. The feed
//! thread is its only writer, one snapshot at a time; request handlers
//! only read.
//!
//! Each snapshot is serialized once, without its stacks, when it arrives;
//! the history endpoint and every stream client share those bytes. Its
//! stacks are kept apart, shared too, for the same span (`--history`), so
//! that a recording of any part of the history has them. Whatever is
//! drawn from the kept snapshots (a flame graph of a window, the latest
//! snapshot in full, a recording) is drawn at most once per snapshot,
//! outside the history's lock (`drawings.rs`). `health.rs` says whether
//! snapshots still arrive.

mod drawings;
mod health;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard};
use std::time::Instant;

use actix_web::web::Bytes;
use serde::{Deserialize, Serialize};

use super::metrics::{Metrics, MetricsError};
use super::recording;
use super::stream::{self, StreamError, Streams};
use crate::frontends::flame::Weight;
use crate::history::{stack_bytes, Entry, History};
use crate::model::{Snapshot, StackCount};
use crate::source::SourceInfo;
use drawings::{Drawn, Flame, Profiles};
pub use drawings::{FlameFailure, FlameWindow, ProfileWindow, FLAME_WINDOWS_S, PROFILE_WINDOWS_S};
pub use health::{Health, HealthStatus};

/// How the server was started, shown by the page and the source endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServeSettings {
    /// Seconds of snapshots kept.
    pub history_s: f64,
    /// The flame graph's window when a request names none.
    pub flame_s: f64,
    /// `--serve-budget`: the most CPU serving may take, percent of one CPU.
    pub serve_budget_percent: f64,
    /// Whether profiles are pushed (`--otlp-endpoint`): each snapshot
    /// then says how many windows went and how many were dropped.
    #[serde(default)]
    pub otlp: bool,
}

/// Most bytes of snapshot summaries kept (besides `--history`): 3600 s at
/// the shortest interval on a host with many CPUs would otherwise take
/// gigabytes.
pub const SUMMARY_BUDGET: usize = 256 << 20;

/// Most bytes of stacks kept (besides `--history`).
pub const STACK_BUDGET: usize = 256 << 20;

/// A kept snapshot as the history endpoint and the stream send it: its
/// SSE event, whose data is the snapshot without stacks.
struct Summary {
    ts: f64,
    interval_s: f64,
    event: Bytes,
}

impl Summary {
    /// The snapshot's JSON: the event's data, sharing its bytes.
    fn json(&self) -> Bytes {
        let start = stream::EVENT_PREFIX.len() + SNAPSHOT_EVENT.len() + stream::DATA_PREFIX.len();
        self.event
            .slice(start..self.event.len() - stream::EVENT_SUFFIX.len())
    }
}

impl Entry for Summary {
    fn interval_s(&self) -> f64 {
        self.interval_s
    }

    fn bytes(&self) -> usize {
        std::mem::size_of::<Summary>() + self.event.len()
    }
}

/// The stacks of one kept snapshot, shared with the drawing of any window
/// that covers it: a snapshot holding only what flame graphs and profiles
/// read (its stacks, the modules of their functions, each event's total,
/// its time and sampling), not its per-CPU detail.
struct Stacks {
    interval_s: f64,
    sampled: Arc<Snapshot>,
    bytes: usize,
}

impl Entry for Stacks {
    fn interval_s(&self) -> f64 {
        self.interval_s
    }

    fn bytes(&self) -> usize {
        self.bytes
    }
}

struct Recent {
    summaries: History<Summary>,
    /// The stacks of the newest snapshots: one entry per snapshot, like
    /// `summaries`, so the newest of each belong together even when their
    /// budgets keep different numbers.
    stacks: History<Stacks>,
    /// The newest snapshot without its stacks, which are the newest in
    /// `stacks`.
    latest: Option<Arc<Snapshot>>,
    /// When it arrived, for the health endpoint.
    arrived: Option<Instant>,
    /// The stack samples' transport, from the first snapshot that sampled:
    /// a recording's header names it.
    transport: Option<String>,
    /// Bumped per snapshot; says whether something drawn is still current.
    generation: u64,
    ended: bool,
}

pub struct State {
    pub info: SourceInfo,
    pub settings: ServeSettings,
    pub metrics: Metrics,
    pub streams: Streams,
    recent: RwLock<Recent>,
    /// By window, then by weight (`Weight as usize`).
    flames: [[Flame; Weight::ALL.len()]; FLAME_WINDOWS_S.len()],
    /// Profiles encoded for the current generation.
    profiles: Mutex<(u64, Profiles)>,
    snapshot: Drawn<Option<Bytes>>,
    /// The recording made last: (generation, seconds asked, file). One is
    /// made at a time, whatever the clients ask.
    recording: Mutex<Option<(u64, f64, Bytes)>>,
}

/// The event name of a snapshot on the stream.
const SNAPSHOT_EVENT: &str = "snapshot";

impl State {
    pub fn new(info: SourceInfo, settings: ServeSettings) -> Result<State, MetricsError> {
        Ok(State {
            metrics: Metrics::new(&info)?,
            info,
            streams: Streams::default(),
            recent: RwLock::new(Recent {
                summaries: History::with_budget(settings.history_s, SUMMARY_BUDGET),
                stacks: History::with_budget(settings.history_s, STACK_BUDGET),
                latest: None,
                arrived: None,
                transport: None,
                generation: 0,
                ended: false,
            }),
            flames: std::array::from_fn(|_| {
                std::array::from_fn(|_| Flame {
                    folded: Drawn::new(),
                    svg: Drawn::new(),
                })
            }),
            profiles: Mutex::default(),
            snapshot: Drawn::new(),
            recording: Mutex::default(),
            settings,
        })
    }

    /// Takes in the next snapshot: counters, history, and every stream
    /// client, in that order, so a scrape or page never sees a snapshot
    /// in one place and not yet counted in another.
    pub fn publish(&self, mut snapshot: Snapshot) {
        if self.settings.otlp {
            snapshot.overhead.otlp = Some(self.metrics.otlp_pushed());
        }
        self.metrics.add(&snapshot);
        let stacks = std::mem::take(&mut snapshot.stacks);
        let modules = std::mem::take(&mut snapshot.modules);
        let json = serde_json::to_vec(&snapshot).expect("a snapshot serializes");
        let summary = Summary {
            ts: snapshot.ts,
            interval_s: snapshot.interval_s,
            event: stream::event(SNAPSHOT_EVENT, &json),
        };
        let kept_stacks = Stacks {
            interval_s: snapshot.interval_s,
            bytes: std::mem::size_of::<Stacks>()
                + std::mem::size_of::<Snapshot>()
                + stack_bytes(&stacks)
                + modules
                    .iter()
                    .map(|(f, m)| f.len() + m.len())
                    .sum::<usize>()
                + snapshot.attribution.as_ref().map_or(0, attribution_bytes),
            sampled: Arc::new(sampled(&snapshot, stacks, modules)),
        };
        let delivery = {
            let mut recent = self.write();
            let message = summary.event.clone();
            recent.summaries.push(summary);
            recent.stacks.push(kept_stacks);
            if recent.transport.is_none() {
                recent.transport = snapshot.sampling.as_ref().map(|s| s.transport.clone());
            }
            recent.latest = Some(Arc::new(snapshot));
            recent.arrived = Some(Instant::now());
            recent.generation += 1;
            // Under the lock: a client subscribing now gets this snapshot
            // either in its backlog or from here, never twice or not at all.
            self.streams.broadcast(&message)
        };
        self.metrics
            .set_stream_clients(delivery.clients, delivery.dropped);
    }

    /// The source has ended (a replay played out, a live run stopped):
    /// every stream says so and ends.
    pub fn end(&self) {
        let mut recent = self.write();
        recent.ended = true;
        let delivery = self.streams.broadcast(&end_event());
        self.streams.close_all();
        self.metrics.set_stream_clients(0, delivery.dropped);
    }

    pub fn ended(&self) -> bool {
        self.read().ended
    }

    /// A new stream client: first the snapshots newer than `since` (unix
    /// seconds; without it, only the latest), then every new one, or the
    /// end if the source has ended.
    pub fn subscribe(
        &self,
        since: Option<f64>,
    ) -> Result<tokio::sync::mpsc::Receiver<Bytes>, StreamError> {
        let recent = self.read();
        // Newest first while newer than `since` (timestamps increase), and
        // no more than a client's queue holds.
        let mut backlog: Vec<Bytes> = match since {
            Some(since) => recent
                .summaries
                .iter()
                .rev()
                .take_while(|s| s.ts > since)
                .take(stream::QUEUE_EVENTS)
                .map(|s| s.event.clone())
                .collect(),
            None => recent
                .summaries
                .latest()
                .map(|s| s.event.clone())
                .into_iter()
                .collect(),
        };
        backlog.reverse();
        if recent.ended {
            backlog.push(end_event());
        }
        let rx = self.streams.subscribe(backlog, !recent.ended);
        self.metrics.set_stream_clients(self.streams.len(), 0);
        rx
    }

    /// The latest snapshot, stacks included, as JSON; serialized once per
    /// snapshot however many ask.
    pub fn latest_json(&self) -> Option<Bytes> {
        self.snapshot.get(
            self,
            |recent| {
                let latest = recent.latest.clone();
                let sampled = recent.stacks.latest().map(|s| s.sampled.clone());
                (recent.generation, latest.zip(sampled))
            },
            |latest| {
                latest.map(|(snapshot, sampled)| {
                    let full = Snapshot {
                        stacks: sampled.stacks.clone(),
                        modules: sampled.modules.clone(),
                        ..snapshot.as_ref().clone()
                    };
                    Bytes::from(serde_json::to_vec(&full).expect("a snapshot serializes"))
                })
            },
        )
    }

    /// The JSON of each snapshot of the last `seconds` (without stacks),
    /// oldest first, sharing the bytes every reader gets.
    pub fn history(&self, seconds: f64) -> Vec<Bytes> {
        self.read()
            .summaries
            .last(seconds)
            .map(Summary::json)
            .collect()
    }

    pub fn snapshots(&self) -> usize {
        self.read().summaries.len()
    }

    /// The last `seconds` of history (selected as [`State::history`]
    /// selects them) as a recording file, stacks included wherever they
    /// are still kept; `None` before the first snapshot. Made once per
    /// snapshot and span, one at a time, outside the history's lock.
    pub fn recording(&self, seconds: f64) -> Option<Result<Bytes, String>> {
        let mut made = lock(&self.recording);
        let (generation, kept, transport) = {
            let recent = self.read();
            if let Some((generation, asked, file)) = &*made {
                if *generation == recent.generation && *asked == seconds {
                    return Some(Ok(file.clone()));
                }
            }
            let summaries: Vec<&Summary> = recent.summaries.last(seconds).collect();
            // One entry per snapshot in each: the newest belong together.
            let mut stacks = recent.stacks.iter().rev().map(|s| s.sampled.clone());
            let mut kept: Vec<recording::Kept> = summaries
                .iter()
                .rev()
                .map(|summary| recording::Kept {
                    ts: summary.ts,
                    interval_s: summary.interval_s,
                    json: summary.json(),
                    stacks: stacks.next(),
                })
                .collect();
            kept.reverse();
            (recent.generation, kept, recent.transport.clone())
        };
        if kept.is_empty() {
            return None;
        }
        let header = recording::header(&self.info, transport.as_deref(), &kept);
        let file = recording::write(&header, &kept).map(Bytes::from);
        if let Ok(file) = &file {
            *made = Some((generation, seconds, file.clone()));
        }
        Some(file)
    }

    fn read(&self) -> RwLockReadGuard<'_, Recent> {
        self.recent.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Recent> {
        self.recent.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What of `snapshot` the kept stacks need: each event's total for the
/// profiles' exact time (not per CPU), its time and sampling.
fn sampled(
    snapshot: &Snapshot,
    stacks: Vec<StackCount>,
    modules: std::collections::BTreeMap<String, String>,
) -> Snapshot {
    let mut sampled = Snapshot::empty(&snapshot.backend, 0);
    sampled.ts = snapshot.ts;
    sampled.interval_s = snapshot.interval_s;
    sampled.sampling = snapshot.sampling.clone();
    for (key, time) in &snapshot.events {
        let total = sampled.events.entry(*key).or_default();
        total.total_ns = time.total_ns;
        total.count = time.count;
    }
    sampled.stacks = stacks;
    sampled.modules = modules;
    // Who each stack was for: the OTLP exporter's `group` attribute.
    sampled.attribution = snapshot.attribution.clone();
    sampled
}

/// About what a kept attribution holds: its groups' names and times.
fn attribution_bytes(attribution: &crate::model::Attribution) -> usize {
    let events = |n: usize| n * 2 * std::mem::size_of::<u64>();
    attribution
        .groups
        .iter()
        .map(|g| std::mem::size_of_val(g) + g.name.len() + g.label.len() + events(g.events.len()))
        .sum::<usize>()
        + events(attribution.unattributed.len())
}

/// A panic while holding a drawing's lock leaves at worst a stale drawing,
/// which the next snapshot replaces.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn end_event() -> Bytes {
    stream::event("end", b"{}")
}

mod export_window;
#[cfg(test)]
mod tests;
