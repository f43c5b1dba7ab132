//! What keeps serving within `--serve-budget`: serving is netto's cost
//! too, but it must never grow with what clients ask. Two bounds, both
//! answered with 429 and Retry-After:
//!
//! - each client (by address) is held to [`CLIENT_RATE`] requests a
//!   second, with bursts of [`CLIENT_BURST`] (a page load is several);
//! - the serving process may take `--serve-budget` percent of one CPU in
//!   each second: once a second's allowance is spent (its CPU time read
//!   from the process's own clock, every thread and every exited one),
//!   requests that draw something wait for the next second. The metrics
//!   and the stream, which draw nothing per request, are always served.
//!
//! Drawings are also shared: each is drawn at most once per snapshot (see
//! [`super::state`]), and profile windows are rounded to a few.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::time::{clock_gettime, ClockId};

/// Requests a second a client may keep making.
pub const CLIENT_RATE: f64 = 10.0;

/// Requests a client may make at once, above the rate.
pub const CLIENT_BURST: f64 = 40.0;

/// Clients remembered at most; one idle for [`FORGET_AFTER`] has a full
/// bucket again and is forgotten first.
const MAX_CLIENTS: usize = 4096;
const FORGET_AFTER: Duration = Duration::from_secs(10);

/// The span over which serving's CPU is held to its budget.
const WINDOW: Duration = Duration::from_secs(1);

/// Why a request is not served now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The client asked faster than [`CLIENT_RATE`].
    ClientRate { retry_after_s: u64 },
    /// Serving has spent this second's CPU allowance.
    ServeBudget { retry_after_s: u64 },
}

impl Refusal {
    pub fn retry_after_s(self) -> u64 {
        match self {
            Refusal::ClientRate { retry_after_s } | Refusal::ServeBudget { retry_after_s } => {
                retry_after_s
            }
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Refusal::ClientRate { .. } => "too many requests from this client; retry later",
            Refusal::ServeBudget { .. } => {
                "serving is at its CPU budget (--serve-budget); retry later"
            }
        }
    }
}

pub struct Governor {
    /// CPU time allowed per [`WINDOW`].
    allowance: Duration,
    clients: Mutex<HashMap<IpAddr, Bucket>>,
    window: Mutex<Window>,
    cpu_time: fn() -> Duration,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    cpu_at_start: Duration,
}

/// This process's CPU time so far, all threads, exited ones included.
fn process_cpu_time() -> Duration {
    clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).map_or(Duration::ZERO, Duration::from)
}

impl Governor {
    /// Serving held to `budget_percent` of one CPU.
    pub fn new(budget_percent: f64) -> Governor {
        Governor::with_clock(budget_percent, process_cpu_time)
    }

    fn with_clock(budget_percent: f64, cpu_time: fn() -> Duration) -> Governor {
        Governor {
            allowance: WINDOW.mul_f64(budget_percent.max(0.0) / 100.0),
            clients: Mutex::default(),
            window: Mutex::new(Window {
                started: Instant::now(),
                cpu_at_start: cpu_time(),
            }),
            cpu_time,
        }
    }

    /// Whether a request from `client` is served now; `draws` says whether
    /// it draws something (and so is held to the CPU budget).
    pub fn admit(&self, client: Option<IpAddr>, draws: bool) -> Result<(), Refusal> {
        let now = Instant::now();
        if let Some(client) = client {
            self.take_token(client, now)?;
        }
        if draws {
            self.within_budget(now)?;
        }
        Ok(())
    }

    fn take_token(&self, client: IpAddr, now: Instant) -> Result<(), Refusal> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if clients.len() >= MAX_CLIENTS && !clients.contains_key(&client) {
            clients.retain(|_, b| now.duration_since(b.at) < FORGET_AFTER);
            if clients.len() >= MAX_CLIENTS {
                return Err(Refusal::ClientRate { retry_after_s: 1 });
            }
        }
        let bucket = clients.entry(client).or_insert(Bucket {
            tokens: CLIENT_BURST,
            at: now,
        });
        let refill = now.duration_since(bucket.at).as_secs_f64() * CLIENT_RATE;
        bucket.tokens = (bucket.tokens + refill).min(CLIENT_BURST);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            let wait = (1.0 - bucket.tokens) / CLIENT_RATE;
            return Err(Refusal::ClientRate {
                retry_after_s: wait.ceil().max(1.0) as u64,
            });
        }
        bucket.tokens -= 1.0;
        Ok(())
    }

    fn within_budget(&self, now: Instant) -> Result<(), Refusal> {
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        let cpu = (self.cpu_time)();
        if now.duration_since(window.started) >= WINDOW {
            *window = Window {
                started: now,
                cpu_at_start: cpu,
            };
        }
        if cpu.saturating_sub(window.cpu_at_start) <= self.allowance {
            return Ok(());
        }
        let left = WINDOW.saturating_sub(now.duration_since(window.started));
        Err(Refusal::ServeBudget {
            retry_after_s: left.as_secs_f64().ceil().max(1.0) as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const A: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)));
    const B: Option<IpAddr> = Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));

    #[test]
    fn each_client_gets_its_burst_then_its_rate() {
        let governor = Governor::with_clock(100.0, || Duration::ZERO);
        for _ in 0..CLIENT_BURST as usize {
            assert_eq!(governor.admit(A, false), Ok(()));
        }
        let refused = governor.admit(A, false).unwrap_err();
        assert_eq!(refused, Refusal::ClientRate { retry_after_s: 1 });
        // Another client has a bucket of its own.
        assert_eq!(governor.admit(B, true), Ok(()));
        std::thread::sleep(Duration::from_secs_f64(1.5 / CLIENT_RATE));
        assert_eq!(governor.admit(A, false), Ok(()));
    }

    /// A clock that has spent 30 ms of CPU since the window opened.
    fn spent() -> Duration {
        use std::sync::atomic::{AtomicU64, Ordering};
        static CALLS: AtomicU64 = AtomicU64::new(0);
        // The first reading opens the window; every later one is 30 ms on.
        if CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
            Duration::ZERO
        } else {
            Duration::from_millis(30)
        }
    }

    #[test]
    fn past_a_seconds_cpu_allowance_only_what_draws_nothing_is_served() {
        // 2 % of one CPU: 20 ms a second, and 30 ms are spent.
        let governor = Governor::with_clock(2.0, spent);
        let refused = governor.admit(A, true).unwrap_err();
        assert!(matches!(refused, Refusal::ServeBudget { retry_after_s: 1 }));
        assert!(refused.message().contains("--serve-budget"));
        assert_eq!(governor.admit(A, false), Ok(()));
        // The next second opens with the same reading: room again.
        std::thread::sleep(WINDOW);
        assert_eq!(governor.admit(A, true), Ok(()));
    }
}
