//! The pipe from `netto serve` (which measures) to its serving process:
//! one JSON message per line. First what to serve, then every snapshot,
//! then, if the source ends while netto keeps serving (a replay played
//! out), that it has ended. The pipe closing means netto is stopping.

use std::io::{self, BufRead, Write};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::host_header::HostCheck;
use super::otlp::Headers;
use super::state::{ServeSettings, State};
use crate::model::Snapshot;
use crate::source::SourceInfo;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feed {
    Start(Box<ServeStart>),
    Snapshot(Box<Snapshot>),
    End,
}

#[derive(Debug, Error)]
pub enum FeedError {
    #[error("reading the feed: {0}")]
    Read(io::Error),
    #[error("writing the feed: {0}")]
    Write(io::Error),
    #[error("a bad message on the feed: {0}")]
    Bad(serde_json::Error),
    #[error("the feed did not start with what to serve")]
    NoStart,
}

/// Sends one message (and flushes, so it arrives now).
pub fn send(out: &mut impl Write, message: &Feed) -> Result<(), FeedError> {
    let mut line = serde_json::to_vec(message).map_err(FeedError::Bad)?;
    line.push(b'\n');
    out.write_all(&line)
        .and_then(|()| out.flush())
        .map_err(FeedError::Write)
}

/// The next message; `None` when the pipe has closed.
pub fn receive(input: &mut impl BufRead, line: &mut String) -> Result<Option<Feed>, FeedError> {
    line.clear();
    if input.read_line(line).map_err(FeedError::Read)? == 0 {
        return Ok(None);
    }
    serde_json::from_str(line).map(Some).map_err(FeedError::Bad)
}

/// What to serve: the first message.
pub fn start(input: &mut impl BufRead) -> Result<ServeStart, FeedError> {
    match receive(input, &mut String::new())? {
        Some(Feed::Start(start)) => Ok(*start),
        _ => Err(FeedError::NoStart),
    }
}

/// What the first message says to serve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeStart {
    pub info: SourceInfo,
    pub settings: ServeSettings,
    pub hosts: HostCheck,
    /// `--otlp-headers-file`'s headers: here, not on the serving
    /// process's command line, which any user can read.
    #[serde(default, skip_serializing_if = "Headers::is_empty")]
    pub otlp_headers: Headers,
}

/// Every snapshot into `state` until the pipe closes; an end of the
/// source is passed on to the stream clients.
pub fn pump(input: &mut impl BufRead, state: &State) -> Result<(), FeedError> {
    let mut line = String::new();
    while let Some(message) = receive(input, &mut line)? {
        match message {
            Feed::Snapshot(snapshot) => state.publish(*snapshot),
            Feed::End => state.end(),
            Feed::Start(_) => return Err(FeedError::NoStart),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::notes::Note;
    use crate::source::Origin;

    fn info() -> SourceInfo {
        SourceInfo {
            host: "box".into(),
            kernel: "6.8".into(),
            backend: "tracepoint".into(),
            frequency_hz: None,
            origin: Origin::Live,
            notes: vec![Note::Calibrating { every_s: 30.0 }],
        }
    }

    fn settings() -> ServeSettings {
        ServeSettings {
            history_s: 60.0,
            flame_s: 30.0,
            serve_budget_percent: 2.0,
            otlp: false,
        }
    }

    #[test]
    fn messages_arrive_as_sent() {
        let mut snapshot = Snapshot::empty("tracepoint", 2);
        snapshot.ts = 12.5;
        let sent = [
            Feed::Start(Box::new(ServeStart {
                info: info(),
                settings: settings(),
                hosts: HostCheck::new(false, &["node1".into()]),
                otlp_headers: Headers::parse("authorization: Bearer t").unwrap(),
            })),
            Feed::Snapshot(Box::new(snapshot)),
            Feed::End,
        ];
        let mut pipe = Vec::new();
        for message in &sent {
            send(&mut pipe, message).unwrap();
        }
        assert_eq!(pipe.iter().filter(|b| **b == b'\n').count(), 3);
        let mut input = pipe.as_slice();
        let mut line = String::new();
        for message in &sent {
            assert_eq!(
                receive(&mut input, &mut line).unwrap().as_ref(),
                Some(message)
            );
        }
        assert!(receive(&mut input, &mut line).unwrap().is_none());
    }

    #[test]
    fn the_pump_publishes_and_ends() {
        let state = State::new(info(), settings()).unwrap();
        let mut pipe = Vec::new();
        for ts in [1.0, 2.0] {
            let mut snapshot = Snapshot::empty("tracepoint", 1);
            snapshot.ts = ts;
            snapshot.interval_s = 1.0;
            send(&mut pipe, &Feed::Snapshot(Box::new(snapshot))).unwrap();
        }
        send(&mut pipe, &Feed::End).unwrap();
        pump(&mut pipe.as_slice(), &state).unwrap();
        assert_eq!(state.snapshots(), 2);
        assert!(state.ended());
    }

    #[test]
    fn a_bad_feed_is_an_error() {
        let state = State::new(info(), settings()).unwrap();
        assert!(matches!(
            pump(&mut b"{\"snapshot\": 1}\n".as_slice(), &state),
            Err(FeedError::Bad(_))
        ));
        assert!(matches!(
            start(&mut b"\"end\"\n".as_slice()),
            Err(FeedError::NoStart)
        ));
        assert!(matches!(
            start(&mut b"".as_slice()),
            Err(FeedError::NoStart)
        ));
    }
}
