//! What one refresh of `netto top` costs on a big host: a 64-CPU snapshot
//! whose stacks reach every category rule (each with a dozen leaf
//! functions, so every category lists its full set of hottest functions),
//! with five minutes of history behind it.
//!
//! `cargo bench --bench tui_render` (no privileges needed). Times are the
//! bench thread's CPU time, so other load on the machine does not inflate
//! them. NETTO_BENCH_TABLE=1 writes them over the `tui-render` table of
//! docs/src/performance.md.
//! - `draw WxH`: one frame, the screen alternating between two snapshots
//!   so every frame really changes, encoded for a terminal (crossterm into
//!   a sink).
//! - `tree`: the breakdown tree with the hottest functions of every open
//!   category (all of NET_RX's here), the part of taking a snapshot in
//!   that grows with its stacks.
//! - `drop snapshot`: freeing one snapshot's stacks, which the UI does
//!   every refresh for the one leaving the flame graph's window.
//! - `refresh 200x60`: the whole per-refresh cost, a new snapshot taken in
//!   (history, tree, chart lines, the oldest dropped) plus its frame. At
//!   the default refresh of one second, its time divided by 1 s is the
//!   share of one core the UI takes.

use std::hint::black_box;
use std::io;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use netto::breakdown::categories::{Pattern, RULES};
use netto::breakdown::{breakdowns, Categorizer};
use netto::frontends::tui::app::{App, Panel, TopSettings};
use netto::frontends::tui::draw;
use netto::frontends::tui::tree::{NodeId, Tree};
use netto::model::{EventKey, SampleContext, SamplingStats, Snapshot, StackCount};
use netto::source::{Origin, SourceInfo};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

mod table;

const CPUS: usize = 64;
const LEAVES_PER_PATH: usize = 12;
/// Five minutes of one-second snapshots: the default history.
const HISTORY: usize = 300;

/// The frames above the network path in each context, outermost first.
const ENTRIES: [(SampleContext, &[&str]); 4] = [
    (
        SampleContext::NetRx,
        &[
            "ret_from_fork",
            "kthread",
            "run_ksoftirqd",
            "handle_softirqs",
            "net_rx_action",
        ],
    ),
    (
        SampleContext::NetTx,
        &[
            "asm_common_interrupt",
            "irq_exit_rcu",
            "handle_softirqs",
            "net_tx_action",
        ],
    ),
    (
        SampleContext::SockSend,
        &[
            "entry_SYSCALL_64_after_hwframe",
            "do_syscall_64",
            "__sys_sendto",
        ],
    ),
    (
        SampleContext::SockRecv,
        &[
            "entry_SYSCALL_64_after_hwframe",
            "do_syscall_64",
            "__sys_recvfrom",
        ],
    ),
];

/// Every exact-name rule under every context, each with its own leaves:
/// thousands of stacks in every category there is.
fn stacks(seed: u64) -> Vec<StackCount> {
    let mut stacks = Vec::new();
    for (c, (context, entry)) in ENTRIES.iter().enumerate() {
        for (r, (pattern, _)) in RULES.iter().enumerate() {
            let Pattern::Exact(stage) = pattern else {
                continue;
            };
            for leaf in 0..LEAVES_PER_PATH {
                let mut frames: Vec<String> = entry.iter().map(|f| f.to_string()).collect();
                frames.push(stage.to_string());
                frames.push(format!("leaf_{r}_{leaf}"));
                let count = 1 + (seed + (c * 7 + r * 3 + leaf) as u64) % 40;
                stacks.push(StackCount {
                    context: *context,
                    frames,
                    count,
                    cpus: Default::default(),
                    group: None,
                });
            }
        }
    }
    stacks
}

fn snapshot(ts: f64, seed: u64) -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", CPUS);
    s.ts = ts;
    s.interval_s = 1.0;
    for (k, key) in EventKey::ALL.iter().enumerate() {
        let time = s.events.get_mut(key).unwrap();
        time.per_cpu_ns = (0..CPUS)
            .map(|cpu| ((cpu as u64 * 7_919 + k as u64 * 104_729 + seed) % 300) * 1_000_000)
            .collect();
        time.total_ns = time.per_cpu_ns.iter().sum();
        time.count = 1_000 * (k as u64 + 1) + seed;
    }
    s.overhead.process_cpu_ns = 3_000_000;
    s.overhead.bpf_stats = true;
    s.overhead.bpf_run_time_ns = 9_000_000;
    s.stacks = stacks(seed);
    s.breakdown = breakdowns(&s.stacks, &s.events, &s.modules, 499);
    s.sampling = Some(SamplingStats {
        frequency_hz: 499,
        transport: "mmap".into(),
        samples: s.stacks.iter().map(|st| st.count).sum(),
        dropped: 0,
        failed_stacks: 0,
        softirq_loop: 0,
        unplaced: 0,
        buffer_bytes: 1 << 20,
    });
    s
}

/// An app five minutes in, per-CPU view, breakdown focused with every
/// category of NET_RX open: the biggest screen the UI draws.
fn app(seed: u64) -> App {
    let info = SourceInfo {
        host: "bench".into(),
        kernel: "6.18.0".into(),
        backend: "tracepoint".into(),
        frequency_hz: Some(499),
        origin: Origin::Live,
        notes: Vec::new(),
    };
    let settings = TopSettings {
        history_s: HISTORY as f64,
        flame_s: 30.0,
        flame_weight: Default::default(),
        speed: 1.0,
    };
    let mut app = App::new(info, settings);
    let template = snapshot(0.0, seed);
    for i in 0..HISTORY {
        let mut s = template.clone();
        s.ts = i as f64;
        app.push(s);
    }
    app.toggle_per_cpu();
    app.focus = Panel::Breakdown;
    let categories: Vec<NodeId> = app.tree.contexts[0]
        .categories
        .iter()
        .map(|k| NodeId::Category(SampleContext::NetRx, k.name.clone()))
        .collect();
    for id in &categories {
        app.expansion.set(id, true);
    }
    app
}

fn terminal(width: u16, height: u16) -> Terminal<CrosstermBackend<io::Sink>> {
    Terminal::with_options(
        CrosstermBackend::new(io::sink()),
        TerminalOptions {
            viewport: Viewport::Fixed(Rect::new(0, 0, width, height)),
        },
    )
    .unwrap()
}

/// CPU time of this thread: what "% of one core" means, and unlike wall
/// time not inflated when other work on the machine preempts the bench.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_THREAD_CPUTIME_ID");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `routine` `iters` times on inputs made by `setup` outside the
/// timed part, a few at a time (a snapshot is megabytes), and returns the
/// CPU time spent in `routine`.
fn cpu_time_batched<I>(
    iters: u64,
    mut setup: impl FnMut() -> I,
    mut routine: impl FnMut(I),
) -> Duration {
    const BATCH: u64 = 8;
    let mut spent = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let inputs: Vec<I> = (0..BATCH.min(iters - done)).map(|_| setup()).collect();
        done += inputs.len() as u64;
        let start = thread_cpu();
        for input in inputs {
            routine(input);
        }
        spent += thread_cpu() - start;
    }
    spent
}

fn bench(c: &mut Criterion) {
    let apps = [app(0), app(17)];
    for (width, height) in [(200u16, 60u16), (80, 24)] {
        let mut terminal = terminal(width, height);
        let mut frame = 0usize;
        c.bench_function(&format!("draw {width}x{height}"), |b| {
            b.iter_custom(|iters| {
                let start = thread_cpu();
                for _ in 0..iters {
                    frame += 1;
                    let app = &apps[frame % 2];
                    terminal.draw(|f| draw::draw(black_box(app), f)).unwrap();
                }
                thread_cpu() - start
            })
        });
    }

    let big = snapshot(0.0, 0);
    // From the second snapshot on, every function name has been looked up.
    let mut categorizer = Categorizer::default();
    let expansion = apps[0].expansion.clone();
    c.bench_function("tree", |b| {
        b.iter_custom(|iters| {
            let start = thread_cpu();
            for _ in 0..iters {
                black_box(Tree::build(&[&big], &expansion, &mut categorizer));
            }
            thread_cpu() - start
        })
    });
    c.bench_function("drop snapshot", |b| {
        b.iter_custom(|iters| cpu_time_batched(iters, || big.clone(), drop))
    });

    let mut app = app(0);
    let mut terminal = terminal(200, 60);
    let mut next = 0u64;
    c.bench_function("refresh 200x60", |b| {
        b.iter_custom(|iters| {
            cpu_time_batched(
                iters,
                || {
                    next += 1;
                    snapshot((HISTORY as u64 + next) as f64, next % 29)
                },
                |snapshot| {
                    app.push(snapshot);
                    terminal.draw(|f| draw::draw(&app, f)).unwrap();
                },
            )
        })
    });
}

criterion_group!(benches, bench);

fn main() -> anyhow::Result<()> {
    table::criterion_main("tui-render", benches)
}
