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
//! outside the history's lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard};
use std::time::Instant;

use actix_web::web::Bytes;
use serde::{Deserialize, Serialize};

use super::metrics::{Metrics, MetricsError};
use super::recording;
use super::stream::{self, StreamError, Streams};
use crate::frontends::flame::{
    any_estimated, flame_stacks, folded, pprof, svg, FlameError, FlameStack, Labels, Scope, Weight,
};
use crate::history::{stack_bytes, Entry, History};
use crate::model::{Snapshot, StackCount};
use crate::source::{Origin, SourceInfo};

/// How the server was started, shown by the page and the source endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServeSettings {
    /// Seconds of snapshots kept.
    pub history_s: f64,
    /// The flame graph's window when a request names none.
    pub flame_s: f64,
    /// `--serve-budget`: the most CPU serving may take, percent of one CPU.
    pub serve_budget_percent: f64,
}

/// The flame graph windows the page offers, in seconds. A request names
/// one of them, so each is drawn at most once per snapshot whatever the
/// clients ask.
pub const FLAME_WINDOWS_S: [f64; 4] = [10.0, 30.0, 60.0, 300.0];

/// One of [`FLAME_WINDOWS_S`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlameWindow(usize);

impl FlameWindow {
    /// The window a request gets when it names none.
    pub const DEFAULT: FlameWindow = FlameWindow(1);

    /// The window of exactly `seconds`, if one is offered.
    pub fn of(seconds: f64) -> Option<FlameWindow> {
        FLAME_WINDOWS_S
            .iter()
            .position(|w| *w == seconds)
            .map(FlameWindow)
    }

    pub fn seconds(self) -> f64 {
        FLAME_WINDOWS_S[self.0]
    }
}

/// The windows a pprof profile is drawn for, in seconds: profile scrapers
/// (Parca, Pyroscope) ask for their own scrape interval rather than one of
/// the page's windows, and any number of seconds is accepted; it is rounded
/// up to the next of these, so that a snapshot's profiles are a few
/// encodings shared by every client, whatever windows they ask for. The
/// last is the longest flame window (how long stacks are kept).
pub const PROFILE_WINDOWS_S: [u32; 10] = [1, 2, 5, 10, 15, 20, 30, 60, 120, 300];

/// One of [`PROFILE_WINDOWS_S`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProfileWindow(u32);

impl ProfileWindow {
    /// `seconds` rounded up to the next profile window, if positive and
    /// within the longest.
    pub fn of(seconds: f64) -> Option<ProfileWindow> {
        if !(seconds.is_finite() && seconds > 0.0) {
            return None;
        }
        PROFILE_WINDOWS_S
            .iter()
            .find(|&&w| f64::from(w) >= seconds)
            .map(|&w| ProfileWindow(w))
    }

    pub fn seconds(self) -> f64 {
        f64::from(self.0)
    }
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

/// What a window's flame graphs are drawn from, taken under the history
/// lock and drawn after it is released.
struct WindowStacks {
    generation: u64,
    sampled: Vec<Arc<Snapshot>>,
    covered_s: f64,
    newest_ts: f64,
}

/// Something drawn from the kept snapshots: redrawn only when a snapshot
/// arrived since. Requests for the same thing wait for one drawing rather
/// than each drawing their own.
struct Drawn<T> {
    slot: Mutex<Option<(u64, T)>>,
}

impl<T: Clone> Drawn<T> {
    fn new() -> Self {
        Drawn {
            slot: Mutex::new(None),
        }
    }

    /// The value drawn for the current generation, or `draw`n now from
    /// what `take` reads (under the history lock) when there is none.
    fn get<D>(
        &self,
        state: &State,
        take: impl FnOnce(&Recent) -> (u64, D),
        draw: impl FnOnce(D) -> T,
    ) -> T {
        let mut slot = lock(&self.slot);
        let (generation, input) = {
            let recent = state.read();
            if let Some((drawn_at, value)) = &*slot {
                if *drawn_at == recent.generation {
                    return value.clone();
                }
            }
            take(&recent)
        };
        let value = draw(input);
        *slot = Some((generation, value.clone()));
        value
    }
}

/// The drawings of one flame window in one [`Weight`].
struct Flame {
    folded: Drawn<Bytes>,
    svg: Drawn<Result<Bytes, FlameFailure>>,
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

/// What the health endpoint answers: whether snapshots still arrive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Health {
    pub status: HealthStatus,
    /// `live` or `replay`.
    pub source: &'static str,
    /// How many are kept.
    pub snapshots: usize,
    /// Seconds since the newest snapshot arrived; null before the first.
    pub last_snapshot_age_s: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    /// No snapshot yet: the first interval has not ended.
    Starting,
    /// Snapshots arrive.
    Ok,
    /// A live source whose snapshots stopped: more than
    /// `STALE_INTERVALS` intervals and `STALE_GRACE_S` since the last.
    Stale,
    /// A replay that played out, or a live run that stopped.
    Ended,
}

impl HealthStatus {
    /// Whether a probe should count the agent alive.
    pub fn healthy(self) -> bool {
        self != HealthStatus::Stale
    }
}

/// Intervals without a snapshot, plus a grace for a slow start of one
/// (a loaded host, a calibration interval), before a live source is
/// stale.
const STALE_INTERVALS: f64 = 3.0;
const STALE_GRACE_S: f64 = 10.0;

/// Encoded profiles by window and weight.
type Profiles = HashMap<(ProfileWindow, Weight), Bytes>;

/// A flame graph that could not be drawn, for the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlameFailure {
    NoSamples,
    Render(String),
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
                    .sum::<usize>(),
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

    /// How the source is doing, for the health endpoint.
    pub fn health(&self) -> Health {
        let recent = self.read();
        let live = self.info.origin == Origin::Live;
        let age_s = recent.arrived.map(|at| at.elapsed().as_secs_f64());
        let interval_s = recent.latest.as_ref().map_or(0.0, |s| s.interval_s);
        let status = match age_s {
            _ if recent.ended => HealthStatus::Ended,
            None => HealthStatus::Starting,
            Some(age) if live && age > STALE_INTERVALS * interval_s + STALE_GRACE_S => {
                HealthStatus::Stale
            }
            Some(_) => HealthStatus::Ok,
        };
        Health {
            status,
            source: if live { "live" } else { "replay" },
            snapshots: recent.summaries.len(),
            last_snapshot_age_s: age_s,
        }
    }

    /// Folded stacks of `window`, widths in `weight`.
    pub fn folded(&self, window: FlameWindow, weight: Weight) -> Bytes {
        self.flames[window.0][weight as usize].folded.get(
            self,
            |r| take_window(r, window),
            |part| {
                let mut out = Vec::new();
                folded::write_folded(&part.towers(weight), &mut out)
                    .expect("writing to memory cannot fail");
                Bytes::from(out)
            },
        )
    }

    /// The pprof profile (gzip-compressed) of `window`: the same stacks as
    /// the flame graphs, each context's exact time shared out over them,
    /// `weight` the value shown first. Encoded once per window, weight and
    /// snapshot.
    pub fn pprof(&self, window: ProfileWindow, weight: Weight) -> Bytes {
        let mut profiles = lock(&self.profiles);
        let (generation, part) = {
            let recent = self.read();
            if profiles.0 == recent.generation {
                if let Some(profile) = profiles.1.get(&(window, weight)) {
                    return profile.clone();
                }
            }
            take_span(&recent, window.seconds())
        };
        let labels = self.window_labels(&part);
        let mut out = Vec::new();
        pprof::write_pprof(
            part.sampled.iter().map(Arc::as_ref),
            &labels,
            weight,
            Scope::All,
            &mut out,
        )
        .expect("writing to memory cannot fail");
        let profile = Bytes::from(out);
        if profiles.0 != generation {
            *profiles = (generation, HashMap::new());
        }
        profiles.1.insert((window, weight), profile.clone());
        profile
    }

    /// The title and subtitle of a graph or profile drawn from `part`.
    fn window_labels(&self, part: &WindowStacks) -> Labels {
        Labels {
            title: format!("Kernel network stack CPU on {}", self.info.host),
            subtitle: format!(
                "last {} s up to {}, kernel {}, {} backend",
                part.covered_s.round(),
                clock(part.newest_ts),
                self.info.kernel,
                self.info.backend
            ),
            estimated: any_estimated(part.sampled.iter().map(Arc::as_ref)),
        }
    }

    /// The flame graph of `window`, widths in `weight`.
    pub fn flame_svg(&self, window: FlameWindow, weight: Weight) -> Result<Bytes, FlameFailure> {
        self.flames[window.0][weight as usize].svg.get(
            self,
            |r| take_window(r, window),
            |part| {
                let labels = self.window_labels(&part);
                let mut out = Vec::new();
                match svg::write_categorized_svg(&part.towers(weight), &labels, weight, &mut out) {
                    Ok(()) => Ok(Bytes::from(out)),
                    Err(FlameError::NoSamples) => Err(FlameFailure::NoSamples),
                    Err(e) => Err(FlameFailure::Render(e.to_string())),
                }
            },
        )
    }

    fn read(&self) -> RwLockReadGuard<'_, Recent> {
        self.recent.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Recent> {
        self.recent.write().unwrap_or_else(PoisonError::into_inner)
    }
}

fn take_window(recent: &Recent, window: FlameWindow) -> (u64, WindowStacks) {
    take_span(recent, window.seconds())
}

fn take_span(recent: &Recent, seconds: f64) -> (u64, WindowStacks) {
    let taken: Vec<&Stacks> = recent.stacks.last(seconds).collect();
    let part = WindowStacks {
        generation: recent.generation,
        covered_s: taken.iter().map(|s| s.interval_s).sum(),
        sampled: taken.iter().map(|s| s.sampled.clone()).collect(),
        newest_ts: recent.latest.as_ref().map_or(0.0, |s| s.ts),
    };
    (part.generation, part)
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
    sampled
}

impl WindowStacks {
    fn towers(&self, weight: Weight) -> Vec<FlameStack> {
        flame_stacks(self.sampled.iter().map(Arc::as_ref), weight, Scope::All)
    }
}

/// A panic while holding a drawing's lock leaves at worst a stale drawing,
/// which the next snapshot replaces.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn end_event() -> Bytes {
    stream::event("end", b"{}")
}

/// Time of day (UTC) of a unix timestamp, for the flame graph's subtitle.
fn clock(ts: f64) -> String {
    let seconds = ts.max(0.0) as u64 % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests;
