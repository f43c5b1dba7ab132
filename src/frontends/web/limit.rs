//! What keeps serving within `--serve-budget`: serving is netto's cost
//! too, but it must never grow with what clients ask. Two bounds, both
//! answered with 429 and Retry-After:
//!
//! - each client (by address) is held to a rate of requests, and to a
//!   lower one of requests that draw something;
//! - the serving process may take `--serve-budget` percent of one CPU on
//!   average: its allowance of CPU time accrues at that rate, up to
//!   `BURST` seconds' worth (start-up, a page load), and its CPU time
//!   (read from the process's own clock, every thread and every exited
//!   one) is taken from it; once it is spent, requests that draw something
//!   wait until it is back. The metrics and the stream, which draw nothing
//!   per request, are held to the client's rate only.
//!
//! Drawings are also shared: each is drawn at most once per snapshot (see
//! [`super::state`]), and profile windows are rounded to a few.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::time::{clock_gettime, ClockId};

/// Requests a second a client may keep making, and at once above that
/// (a page load is several): any request, and of them, requests that draw
/// something.
const ANY: Rate = Rate {
    per_second: 100.0,
    burst: 200.0,
};
const DRAWING: Rate = Rate {
    per_second: 10.0,
    burst: 40.0,
};

/// A token bucket's refill and size.
#[derive(Debug, Clone, Copy)]
struct Rate {
    per_second: f64,
    burst: f64,
}

/// Clients remembered at most; one idle for [`FORGET_AFTER`] has a full
/// bucket again and is forgotten first.
const MAX_CLIENTS: usize = 4096;
const FORGET_AFTER: Duration = Duration::from_secs(10);

/// Seconds of serving's allowance that may be saved up and spent at once.
const BURST: f64 = 5.0;

/// Why a request is not served now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The client asked faster than its rate.
    ClientRate { retry_after_s: u64 },
    /// Serving has spent its CPU allowance.
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
    /// The share of one CPU serving may take; `None`: no CPU bound.
    share: Option<f64>,
    clients: Mutex<HashMap<IpAddr, Bucket>>,
    allowance: Mutex<Allowance>,
    cpu_time: fn() -> Duration,
}

/// A client's two token buckets, and when they were last filled.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    any: f64,
    drawing: f64,
    at: Instant,
}

impl Bucket {
    fn full(at: Instant) -> Bucket {
        Bucket {
            any: ANY.burst,
            drawing: DRAWING.burst,
            at,
        }
    }

    /// Takes a token of `rate` from `tokens`, or says how long until one.
    fn take(tokens: &mut f64, rate: Rate, elapsed_s: f64) -> Result<(), Refusal> {
        *tokens = (*tokens + elapsed_s * rate.per_second).min(rate.burst);
        if *tokens < 1.0 {
            let wait = (1.0 - *tokens) / rate.per_second;
            return Err(Refusal::ClientRate {
                retry_after_s: wait.ceil().max(1.0) as u64,
            });
        }
        *tokens -= 1.0;
        Ok(())
    }
}

/// Serving's CPU allowance: seconds of CPU it may still take (below zero
/// when overspent), as of `at`, when the process had taken `cpu`.
#[derive(Debug, Clone, Copy)]
struct Allowance {
    seconds: f64,
    at: Instant,
    cpu: Duration,
}

/// This process's CPU time so far, all threads, exited ones included.
fn process_cpu_time() -> Duration {
    clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).map_or(Duration::ZERO, Duration::from)
}

impl Governor {
    /// Serving held to `budget_percent` of one CPU, or (`None`) to the
    /// clients' rates only.
    pub fn new(budget_percent: Option<f64>) -> Governor {
        Governor::with_clock(budget_percent, process_cpu_time)
    }

    fn with_clock(budget_percent: Option<f64>, cpu_time: fn() -> Duration) -> Governor {
        let share = budget_percent.map(|p| p.max(0.0) / 100.0);
        Governor {
            share,
            clients: Mutex::default(),
            allowance: Mutex::new(Allowance {
                seconds: BURST * share.unwrap_or(0.0),
                at: Instant::now(),
                cpu: cpu_time(),
            }),
            cpu_time,
        }
    }

    /// Whether a request from `client` is served now; `draws` says whether
    /// it draws something (and so is held to the CPU budget).
    pub fn admit(&self, client: Option<IpAddr>, draws: bool) -> Result<(), Refusal> {
        let now = Instant::now();
        if let Some(client) = client {
            self.take_token(client, draws, now)?;
        }
        if draws {
            self.within_budget(now)?;
        }
        Ok(())
    }

    fn take_token(&self, client: IpAddr, draws: bool, now: Instant) -> Result<(), Refusal> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        if clients.len() >= MAX_CLIENTS && !clients.contains_key(&client) {
            clients.retain(|_, b| now.duration_since(b.at) < FORGET_AFTER);
            if clients.len() >= MAX_CLIENTS {
                return Err(Refusal::ClientRate { retry_after_s: 1 });
            }
        }
        let bucket = clients.entry(client).or_insert(Bucket::full(now));
        let elapsed_s = now.duration_since(bucket.at).as_secs_f64();
        bucket.at = now;
        // Both refill; a refused request takes no token.
        let (mut any, mut drawing) = (bucket.any, bucket.drawing);
        Bucket::take(&mut any, ANY, elapsed_s)?;
        if draws {
            Bucket::take(&mut drawing, DRAWING, elapsed_s)?;
        } else {
            drawing = (drawing + elapsed_s * DRAWING.per_second).min(DRAWING.burst);
        }
        (bucket.any, bucket.drawing) = (any, drawing);
        Ok(())
    }

    fn within_budget(&self, now: Instant) -> Result<(), Refusal> {
        let Some(share) = self.share else {
            return Ok(());
        };
        let mut allowance = self
            .allowance
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let cpu = (self.cpu_time)();
        let earned = now.duration_since(allowance.at).as_secs_f64() * share;
        let spent = cpu.saturating_sub(allowance.cpu).as_secs_f64();
        *allowance = Allowance {
            seconds: (allowance.seconds + earned).min(BURST * share) - spent,
            at: now,
            cpu,
        };
        if allowance.seconds > 0.0 {
            return Ok(());
        }
        let wait = -allowance.seconds / share.max(f64::MIN_POSITIVE);
        Err(Refusal::ServeBudget {
            retry_after_s: wait.ceil().clamp(1.0, 3600.0) as u64,
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
        let governor = Governor::with_clock(Some(100.0), || Duration::ZERO);
        for _ in 0..DRAWING.burst as usize {
            assert_eq!(governor.admit(A, true), Ok(()));
        }
        let refused = governor.admit(A, true).unwrap_err();
        assert_eq!(refused, Refusal::ClientRate { retry_after_s: 1 });
        // What draws nothing has a rate of its own.
        for _ in 0..(ANY.burst - DRAWING.burst) as usize {
            assert_eq!(governor.admit(A, false), Ok(()));
        }
        assert!(governor.admit(A, false).is_err());
        // Another client has buckets of its own.
        assert_eq!(governor.admit(B, true), Ok(()));
        std::thread::sleep(Duration::from_secs_f64(1.5 / DRAWING.per_second));
        assert_eq!(governor.admit(A, true), Ok(()));
    }

    /// A clock that has spent 3 s of CPU since the allowance was made.
    fn spent() -> Duration {
        use std::sync::atomic::{AtomicU64, Ordering};
        static CALLS: AtomicU64 = AtomicU64::new(0);
        if CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
            Duration::ZERO
        } else {
            Duration::from_secs(3)
        }
    }

    #[test]
    fn past_its_cpu_allowance_only_what_draws_nothing_is_served() {
        // Half a CPU: 2.5 s saved up at most, and 3 s are spent.
        let governor = Governor::with_clock(Some(50.0), spent);
        let refused = governor.admit(A, true).unwrap_err();
        assert_eq!(refused, Refusal::ServeBudget { retry_after_s: 1 });
        assert!(refused.message().contains("--serve-budget"));
        assert_eq!(governor.admit(A, false), Ok(()));
        // Half a second's debt at half a CPU: back after a second.
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(governor.admit(A, true), Ok(()));
    }

    #[test]
    fn without_a_cpu_bound_only_the_clients_rates_hold() {
        // A replay's server: 3 s of CPU spent refuses nothing that way.
        let governor = Governor::with_clock(None, spent);
        assert_eq!(governor.admit(A, true), Ok(()));
        let refused = (0..DRAWING.burst as usize + 1)
            .map(|_| governor.admit(A, true))
            .find(Result::is_err);
        assert!(
            matches!(refused, Some(Err(Refusal::ClientRate { .. }))),
            "{refused:?}"
        );
    }
}
