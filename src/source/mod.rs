//! Where snapshots come from. Every front end (stat, record, top, serve)
//! reads the same stream: a [`Source`] hands out [`Snapshot`]s one interval
//! at a time, whether they are measured now ([`live`]) or played back from a
//! recording ([`replay`]). Front ends therefore never touch BPF, and a
//! recording exercises exactly the code a live run does.

pub mod budget;
pub mod calibration_intervals;
pub mod duty;
pub mod intervals;
pub mod live;
pub mod notes;
pub mod replay;

use std::fmt;
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use crate::model::Snapshot;
use notes::Note;

/// What a front end shows about where its numbers come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceInfo {
    pub host: String,
    pub kernel: String,
    pub backend: String,
    /// Stack sampling frequency at the start; `None` when not sampling.
    pub frequency_hz: Option<u64>,
    pub origin: Origin,
    /// Things the user should know about this run (the backend, features
    /// this kernel lacks, the demo traffic), for each front end to word.
    pub notes: Vec<Note>,
}

/// Where a source's snapshots come from. In JSON `"live"`, or
/// `{"replay": PATH}`: a recording named `live` is still a replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Measured now.
    Live,
    /// Played back from the recording at this path.
    Replay(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Live => f.write_str("live"),
            Origin::Replay(path) => write!(f, "replay of {path}"),
        }
    }
}

/// A request to a running source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Control {
    /// End after the current interval (live: with a final, shorter
    /// snapshot when the source was configured to flush).
    Stop,
    /// Change the sampling frequency; takes effect within one drain period.
    SetFrequency(u64),
    /// Count process PID's CPU time as netto's own cost from now on (the
    /// HTTP server process of `serve`); replays ignore it.
    OwnProcess(u32),
    /// Turn attribution (`--by`) on or off: its programs are attached or
    /// detached, and snapshots say which. Nothing without `--by`.
    SetAttribution(bool),
    /// Change the tier when the interval in progress ends; a lower tier
    /// turns attribution off. Taken only by a source that samples, since
    /// the lower tiers estimate from samples.
    SetTier(crate::model::Tier),
}

/// A running source: its snapshots arrive on [`Source::snapshots`], which
/// closes when the source ends. Dropping it stops the source and waits
/// for it, so BPF links and the demo namespace are gone afterwards.
pub struct Source {
    pub info: SourceInfo,
    pub snapshots: Receiver<Snapshot>,
    control: Sender<Control>,
    thread: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Source {
    /// A handle other threads (signal handlers, web requests) can use.
    pub fn controller(&self) -> Sender<Control> {
        self.control.clone()
    }

    /// Whether the source measures now (only then can the frequency change).
    pub fn is_live(&self) -> bool {
        self.info.origin == Origin::Live
    }

    pub fn stop(&self) {
        let _ = self.control.send(Control::Stop);
    }

    /// Stops the source and returns how it ended.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.stop();
        self.join()
    }

    fn join(&mut self) -> anyhow::Result<()> {
        match self.thread.take().map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(anyhow::anyhow!("the measuring thread panicked")),
        }
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        self.stop();
        let _ = self.join();
    }
}
