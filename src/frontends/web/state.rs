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
mod tests {
    use super::*;
    use crate::model::SampleContext;

    fn state_with(history_s: f64) -> State {
        let info = SourceInfo {
            host: "box".into(),
            kernel: "6.8".into(),
            backend: "tracepoint".into(),
            frequency_hz: Some(99),
            origin: Origin::Live,
            notes: vec![],
        };
        let settings = ServeSettings {
            history_s,
            flame_s: 30.0,
            serve_budget_percent: 2.0,
        };
        State::new(info, settings).unwrap()
    }

    fn state() -> State {
        state_with(10.0)
    }

    fn snapshot(ts: f64, samples: u64) -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 1);
        s.ts = ts;
        s.interval_s = 1.0;
        if samples > 0 {
            s.stacks = vec![StackCount::of(
                SampleContext::NetRx,
                &["net_rx_action", "tcp_v4_rcv"],
                samples,
            )];
        }
        s
    }

    fn drain(rx: &mut tokio::sync::mpsc::Receiver<Bytes>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|b| String::from_utf8(b.to_vec()).unwrap())
            .collect()
    }

    fn window(seconds: f64) -> FlameWindow {
        FlameWindow::of(seconds).unwrap()
    }

    #[test]
    fn history_and_events_leave_the_stacks_out() {
        let state = state();
        let mut client = state.subscribe(None).unwrap();
        state.publish(snapshot(1.0, 3));
        let events = drain(&mut client);
        assert_eq!(events.len(), 1);
        assert!(events[0].starts_with("event: snapshot\ndata: {"));
        assert!(!events[0].contains("tcp_v4_rcv"));
        let history = state.history(10.0);
        assert_eq!(history.len(), 1);
        let parsed: serde_json::Value = serde_json::from_slice(&history[0]).unwrap();
        assert_eq!(parsed["ts"], 1.0);
        assert!(parsed.get("stacks").is_none());
        // The stacks are still there for the latest snapshot and the graphs.
        let latest: Snapshot = serde_json::from_slice(&state.latest_json().unwrap()).unwrap();
        assert_eq!(latest.stacks.len(), 1);
        assert_eq!(latest, snapshot(1.0, 3));
        assert_eq!(
            &state.folded(window(10.0), Weight::Samples)[..],
            b"net_rx;net_rx_action;tcp_v4_rcv 3\n"
        );
    }

    #[test]
    fn folded_stacks_in_exact_time_or_samples() {
        let state = state();
        let mut sampled = snapshot(1.0, 3);
        let rx = sampled
            .events
            .get_mut(&crate::model::EventKey::NetRxSoftirq)
            .unwrap();
        rx.total_ns = 9_000;
        sampled
            .events
            .get_mut(&crate::model::EventKey::NetTimers)
            .unwrap()
            .total_ns = 500;
        state.publish(sampled);
        assert_eq!(
            &state.folded(window(10.0), Weight::Time)[..],
            &b"net_rx;net_rx_action;tcp_v4_rcv 9000\nnet_timers;[not sampled] 500\n"[..]
        );
        assert_eq!(
            &state.folded(window(10.0), Weight::Samples)[..],
            b"net_rx;net_rx_action;tcp_v4_rcv 3\n"
        );
    }

    #[test]
    fn history_and_streams_share_one_serialization() {
        let state = state();
        state.publish(snapshot(1.0, 3));
        state.publish(snapshot(2.0, 3));
        let mut client = state.subscribe(Some(0.0)).unwrap();
        let event = client.try_recv().unwrap();
        let first = state.history(10.0);
        let again = state.history(10.0);
        // The same bytes, not a copy: the history's JSON lies inside the
        // event every stream client gets.
        assert_eq!(first[0].as_ptr(), again[0].as_ptr());
        let inside = event.as_ptr_range();
        assert!(inside.contains(&first[0].as_ptr()));
        assert_eq!(
            event,
            Bytes::from(format!(
                "event: snapshot\ndata: {}\n\n",
                std::str::from_utf8(&first[0]).unwrap()
            ))
        );
        assert_eq!(
            state.latest_json().unwrap().as_ptr(),
            state.latest_json().unwrap().as_ptr()
        );
    }

    #[test]
    fn new_clients_get_what_they_missed_then_the_end() {
        let state = state();
        for ts in 1..=4 {
            state.publish(snapshot(f64::from(ts), 0));
        }
        let mut since = state.subscribe(Some(2.0)).unwrap();
        let mut latest = state.subscribe(None).unwrap();
        let missed = drain(&mut since);
        assert_eq!(missed.len(), 2);
        assert!(missed[0].contains("\"ts\":3.0"));
        let only = drain(&mut latest);
        assert_eq!(only.len(), 1);
        assert!(only[0].contains("\"ts\":4.0"));
        state.end();
        assert!(state.ended());
        assert_eq!(drain(&mut since), ["event: end\ndata: {}\n\n"]);
        assert!(since.is_closed());
        let mut late = state.subscribe(None).unwrap();
        assert_eq!(drain(&mut late).len(), 2);
        assert!(late.is_closed());
    }

    #[test]
    fn only_the_offered_windows() {
        assert_eq!(FlameWindow::of(30.0), Some(FlameWindow::DEFAULT));
        assert_eq!(FlameWindow::DEFAULT.seconds(), 30.0);
        for seconds in FLAME_WINDOWS_S {
            assert_eq!(window(seconds).seconds(), seconds);
        }
        for seconds in [0.0, 29.999_999, 30.000_000_1, 301.0, f64::NAN] {
            assert_eq!(FlameWindow::of(seconds), None, "{seconds}");
        }
    }

    #[test]
    fn flame_graph_drawn_once_per_snapshot_and_window() {
        let state = state();
        assert_eq!(
            state.flame_svg(window(10.0), Weight::Samples).unwrap_err(),
            FlameFailure::NoSamples
        );
        state.publish(snapshot(1.0, 5));
        let first = state.flame_svg(window(10.0), Weight::Samples).unwrap();
        assert_eq!(
            first.as_ptr(),
            state
                .flame_svg(window(10.0), Weight::Samples)
                .unwrap()
                .as_ptr()
        );
        let other = state.flame_svg(window(30.0), Weight::Samples).unwrap();
        assert_ne!(first.as_ptr(), other.as_ptr());
        state.publish(snapshot(2.0, 5));
        let second = state.flame_svg(window(10.0), Weight::Samples).unwrap();
        assert_ne!(first.as_ptr(), second.as_ptr());
        let text = String::from_utf8(second.to_vec()).unwrap();
        assert!(text.contains("tcp_v4_rcv"));
        assert!(text.contains("Kernel network stack CPU on box"));
        assert!(text.contains("last 2 s up to 00:00:02 UTC"), "{text}");
    }

    #[test]
    fn profile_windows_round_up_to_a_few_up_to_the_kept_stacks() {
        assert_eq!(ProfileWindow::of(15.0).unwrap().seconds(), 15.0);
        assert_eq!(ProfileWindow::of(14.2).unwrap().seconds(), 15.0);
        assert_eq!(ProfileWindow::of(7.0).unwrap().seconds(), 10.0);
        assert_eq!(ProfileWindow::of(0.001).unwrap().seconds(), 1.0);
        assert_eq!(ProfileWindow::of(300.0).unwrap().seconds(), 300.0);
        for bad in [0.0, -1.0, 300.5, f64::NAN, f64::INFINITY] {
            assert_eq!(ProfileWindow::of(bad), None, "{bad}");
        }
        // Whatever windows clients ask for, a snapshot has a few profiles.
        let distinct: std::collections::BTreeSet<u32> = (1..=300)
            .map(|s| ProfileWindow::of(f64::from(s)).unwrap().0)
            .collect();
        assert_eq!(distinct.len(), PROFILE_WINDOWS_S.len());
    }

    #[test]
    fn profile_encoded_once_per_snapshot_and_window_with_exact_time() {
        let state = state();
        let mut first = snapshot(1.0, 4);
        first
            .events
            .get_mut(&crate::model::EventKey::NetRxSoftirq)
            .unwrap()
            .total_ns = 8_000;
        state.publish(first);
        let window = ProfileWindow::of(10.0).unwrap();
        let profile = state.pprof(window, Weight::Time);
        assert_eq!(profile.as_ptr(), state.pprof(window, Weight::Time).as_ptr());
        let other = state.pprof(ProfileWindow::of(15.0).unwrap(), Weight::Time);
        assert_ne!(profile.as_ptr(), other.as_ptr());
        // The kept stacks still know the exact time they stand for.
        let mut gz = flate2::read::GzDecoder::new(&profile[..]);
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut gz, &mut bytes).unwrap();
        let decoded: pprof::proto::Profile = prost::Message::decode(&bytes[..]).unwrap();
        let values: Vec<Vec<i64>> = decoded.sample.iter().map(|s| s.value.clone()).collect();
        assert_eq!(values, [vec![4, 8_000]]);
        state.publish(snapshot(2.0, 1));
        assert_ne!(profile.as_ptr(), state.pprof(window, Weight::Time).as_ptr());
    }

    #[test]
    fn drawing_does_not_hold_the_history() {
        let state = Arc::new(state());
        state.publish(snapshot(1.0, 5));
        // While a window is being drawn, snapshots still arrive and the
        // history is read.
        let drawing = state.flames[0][Weight::Samples as usize].svg.get(
            &state,
            |r| take_window(r, window(10.0)),
            |part| {
                state.publish(snapshot(2.0, 5));
                assert_eq!(state.history(10.0).len(), 2);
                Ok(Bytes::from(
                    part.towers(Weight::Samples)[0].width.to_string(),
                ))
            },
        );
        // The drawing is of what was taken, and stale now.
        assert_eq!(drawing.unwrap(), "5");
        assert!(state
            .flame_svg(window(10.0), Weight::Samples)
            .unwrap()
            .starts_with(b"<?xml"));
    }

    #[test]
    fn stacks_are_kept_as_long_as_the_history() {
        for (history_s, kept) in [(3600.0, 400), (100.0, 100)] {
            let state = state_with(history_s);
            for ts in 1..=400 {
                state.publish(snapshot(f64::from(ts), 1));
            }
            let recent = state.read();
            assert_eq!(recent.summaries.len(), kept);
            assert_eq!(recent.stacks.len(), kept);
        }
        let state = state_with(3600.0);
        for ts in 1..=400 {
            state.publish(snapshot(f64::from(ts), 1));
        }
        assert_eq!(
            &state.folded(window(300.0), Weight::Samples)[..],
            b"net_rx;net_rx_action;tcp_v4_rcv 300\n"
        );
    }

    /// A recording of the last N seconds holds the snapshots the history
    /// endpoint gives for N, whole: their stacks back in, and the header
    /// of the source, checked as `load` checks a file.
    #[test]
    fn a_recording_of_the_last_seconds_is_the_history_with_its_stacks() {
        let state = state();
        assert_eq!(state.recording(10.0), None);
        for ts in 1..=12 {
            let mut s = snapshot(f64::from(ts), u64::try_from(ts).unwrap());
            s.modules.insert("tcp_v4_rcv".into(), "vmlinux".into());
            state.publish(s);
        }
        let file = state.recording(4.0).unwrap().unwrap();
        let recording = crate::recording::parse(&file).unwrap();
        crate::recording::validate(&recording).unwrap();
        let history: Vec<Snapshot> = state
            .history(4.0)
            .iter()
            .map(|json| serde_json::from_slice(json).unwrap())
            .collect();
        assert_eq!(history.len(), 4);
        for (got, kept) in recording.snapshots.iter().zip(&history) {
            let whole = snapshot(kept.ts, kept.ts as u64);
            assert_eq!(got.stacks, whole.stacks);
            assert_eq!(got.modules["tcp_v4_rcv"], "vmlinux");
            assert_eq!(
                Snapshot {
                    stacks: vec![],
                    modules: Default::default(),
                    ..got.clone()
                },
                *kept
            );
        }
        assert_eq!(recording.snapshots.len(), history.len());
        let header = &recording.header;
        assert_eq!((header.started, header.duration_s), (8.0, 4.0));
        assert_eq!((header.host.as_str(), header.frequency_hz), ("box", 99));
        assert_eq!(header.transport, "mmap");
        // Made once per snapshot and span.
        assert_eq!(
            file.as_ptr(),
            state.recording(4.0).unwrap().unwrap().as_ptr()
        );
        assert_ne!(
            file.as_ptr(),
            state.recording(5.0).unwrap().unwrap().as_ptr()
        );
    }

    /// The stacks the budget no longer keeps are left out, the snapshots
    /// kept: the newest stacks go with the newest snapshots.
    #[test]
    fn a_recording_has_stacks_only_where_they_are_kept() {
        let state = state_with(60.0);
        {
            let mut recent = state.write();
            recent.stacks = History::with_budget(60.0, 1);
        }
        for ts in 1..=5 {
            state.publish(snapshot(f64::from(ts), 2));
        }
        let file = state.recording(60.0).unwrap().unwrap();
        let recording = crate::recording::parse(&file).unwrap();
        let stacks: Vec<usize> = recording.snapshots.iter().map(|s| s.stacks.len()).collect();
        assert_eq!(stacks, [0, 0, 0, 0, 1]);
    }

    #[test]
    fn health_says_whether_snapshots_arrive() {
        let state = state();
        let health = state.health();
        assert_eq!(
            (health.status, health.source, health.last_snapshot_age_s),
            (HealthStatus::Starting, "live", None)
        );
        state.publish(snapshot(1.0, 0));
        let health = state.health();
        assert_eq!((health.status, health.snapshots), (HealthStatus::Ok, 1));
        assert!(health.last_snapshot_age_s.unwrap() < 5.0);
        // The last one arrived long ago.
        state.write().arrived = Some(Instant::now() - std::time::Duration::from_secs(14));
        assert_eq!(state.health().status, HealthStatus::Stale);
        assert!(!HealthStatus::Stale.healthy());
        state.end();
        assert_eq!(state.health().status, HealthStatus::Ended);
    }

    #[test]
    fn clock_of_a_timestamp() {
        assert_eq!(clock(86_400.0 + 3_723.9), "01:02:03 UTC");
    }
}
