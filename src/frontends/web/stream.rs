//! The push channel of the web view: Server-Sent Events. Each snapshot is
//! serialized once and handed to every client's own bounded queue without
//! waiting; a client whose queue is full has fallen too far behind and is
//! dropped (its stream ends after what is queued), so a slow or stalled
//! client never holds up the collector or the other clients.

use std::sync::Mutex;

use actix_web::web::Bytes;
use thiserror::Error;
use tokio::sync::mpsc::{self, error::TrySendError};

/// Events a client may have queued before it counts as stalled: several
/// seconds of snapshots at the shortest interval.
pub const QUEUE_EVENTS: usize = 64;

/// Stream clients served at once; more get 503.
pub const MAX_CLIENTS: usize = 256;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum StreamError {
    #[error("too many stream clients (at most {MAX_CLIENTS})")]
    TooMany,
}

/// How an SSE message is framed around its name and its data.
pub const EVENT_PREFIX: &str = "event: ";
pub const DATA_PREFIX: &str = "\ndata: ";
pub const EVENT_SUFFIX: &str = "\n\n";

/// One SSE message: `event` names it, `data` is one line of JSON.
pub fn event(kind: &str, data: &[u8]) -> Bytes {
    let mut message = Vec::with_capacity(
        EVENT_PREFIX.len() + kind.len() + DATA_PREFIX.len() + data.len() + EVENT_SUFFIX.len(),
    );
    message.extend_from_slice(EVENT_PREFIX.as_bytes());
    message.extend_from_slice(kind.as_bytes());
    message.extend_from_slice(DATA_PREFIX.as_bytes());
    message.extend_from_slice(data);
    message.extend_from_slice(EVENT_SUFFIX.as_bytes());
    Bytes::from(message)
}

/// How a broadcast went, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    pub clients: usize,
    pub dropped: usize,
}

/// The clients of the stream.
pub struct Streams {
    clients: Mutex<Vec<mpsc::Sender<Bytes>>>,
    limit: usize,
    queue: usize,
}

impl Default for Streams {
    fn default() -> Self {
        Streams::new(MAX_CLIENTS, QUEUE_EVENTS)
    }
}

impl Streams {
    pub fn new(limit: usize, queue: usize) -> Streams {
        Streams {
            clients: Mutex::new(Vec::new()),
            limit,
            queue,
        }
    }

    /// A new client that first receives `backlog` (the newest `queue`
    /// events of it), then, if it `follows`, every broadcast; otherwise its
    /// stream ends after the backlog.
    pub fn subscribe(
        &self,
        backlog: Vec<Bytes>,
        follows: bool,
    ) -> Result<mpsc::Receiver<Bytes>, StreamError> {
        let mut clients = self.lock();
        clients.retain(|c| !c.is_closed());
        if clients.len() >= self.limit {
            return Err(StreamError::TooMany);
        }
        let (tx, rx) = mpsc::channel(self.queue);
        let skip = backlog.len().saturating_sub(self.queue);
        for message in backlog.into_iter().skip(skip) {
            // Cannot fail: the queue is new and holds at least this many.
            let _ = tx.try_send(message);
        }
        if follows {
            clients.push(tx);
        }
        Ok(rx)
    }

    /// Queues `message` for every client without blocking; drops those
    /// that have gone away or whose queue is full.
    pub fn broadcast(&self, message: &Bytes) -> Delivery {
        let mut clients = self.lock();
        let mut dropped = 0;
        clients.retain(|client| match client.try_send(message.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                dropped += 1;
                false
            }
            Err(TrySendError::Closed(_)) => false,
        });
        Delivery {
            clients: clients.len(),
            dropped,
        }
    }

    /// Ends every stream (after what is queued), so a server shutting
    /// down does not wait for clients that would never leave.
    pub fn close_all(&self) {
        self.lock().clear();
    }

    pub fn len(&self) -> usize {
        self.lock().iter().filter(|c| !c.is_closed()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A panic while holding the lock leaves a usable list (a Vec of
    /// senders has no invariant to break).
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<mpsc::Sender<Bytes>>> {
        self.clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(rx: &mut mpsc::Receiver<Bytes>) -> Vec<Bytes> {
        std::iter::from_fn(|| rx.try_recv().ok()).collect()
    }

    #[test]
    fn formats_one_sse_message() {
        assert_eq!(
            event("snapshot", br#"{"a":1}"#),
            Bytes::from_static(b"event: snapshot\ndata: {\"a\":1}\n\n")
        );
    }

    #[test]
    fn every_client_gets_backlog_then_broadcasts_in_order() {
        let streams = Streams::new(10, 4);
        let mut a = streams.subscribe(vec![Bytes::from("old")], true).unwrap();
        let mut b = streams.subscribe(vec![], true).unwrap();
        for m in ["1", "2"] {
            assert_eq!(
                streams.broadcast(&Bytes::from(m)),
                Delivery {
                    clients: 2,
                    dropped: 0
                }
            );
        }
        assert_eq!(drain(&mut a), ["old", "1", "2"]);
        assert_eq!(drain(&mut b), ["1", "2"]);
    }

    #[test]
    fn a_stalled_client_is_dropped_without_holding_up_the_others() {
        let streams = Streams::new(10, 2);
        let mut stalled = streams.subscribe(vec![], true).unwrap();
        let mut reader = streams.subscribe(vec![], true).unwrap();
        let mut dropped = 0;
        for i in 0..5 {
            dropped += streams.broadcast(&Bytes::from(i.to_string())).dropped;
            assert_eq!(drain(&mut reader), [i.to_string()]);
        }
        assert_eq!(dropped, 1);
        assert_eq!(streams.len(), 1);
        // The stalled client gets what was queued, then a clean end.
        assert_eq!(drain(&mut stalled), ["0", "1"]);
        assert!(stalled.is_closed());
    }

    #[test]
    fn bounded_clients_backlog_and_close() {
        let streams = Streams::new(2, 2);
        let backlog: Vec<Bytes> = ["a", "b", "c"].map(Bytes::from).into();
        let mut first = streams.subscribe(backlog, true).unwrap();
        assert_eq!(drain(&mut first), ["b", "c"]);
        let second = streams.subscribe(vec![], true).unwrap();
        assert_eq!(
            streams.subscribe(vec![], true).unwrap_err(),
            StreamError::TooMany
        );
        drop(second);
        assert_eq!(streams.len(), 1);
        let _third = streams.subscribe(vec![], true).unwrap();
        streams.close_all();
        assert!(streams.is_empty());
        assert!(first.is_closed());
        let mut once = streams.subscribe(vec![Bytes::from("x")], false).unwrap();
        assert!(streams.is_empty());
        assert_eq!(drain(&mut once), ["x"]);
        assert!(once.is_closed());
    }
}
