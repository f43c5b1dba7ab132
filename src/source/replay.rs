//! The replay source: a recording's snapshots at the pace they were
//! measured (or faster), through the same stream a live run produces. No
//! root, no BPF.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::notes::Note;
use super::{Control, Origin, Source, SourceInfo};
use crate::model::Snapshot;
use crate::recording::ValidRecording;

/// Plays `recording` back, `speed` times faster than it was measured
/// (`f64::INFINITY`: all at once). `path` names it for the front end.
/// Only a validated recording plays: its intervals and `speed` (bounded by
/// the command line) keep every pause within a `Duration`.
pub fn start(recording: ValidRecording, path: &str, speed: f64) -> Result<Source> {
    let recording = recording.into_inner();
    let header = &recording.header;
    let info = SourceInfo {
        host: header.host.clone(),
        kernel: header.kernel.clone(),
        backend: header.backend.clone(),
        frequency_hz: (header.frequency_hz > 0).then_some(header.frequency_hz),
        origin: Origin::Replay(path.to_owned()),
        notes: vec![Note::Replaying {
            path: path.to_owned(),
            snapshots: recording.snapshots.len(),
            duration_s: header.duration_s,
            speed: speed.is_finite().then_some(speed),
        }],
    };
    let (control_tx, control_rx) = mpsc::channel();
    let (snapshot_tx, snapshot_rx) = mpsc::channel();
    let thread = thread::Builder::new()
        .name("netto-replay".into())
        .spawn(move || {
            play(recording.snapshots, speed, &control_rx, &snapshot_tx);
            Ok(())
        })
        .context("starting the replay thread")?;
    Ok(Source {
        info,
        snapshots: snapshot_rx,
        control: control_tx,
        thread: Some(thread),
    })
}

fn play(snapshots: Vec<Snapshot>, speed: f64, control: &Receiver<Control>, out: &Sender<Snapshot>) {
    let mut due = Instant::now();
    for snapshot in snapshots {
        due += pause(snapshot.interval_s, speed);
        // Frequency, attribution and tier changes mean nothing to a
        // recording; only Stop counts.
        loop {
            let timeout = due.saturating_duration_since(Instant::now());
            match control.recv_timeout(timeout) {
                Err(RecvTimeoutError::Timeout) => break,
                Ok(
                    Control::SetFrequency(_)
                    | Control::OwnProcess(_)
                    | Control::SetAttribution(_)
                    | Control::SetTier(_),
                ) => {}
                Ok(Control::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        if out.send(snapshot).is_err() {
            return;
        }
    }
}

fn pause(interval_s: f64, speed: f64) -> Duration {
    if speed.is_finite() && speed > 0.0 && interval_s > 0.0 {
        Duration::from_secs_f64(interval_s / speed)
    } else {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Recording, RecordingHeader};

    fn recording(n: usize, interval_s: f64) -> ValidRecording {
        let snapshot = |i: usize| Snapshot {
            ts: i as f64,
            interval_s,
            ..Snapshot::empty("tracepoint", 2)
        };
        let recording = Recording {
            header: RecordingHeader {
                schema_version: crate::model::SchemaVersion,
                netto_version: "0".into(),
                host: "h".into(),
                kernel: "k".into(),
                started: 0.0,
                duration_s: n as f64 * interval_s,
                frequency_hz: 99,
                backend: "tracepoint".into(),
                transport: "mmap".into(),
            },
            snapshots: (0..n).map(snapshot).collect(),
        };
        ValidRecording::new(recording).unwrap()
    }

    #[test]
    fn delivers_every_snapshot_in_order_then_closes() {
        let source = start(recording(5, 1.0), "r.json", f64::INFINITY).unwrap();
        assert_eq!(source.info.frequency_hz, Some(99));
        assert!(!source.is_live());
        let got: Vec<f64> = source.snapshots.iter().map(|s| s.ts).collect();
        assert_eq!(got, [0.0, 1.0, 2.0, 3.0, 4.0]);
        source.finish().unwrap();
    }

    #[test]
    fn keeps_the_recorded_pace_scaled_by_speed() {
        // 4 intervals of 0.5 s at 10x: 0.2 s in all.
        let started = Instant::now();
        let source = start(recording(4, 0.5), "r.json", 10.0).unwrap();
        assert_eq!(source.snapshots.iter().count(), 4);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(195), "{took:?}");
    }

    #[test]
    fn stop_ends_the_stream_early() {
        let source = start(recording(1000, 1.0), "r.json", 1.0).unwrap();
        source.stop();
        assert_eq!(source.snapshots.iter().count(), 0);
    }
}
