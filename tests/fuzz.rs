//! Property tests of every parser that takes outside input, bounded for
//! CI (fixed case counts, a few seconds each): recordings (arbitrary bytes
//! and mutated JSON load or give a one-line error, and any recording that
//! validates plays through `top`'s and `serve`'s state without a panic),
//! kallsyms lines, the query strings of `serve`'s endpoints (at the HTTP
//! level) and the XDP sketch's packet parser through its Rust reference.
//! No root.

mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::OnceLock;

use actix_web::http::StatusCode;
use actix_web::{test as http, App as HttpApp};
use netto::breakdown::breakdowns;
use netto::frontends::flame::Weight;
use netto::frontends::tui::app::{App, TopSettings};
use netto::frontends::tui::{draw, input};
use netto::frontends::web::routes;
use netto::frontends::web::state::{FlameWindow, ServeSettings, State};
use netto::model::{
    CpuTime, EventKey, Recording, RecordingHeader, SampleContext, SamplingStats, Snapshot,
    SoftirqVector, StackCount,
};
use netto::recording::{self, ValidRecording};
use netto::sketch::config::{Geometry, Sampling};
use netto::sketch::flow::classify;
use netto::sketch::packet;
use netto::sketch::reference::Reference;
use netto::sketch::variates::{SlotStart, Variates};
use netto::source::{Origin, SourceInfo};
use netto::symbols::kallsyms::{Kallsyms, SymbolTable};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use serde_json::{json, Value};

fn cases(n: u32) -> Config {
    Config {
        cases: n,
        // CI runs from a fresh clone: a failure prints its input, and
        // nothing is written into the source tree.
        failure_persistence: None,
        ..Config::default()
    }
}

/// The demo recording cut to its first two snapshots, read once.
fn small_recording() -> &'static Recording {
    static SMALL: OnceLock<Recording> = OnceLock::new();
    SMALL.get_or_init(|| {
        let mut recording = recording::load(Path::new(common::RECORDING))
            .unwrap()
            .into_inner();
        recording.snapshots.truncate(2);
        recording
    })
}

/// What a bad recording gets: one line that says where.
fn assert_one_line(error: &impl std::fmt::Display) {
    let text = error.to_string();
    assert!(!text.is_empty() && !text.contains('\n'), "{text:?}");
}

/// Parse, then validate: either may refuse, neither may panic.
fn load_bytes(bytes: &[u8]) -> Option<ValidRecording> {
    match recording::parse(bytes) {
        Err(e) => {
            assert_one_line(&e);
            None
        }
        Ok(parsed) => match ValidRecording::new(parsed) {
            Err(e) => {
                assert_one_line(&e);
                None
            }
            Ok(valid) => Some(valid),
        },
    }
}

fn info() -> SourceInfo {
    SourceInfo {
        host: "h".into(),
        kernel: "k".into(),
        backend: "tracepoint".into(),
        frequency_hz: Some(99),
        origin: Origin::Replay("fuzz.json".into()),
        notes: Vec::new(),
    }
}

/// Every snapshot through `top`'s state and a drawn frame (both views),
/// and through `serve`'s state and every one of its renderings.
fn play_through_front_ends(recording: &Recording) {
    let settings = TopSettings {
        history_s: 300.0,
        flame_s: 30.0,
        flame_weight: Default::default(),
        speed: 1.0,
    };
    let mut app = App::new(info(), settings);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let state = State::new(
        info(),
        ServeSettings {
            history_s: 300.0,
            flame_s: 30.0,
            serve_budget_percent: 2.0,
            otlp: false,
        },
    )
    .unwrap();
    for snapshot in &recording.snapshots {
        app.push(snapshot.clone());
        state.publish(snapshot.clone());
    }
    for key in ['c', 'o', 'c'] {
        terminal.draw(|frame| draw::draw(&app, frame)).unwrap();
        let key = KeyEvent::new(KeyCode::Char(key), KeyModifiers::NONE);
        input::handle_key(&mut app, &key);
    }
    for seconds in [1.0, 300.0] {
        state.history(seconds);
    }
    for seconds in [10.0, 300.0] {
        for weight in Weight::ALL {
            state.folded(FlameWindow::of(seconds).unwrap(), weight);
        }
    }
    let _ = state.flame_svg(FlameWindow::DEFAULT, Weight::Time);
    state.metrics.encode().unwrap();
}

/// A JSON value that might break a parser: extremes, wrong types.
fn awkward_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop_oneof![
            Just(1e19),
            Just(-1.0),
            Just(1e308),
            Just(5e-324),
            Just(0.5),
            any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()),
        ]
        .prop_map(Value::from),
        "[a-zA-Z0-9_ ;\\[\\]]{0,12}".prop_map(Value::from),
        Just(json!([])),
        Just(json!({})),
    ]
}

/// Walks `path` (indices into objects and arrays, modulo their sizes)
/// from `root` and changes what it reaches: replaces it with an awkward
/// value, removes or truncates it, or gives it another value of its type.
fn mutate(root: &mut Value, path: &[usize], action: u8, seed: u64, replacement: Value) {
    let mut pointer = String::new();
    let mut node = &*root;
    for &step in path {
        let (segment, next) = match node {
            Value::Object(map) if !map.is_empty() => {
                let (key, next) = map.iter().nth(step % map.len()).unwrap();
                (key.replace('~', "~0").replace('/', "~1"), next)
            }
            Value::Array(items) if !items.is_empty() => {
                let i = step % items.len();
                (i.to_string(), &items[i])
            }
            _ => break,
        };
        pointer.push('/');
        pointer.push_str(&segment);
        node = next;
    }
    let node = root.pointer_mut(&pointer).unwrap();
    match (action % 4, &mut *node) {
        (1, Value::Object(map)) if !map.is_empty() => {
            let key = map.keys().nth(path.len() % map.len()).unwrap().clone();
            map.remove(&key);
        }
        (1, Value::Array(items)) => items.truncate(items.len() / 2),
        // The same type, another value: past the parser, into the checks.
        (2, Value::Number(n)) if n.is_u64() => *node = json!(seed >> (seed % 64)),
        (2, Value::Number(_)) => *node = json!((seed >> (seed % 64)) as f64 / 1e3),
        (2, Value::Array(items)) if !items.is_empty() => {
            let copy = items[seed as usize % items.len()].clone();
            items.push(copy);
        }
        (2, Value::Bool(b)) => *b = !*b,
        (3, Value::Number(n)) => *node = json!(-n.as_f64().unwrap_or(0.0)),
        _ => *node = replacement,
    }
}

/// A recording that is valid by construction: events and vectors on
/// `cpus` CPUs within what the interval allows, stacks, and the breakdown
/// netto computes from them.
fn valid_recording() -> impl Strategy<Value = Recording> {
    let snapshot =
        (1usize..=32, 0.0f64..=10.0, 0u64..=1000).prop_flat_map(|(cpus, interval_s, gap_ms)| {
            // Within the interval alone, well inside the allowed overrun.
            let most = (interval_s * 1e9) as u64;
            (
                Just((cpus, interval_s, gap_ms)),
                proptest::collection::vec(proptest::collection::vec(0..=most, cpus), 16),
                proptest::collection::vec(
                    (
                        0usize..4,
                        proptest::collection::vec(
                            prop_oneof![
                                Just("net_rx_action"),
                                Just("tcp_v4_rcv"),
                                Just("nf_hook_slow"),
                                Just("br_handle_frame"),
                                Just("[unknown]"),
                                Just("x"),
                            ],
                            0..8,
                        ),
                        1u64..50,
                    ),
                    0..12,
                ),
                0u64..=10_000,
            )
        });
    proptest::collection::vec(snapshot, 0..6).prop_map(|snapshots| {
        let mut ts = 1_700_000_000.0;
        let snapshots: Vec<Snapshot> = snapshots
            .into_iter()
            .map(|((cpus, interval_s, gap_ms), times, stacks, hz)| {
                ts += gap_ms as f64 / 1000.0;
                let time = |per_cpu_ns: &Vec<u64>| CpuTime {
                    total_ns: per_cpu_ns.iter().sum(),
                    per_cpu_ns: per_cpu_ns.clone(),
                    count: per_cpu_ns.iter().filter(|&&ns| ns > 0).count() as u64,
                    ..CpuTime::default()
                };
                let mut s = Snapshot::empty("tracepoint", cpus);
                s.ts = ts;
                s.interval_s = interval_s;
                for (i, key) in EventKey::ALL.into_iter().enumerate() {
                    s.events.insert(key, time(&times[i]));
                }
                for (i, vector) in SoftirqVector::ALL.into_iter().enumerate() {
                    s.softirq.insert(vector, time(&times[5 + i % 10]));
                }
                s.hardirq = time(&times[15]);
                s.stacks = stacks
                    .into_iter()
                    .map(|(context, frames, count)| StackCount {
                        context: SampleContext::ALL[context],
                        frames: frames.into_iter().map(str::to_owned).collect(),
                        count,
                        cpus: Default::default(),
                        group: None,
                    })
                    .collect();
                s.breakdown = breakdowns(&s.stacks, &s.events, &s.modules, hz);
                s.sampling = Some(SamplingStats {
                    frequency_hz: hz,
                    transport: "mmap".into(),
                    samples: s.stacks.iter().map(|st| st.count).sum(),
                    ..SamplingStats::default()
                });
                s
            })
            .collect();
        Recording {
            header: RecordingHeader {
                schema_version: netto::model::SchemaVersion,
                netto_version: "0".into(),
                host: "h".into(),
                kernel: "k".into(),
                started: 1_700_000_000.0,
                duration_s: ts - 1_700_000_000.0,
                frequency_hz: 99,
                backend: "tracepoint".into(),
                transport: "mmap".into(),
            },
            snapshots,
        }
    })
}

proptest! {
    #![proptest_config(cases(2000))]

    #[test]
    fn arbitrary_bytes_never_load_by_accident_nor_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        load_bytes(&bytes);
    }
}

proptest! {
    #![proptest_config(cases(300))]

    #[test]
    fn a_mutated_recording_loads_or_says_where_it_is_wrong(
        changes in proptest::collection::vec(
            (
                // Mostly inside a snapshot, where most of a recording is.
                prop_oneof![1 => Just(""), 4 => Just("/snapshots/0"), 4 => Just("/snapshots/1")],
                proptest::collection::vec(any::<usize>(), 0..6),
                any::<u8>(),
                any::<u64>(),
                awkward_value(),
            ),
            1..4,
        ),
        cut in any::<prop::sample::Index>(),
        cut_text in prop::bool::weighted(0.1),
    ) {
        let mut value = serde_json::to_value(small_recording()).unwrap();
        for (under, path, action, seed, replacement) in changes {
            // An earlier change may have taken the snapshot away.
            let under = if value.pointer(under).is_some() { under } else { "" };
            mutate(value.pointer_mut(under).unwrap(), &path, action, seed, replacement);
        }
        let mut bytes = serde_json::to_vec(&value).unwrap();
        if cut_text {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        if let Some(valid) = load_bytes(&bytes) {
            play_through_front_ends(&valid);
        }
    }
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn every_valid_recording_plays_through_top_and_serve(recording in valid_recording()) {
        let valid = ValidRecording::new(recording).map_err(|e| TestCaseError::fail(e.to_string()))?;
        play_through_front_ends(&valid);
    }
}

/// The largest recording the check lets through: the most CPUs, the
/// longest interval with every CPU busy all of it, the latest time, the
/// most samples. Front ends must draw it, not overflow or hang.
#[test]
fn the_extremes_a_valid_recording_may_have_play_through_top_and_serve() {
    let cpus = recording::MAX_CPUS;
    let interval_s = netto::model::MAX_INTERVAL_S;
    let busy = CpuTime {
        total_ns: interval_s as u64 * 1_000_000_000 * cpus as u64,
        per_cpu_ns: vec![interval_s as u64 * 1_000_000_000; cpus],
        count: u64::MAX,
        ..CpuTime::default()
    };
    let mut s = Snapshot::empty("tracepoint", cpus);
    s.ts = 1e300;
    s.interval_s = interval_s;
    for time in s.events.values_mut().chain(s.softirq.values_mut()) {
        *time = busy.clone();
    }
    s.hardirq = busy;
    s.stacks = vec![StackCount {
        context: SampleContext::NetRx,
        frames: vec!["net_rx_action".into(); 512],
        count: interval_s as u64 * 10_000 * cpus as u64,
        cpus: Default::default(),
        group: None,
    }];
    s.breakdown = breakdowns(&s.stacks, &s.events, &s.modules, 10_000);
    let mut recording = small_recording().clone();
    recording.snapshots = vec![s];
    let valid = ValidRecording::new(recording).unwrap();
    play_through_front_ends(&valid);
}

/// A kallsyms line, well-formed or not.
fn kallsyms_line() -> impl Strategy<Value = String> {
    let well_formed = (
        any::<u64>(),
        prop_oneof![
            Just('t'),
            Just('T'),
            Just('W'),
            Just('d'),
            Just('b'),
            any::<char>()
        ],
        "[a-z_][a-z0-9_.]{0,20}",
        proptest::option::of("[a-z0-9_]{1,8}"),
    )
        .prop_map(|(addr, kind, name, module)| match module {
            Some(m) => format!("{addr:016x} {kind} {name}\t[{m}]"),
            None => format!("{addr:016x} {kind} {name}"),
        });
    prop_oneof![well_formed, ".{0,60}", "[0-9a-f ]{0,30}"]
}

proptest! {
    #![proptest_config(cases(500))]

    #[test]
    fn kallsyms_lines_parse_or_are_skipped_and_resolve_only_to_their_names(
        lines in proptest::collection::vec(kallsyms_line(), 0..40),
        lookups in proptest::collection::vec(any::<u64>(), 0..20),
    ) {
        let text = lines.join("\n");
        let asked: Vec<&str> = lines.iter().filter_map(|l| l.split_whitespace().nth(2)).collect();
        let names = Kallsyms::parse(&text, &asked);
        for name in asked {
            if let Some(addr) = names.address_of(name) {
                prop_assert!(
                    text.lines().any(|l| l.contains(name)
                        && l.split_once(' ').and_then(|(a, _)| u64::from_str_radix(a, 16).ok()) == Some(addr)),
                    "{name} at an address no line of it has"
                );
            }
        }
        if let Ok(table) = SymbolTable::parse(&text) {
            let starts = lines.iter().filter_map(|l| {
                u64::from_str_radix(l.split_whitespace().next()?, 16).ok()
            });
            for addr in lookups.into_iter().chain(starts) {
                if let Some(name) = table.resolve(addr) {
                    prop_assert!(text.contains(name), "{name} is not in the input");
                }
            }
        }
    }
}

/// Query strings as a browser or a script could send them: any of the
/// URI's query characters, `seconds`/`since` with any number or word, and
/// `weight` with any word.
fn query() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        any::<f64>().prop_map(|f| f.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        Just("1e400".to_owned()),
        Just("-0".to_owned()),
        Just("NaN".to_owned()),
        Just("inf".to_owned()),
        Just("30.0000001".to_owned()),
        "[0-9a-zA-Z.+%-]{0,12}",
    ];
    prop_oneof![
        "[a-zA-Z0-9=&%._~+-]{0,40}",
        number.clone().prop_map(|n| format!("seconds={n}")),
        number.clone().prop_map(|n| format!("since={n}")),
        prop_oneof![
            Just("time".to_owned()),
            Just("samples".to_owned()),
            "[a-zA-Z%]{0,8}"
        ]
        .prop_map(|w| format!("weight={w}")),
        (number.clone(), number).prop_map(|(a, b)| format!("seconds={a}&seconds={b}")),
    ]
}

/// Where each query goes.
fn endpoint() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("/api/v1/history"),
        Just("/api/v1/flame/folded"),
        Just("/api/v1/flame/svg"),
        Just("/api/v1/flame/pprof"),
        Just("/api/v1/stream"),
        Just("/api/v1/source"),
        Just("/api/v1/snapshot"),
        Just("/metrics"),
        Just("/"),
        Just("/api/v1/nope"),
    ]
}

/// One server for all cases (the requests are what varies), so the cases
/// are drawn up front rather than by `proptest!`, which cannot await; a
/// failure names its request.
#[test]
fn any_query_string_gets_200_400_or_404() {
    let mut runner = TestRunner::new(cases(400));
    let requests: Vec<String> = (0..400)
        .map(|_| {
            let (path, query) = (endpoint(), query())
                .new_tree(&mut runner)
                .unwrap()
                .current();
            format!("{path}?{query}")
        })
        .collect();
    actix_web::rt::System::new().block_on(async move {
        let settings = ServeSettings {
            history_s: 300.0,
            flame_s: 30.0,
            serve_budget_percent: 2.0,
            otlp: false,
        };
        let state = actix_web::web::Data::new(State::new(info(), settings).unwrap());
        for snapshot in &small_recording().snapshots {
            state.publish(snapshot.clone());
        }
        let service = http::init_service(HttpApp::new().configure(routes::configure(state))).await;
        for uri in requests {
            let request = http::TestRequest::get().uri(&uri).to_request();
            let response = http::call_service(&service, request).await;
            let status = response.status();
            assert!(
                [
                    StatusCode::OK,
                    StatusCode::BAD_REQUEST,
                    StatusCode::NOT_FOUND
                ]
                .contains(&status),
                "{uri}: {status}"
            );
            if status != StatusCode::OK {
                let body: Value = serde_json::from_slice(&http::read_body(response).await).unwrap();
                assert!(body["error"].is_string(), "{uri}: {body}");
            }
        }
    });
}

/// A frame, often a real one with some bytes changed or cut off.
fn frame_bytes() -> impl Strategy<Value = Vec<u8>> {
    let built = (
        any::<bool>(),
        any::<[u8; 16]>(),
        any::<u16>(),
        any::<u16>(),
        any::<u8>(),
        any::<bool>(),
        0usize..200,
    )
        .prop_map(|(v6, addr, sport, dport, proto, vlan, extra)| {
            let (src, dst): (IpAddr, IpAddr) = if v6 {
                (Ipv6Addr::from(addr).into(), Ipv6Addr::LOCALHOST.into())
            } else {
                let a = [addr[0], addr[1], addr[2], addr[3]];
                (Ipv4Addr::from(a).into(), Ipv4Addr::LOCALHOST.into())
            };
            packet::frame(src, dst, sport, dport, proto, vlan, 62 + extra)
        });
    let mutated = (
        built,
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut frame, changes, cut)| {
            for (at, byte) in changes {
                let i = at.index(frame.len());
                frame[i] = byte;
            }
            frame.truncate(cut.index(frame.len() + 1));
            frame
        });
    prop_oneof![proptest::collection::vec(any::<u8>(), 0..128), mutated]
}

proptest! {
    #![proptest_config(cases(3000))]

    #[test]
    fn any_bytes_through_the_sketchs_packet_parser(frames in proptest::collection::vec(frame_bytes(), 1..8)) {
        let geometry = Geometry::new(5, 2048).unwrap();
        // p = 1: every packet reaches the parser, in every row. The same
        // start for every case, drawn once: a ring of variates is most of
        // a case's time in a debug build.
        static START: OnceLock<SlotStart> = OnceLock::new();
        let start = START.get_or_init(|| {
            Variates::new(Sampling::new(1.0).unwrap(), 7).slot_start(geometry.rows())
        });
        let mut reference = Reference::new(geometry, start.clone());
        for frame in &frames {
            let _ = classify(frame);
            reference.process(frame);
        }
        prop_assert_eq!(reference.counters().packets, frames.len() as u64);
    }
}
