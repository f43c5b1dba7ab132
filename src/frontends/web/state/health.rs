//! Whether snapshots still arrive: the health endpoint's answer.

use serde::Serialize;

use super::State;
use crate::source::Origin;

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

impl State {
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
}
