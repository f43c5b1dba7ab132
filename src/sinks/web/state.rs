//! What the web server knows: the source's description, the recent past
//! (for the history endpoint, new clients and flame graphs of the last N
//! seconds), the cumulative metrics and the stream clients. The hub thread
//! is its only writer, one snapshot at a time; request handlers only read.

use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use actix_web::web::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::metrics::{Metrics, MetricsError};
use super::stream::{self, StreamError, Streams};
use crate::model::Snapshot;
use crate::sinks::flame::{pprof, svg, FlameError, Labels};
use crate::sinks::history::History;
use crate::source::SourceInfo;

/// How the server was started, shown by the page and the source endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settings {
    /// Seconds of snapshots kept.
    pub history_s: f64,
    /// The flame graph's window when a request names none.
    pub flame_s: f64,
}

struct Recent {
    history: History,
    /// Bumped per snapshot; keys the flame graph cache.
    generation: u64,
    ended: bool,
}

/// The last flame graph drawn: every page reloads the same picture after
/// each snapshot, so it is drawn once per snapshot, not once per client.
struct FlameCache {
    generation: u64,
    seconds: f64,
    svg: Result<Arc<Vec<u8>>, FlameFailure>,
}

pub struct State {
    pub info: SourceInfo,
    pub settings: Settings,
    pub metrics: Metrics,
    pub streams: Streams,
    recent: RwLock<Recent>,
    flame: Mutex<Option<FlameCache>>,
}

/// A flame graph that could not be drawn, for the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlameFailure {
    NoSamples,
    Render(String),
}

impl State {
    pub fn new(info: SourceInfo, settings: Settings) -> Result<State, MetricsError> {
        Ok(State {
            metrics: Metrics::new(&info)?,
            info,
            streams: Streams::default(),
            recent: RwLock::new(Recent {
                history: History::new(settings.history_s),
                generation: 0,
                ended: false,
            }),
            flame: Mutex::new(None),
            settings,
        })
    }

    /// Takes in the next snapshot: counters, history, and every stream
    /// client, in that order, so a scrape or page never sees a snapshot
    /// in one place and not yet counted in another.
    pub fn publish(&self, snapshot: Snapshot) {
        self.metrics.add(&snapshot);
        let message = snapshot_event(&snapshot);
        let delivery = {
            let mut recent = self.write();
            recent.history.push(snapshot);
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
        let mut backlog: Vec<Bytes> = match since {
            Some(since) => recent
                .history
                .iter()
                .filter(|s| s.ts > since)
                .map(snapshot_event)
                .collect(),
            None => recent
                .history
                .latest()
                .map(snapshot_event)
                .into_iter()
                .collect(),
        };
        if recent.ended {
            backlog.push(end_event());
        }
        let rx = self.streams.subscribe(backlog, !recent.ended);
        self.metrics.set_stream_clients(self.streams.len(), 0);
        rx
    }

    /// The latest snapshot, stacks included.
    pub fn latest(&self) -> Option<Snapshot> {
        self.read().history.latest().cloned()
    }

    /// Snapshots of the last `seconds` without their stacks (the flame
    /// graph endpoints serve those), oldest first.
    pub fn history(&self, seconds: f64) -> Vec<Value> {
        self.read().history.last(seconds).map(summary).collect()
    }

    pub fn snapshots(&self) -> usize {
        self.read().history.len()
    }

    /// Folded stacks of the last `seconds`.
    pub fn folded(&self, seconds: f64) -> Vec<u8> {
        let stacks = self.read().history.stacks(seconds);
        let mut out = Vec::new();
        crate::sinks::flame::folded::write_folded(&stacks, &mut out)
            .expect("writing to memory cannot fail");
        out
    }

    /// A pprof profile (gzip-compressed) of the last `seconds`: the same
    /// window and stacks as [`folded`](Self::folded), with each context's
    /// exact time shared out over its stacks.
    pub fn pprof(&self, seconds: f64) -> Vec<u8> {
        let recent = self.read();
        let snapshots: Vec<&Snapshot> = recent.history.last(seconds).collect();
        let newest = snapshots.last().map_or(0.0, |s| s.ts);
        let mut out = Vec::new();
        pprof::write_pprof(snapshots, &self.window_labels(seconds, newest), &mut out)
            .expect("writing to memory cannot fail");
        out
    }

    /// The title and subtitle of a graph or profile of the last `seconds`
    /// up to `newest`.
    fn window_labels(&self, seconds: f64, newest: f64) -> Labels {
        Labels {
            title: format!("Kernel network stack CPU on {}", self.info.host),
            subtitle: format!(
                "last {seconds} s up to {}, kernel {}, {} backend",
                clock(newest),
                self.info.kernel,
                self.info.backend
            ),
        }
    }

    /// The flame graph of the last `seconds`, from the cache when nothing
    /// changed since it was drawn.
    pub fn flame_svg(&self, seconds: f64) -> Result<Arc<Vec<u8>>, FlameFailure> {
        let (generation, stacks, newest) = {
            let recent = self.read();
            let cached = self.flame_cache();
            if let Some(hit) = cached
                .as_ref()
                .filter(|c| c.generation == recent.generation && c.seconds == seconds)
            {
                return hit.svg.clone();
            }
            let newest = recent.history.latest().map_or(0.0, |s| s.ts);
            (recent.generation, recent.history.stacks(seconds), newest)
        };
        let labels = self.window_labels(seconds, newest);
        let mut out = Vec::new();
        let svg = match svg::write_categorized_svg(&stacks, &labels, &mut out) {
            Ok(()) => Ok(Arc::new(out)),
            Err(FlameError::NoSamples) => Err(FlameFailure::NoSamples),
            Err(e) => Err(FlameFailure::Render(e.to_string())),
        };
        *self.flame_cache() = Some(FlameCache {
            generation,
            seconds,
            svg: svg.clone(),
        });
        svg
    }

    fn flame_cache(&self) -> std::sync::MutexGuard<'_, Option<FlameCache>> {
        self.flame
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn read(&self) -> RwLockReadGuard<'_, Recent> {
        self.recent
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Recent> {
        self.recent
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A snapshot as the page and the history endpoint see it: everything but
/// the stacks, which are large and served as flame graphs instead.
fn summary(snapshot: &Snapshot) -> Value {
    let mut value = serde_json::to_value(snapshot).expect("a snapshot serializes");
    if let Value::Object(fields) = &mut value {
        fields.remove("stacks");
    }
    value
}

fn snapshot_event(snapshot: &Snapshot) -> Bytes {
    stream::event("snapshot", summary(snapshot).to_string().as_bytes())
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
    use crate::model::{SampleContext, StackCount};

    fn state() -> State {
        let info = SourceInfo {
            host: "box".into(),
            kernel: "6.8".into(),
            backend: "tracepoint".into(),
            frequency_hz: Some(99),
            origin: "live".into(),
            notes: vec![],
        };
        let settings = Settings {
            history_s: 10.0,
            flame_s: 5.0,
        };
        State::new(info, settings).unwrap()
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
        assert!(history[0].get("stacks").is_none());
        // The stacks are still there for the latest snapshot and the graphs.
        assert_eq!(state.latest().unwrap().stacks.len(), 1);
        assert_eq!(
            String::from_utf8(state.folded(5.0)).unwrap(),
            "net_rx;net_rx_action;tcp_v4_rcv 3\n"
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
        assert_eq!(drain(&mut since).len(), 2);
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
    fn flame_graph_drawn_once_per_snapshot_and_window() {
        let state = state();
        assert_eq!(state.flame_svg(5.0).unwrap_err(), FlameFailure::NoSamples);
        state.publish(snapshot(1.0, 5));
        let first = state.flame_svg(5.0).unwrap();
        assert!(Arc::ptr_eq(&first, &state.flame_svg(5.0).unwrap()));
        assert!(!Arc::ptr_eq(&first, &state.flame_svg(2.0).unwrap()));
        state.publish(snapshot(2.0, 5));
        let second = state.flame_svg(5.0).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        let text = String::from_utf8(second.to_vec()).unwrap();
        assert!(text.contains("tcp_v4_rcv"));
        assert!(text.contains("Kernel network stack CPU on box"));
    }

    #[test]
    fn clock_of_a_timestamp() {
        assert_eq!(clock(86_400.0 + 3_723.9), "01:02:03 UTC");
    }
}
