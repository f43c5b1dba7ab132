//! The page in a real browser: headless Chromium loads it from `netto serve
//! --replay`, and the test reads what the page rendered through the
//! DevTools protocol: the recorded events' numbers and a flame graph. A
//! screenshot is kept as a test artifact.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::serve::Serve;
use common::{recording, RECORDING};
use headless_chrome::protocol::cdp::Network;
use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::{Browser, LaunchOptions, Tab};
use netto::model::{
    Attribution, BudgetChange, BudgetStatus, EventKey, Group, GroupBy, NetworkPrograms, Recording,
    Tier,
};

/// Evaluates `expression` in the page until it gives a value other than
/// null or undefined; the value comes back as JSON.
fn wait_for(tab: &Tab, expression: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    let as_json = format!("JSON.stringify(({expression}) ?? null)");
    loop {
        let value: Option<serde_json::Value> = tab
            .evaluate(&as_json, false)
            .unwrap_or_else(|e| panic!("{expression}: {e}"))
            .value
            .and_then(|v| serde_json::from_str(v.as_str()?).ok());
        match value {
            Some(value) if !value.is_null() => return value,
            _ if Instant::now() > deadline => panic!("the page never rendered {expression}"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// serve's page of a recording replayed at full speed to its end, open in
/// headless Chromium with a profile of its own. Fields drop in order: the
/// tab and the browser before the profile they use, serve last.
struct Page {
    tab: Arc<Tab>,
    _browser: Browser,
    _profile: tempfile::TempDir,
    _serve: Serve,
    /// Where [`open_recording`] wrote the recording served.
    _recording: Option<tempfile::TempDir>,
}

/// The page of `serve --replay` of `recording`, written to a file first and
/// checked to be one netto loads.
fn open_recording(recording: &Recording) -> Page {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recording.json");
    std::fs::write(&path, serde_json::to_vec(recording).unwrap()).unwrap();
    netto::recording::load(&path).expect("a valid recording");
    Page {
        _recording: Some(dir),
        ..open_page(&path)
    }
}

fn open_page(recording: &Path) -> Page {
    open_page_at(recording, 1400, &[])
}

/// [`open_page`] in a window `width` pixels wide, the requests for URLs
/// matching `blocked` (`*` a wildcard) refused.
fn open_page_at(recording: &Path, width: u32, blocked: &[&str]) -> Page {
    let serve = Serve::start(&["--replay", recording.to_str().unwrap(), "--speed", "inf"]);
    serve.wait_ended();
    let profile = tempfile::tempdir().unwrap();
    let browser = Browser::new(LaunchOptions {
        headless: true,
        sandbox: false,
        enable_gpu: false,
        path: Some("/usr/bin/chromium".into()),
        user_data_dir: Some(profile.path().to_owned()),
        window_size: Some((width, 3000)),
        args: [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
        ]
        .map(OsStr::new)
        .into(),
        idle_browser_timeout: Duration::from_secs(120),
        ..LaunchOptions::default()
    })
    .expect("starting chromium (Debian package chromium, see scripts/install-deps.sh)");
    let tab = browser.new_tab().unwrap();
    if !blocked.is_empty() {
        // Every field of Network.enable is optional.
        let enable: Network::Enable = serde_json::from_value(serde_json::json!({})).unwrap();
        tab.call_method(enable).unwrap();
        tab.call_method(Network::SetBlockedURLs {
            urls: blocked.iter().map(|&u| u.to_owned()).collect(),
        })
        .unwrap();
    }
    tab.navigate_to(&format!("{}/", serve.base))
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    Page {
        tab,
        _browser: browser,
        _profile: profile,
        _serve: serve,
        _recording: None,
    }
}

#[test]
fn the_page_shows_the_recorded_numbers_and_a_flame_graph() {
    let recording = recording();
    let page = open_page(Path::new(RECORDING));
    let tab = Arc::clone(&page.tab);

    // The cards show each event's CPU% of the last recorded interval.
    let last = recording.snapshots.last().unwrap();
    for key in [
        EventKey::NetRxSoftirq,
        EventKey::NetTxSoftirq,
        EventKey::SockSend,
        EventKey::SockRecv,
        EventKey::NetTimers,
    ] {
        let shown = wait_for(
            &tab,
            &format!(
                "document.getElementById('value-{}')?.textContent",
                key.name()
            ),
        );
        let shown: f64 = shown.as_str().unwrap().parse().unwrap();
        let recorded = last.events[&key].percent_of_cpu(last.interval_s);
        assert!(
            (shown - recorded).abs() <= 0.005 + 1e-9,
            "{}: page shows {shown}, recording has {recorded}",
            key.name()
        );
    }
    // The chart has one line per event with a point per snapshot.
    let points = wait_for(
        &tab,
        "[...document.querySelectorAll('#chart polyline')].map(l => l.getAttribute('points').split(' ').length)",
    );
    assert_eq!(points, serde_json::json!([6, 6, 6, 6, 6]));
    // Per CPU and the breakdown.
    let cpus = wait_for(&tab, "document.querySelectorAll('#cpus tbody tr').length");
    assert_eq!(cpus, last.cpus);
    let categories = wait_for(
        &tab,
        "document.querySelectorAll('#breakdown tr.category').length",
    );
    let recorded: usize = last.breakdown.iter().map(|b| b.categories.len()).sum();
    assert_eq!(categories, recorded);
    // A share of samples reads to one place, as in top.
    let shares = wait_for(
        &tab,
        "[...document.querySelectorAll('#breakdown tr.category td:nth-child(2)')].map(td => td.textContent)",
    );
    for share in shares.as_array().unwrap() {
        let text = share.as_str().unwrap();
        let value: f64 = text.trim_end_matches(" %").parse().unwrap();
        let places = if value != 0.0 && value < 1.0 { 2 } else { 1 };
        assert_eq!(text, format!("{value:.places$} %"), "{shares}");
    }
    // The demo recording predates the priced slice, and says nothing of it.
    let bpf = wait_for(
        &tab,
        "document.querySelector('#overhead tr:nth-child(3) td:nth-child(2)')?.textContent",
    );
    assert!(!bpf.as_str().unwrap().contains("priced from"), "{bpf}");
    // netto's own cost: recorded before the whole cost was a figure of
    // its own, so the page adds up its processes and BPF programs.
    let cost = wait_for(
        &tab,
        "document.querySelector('#overhead tr td:nth-child(2)')?.textContent",
    );
    let recorded = netto::model::percent(
        last.overhead.process_cpu_ns + last.overhead.bpf_run_time_ns,
        last.interval_s,
    );
    let shown: f64 = cost
        .as_str()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (shown - recorded).abs() <= 0.005 + 1e-9,
        "the page shows netto's cost {cost}, the recording {recorded}"
    );
    // A replay is badged as one, not as live.
    let status = wait_for(&tab, "document.getElementById('status').textContent");
    assert_eq!(status, "replay finished");

    // The flame graph: inferno's SVG drawn inside the page, with frames.
    let frames = wait_for(
        &tab,
        "(() => { const d = document.getElementById('flame')?.contentDocument; \
           const n = d ? d.querySelectorAll('#frames > g').length : 0; return n > 0 ? n : null })()",
    );
    assert!(frames.as_u64().unwrap() > 20, "{frames} frames");
    let names = wait_for(
        &tab,
        "[...document.getElementById('flame').contentDocument.querySelectorAll('#frames > g > title')]\
           .map(t => t.textContent.split(' (')[0])",
    );
    let names: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for context in ["net_rx", "sock_send", "sock_recv"] {
        assert!(names.contains(&context), "{context} not in {names:?}");
    }

    let png = tab
        .capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true)
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let artifact = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-page.png");
    std::fs::write(&artifact, png).unwrap();
    eprintln!("screenshot: {}", artifact.display());
}

/// The demo recording made to say more: its last interval in the
/// `softirq` tier (socket calls estimated) and every interval attributed
/// to two cgroups, 3:1, and the rest unattributed.
fn tiered_and_attributed() -> Recording {
    let mut recording = recording();
    for snapshot in &mut recording.snapshots {
        // Each event's time: 3/8 to one group, 1/8 to the other.
        let part = |eighths: u64| -> BTreeMap<EventKey, u64> {
            EventKey::ALL
                .iter()
                .map(|&k| (k, snapshot.event(k).total_ns / 8 * eighths))
                .collect()
        };
        let (web, batch) = (part(3), part(1));
        let unattributed = EventKey::ALL
            .iter()
            .map(|&k| (k, snapshot.event(k).total_ns - web[&k] - batch[&k]))
            .collect();
        snapshot.attribution = Some(Attribution {
            by: GroupBy::Cgroup,
            on: true,
            groups: vec![
                Group {
                    name: "/system.slice/web.service".into(),
                    label: "web.service".into(),
                    events: web,
                    traffic: None,
                },
                Group {
                    name: "/system.slice/batch.service".into(),
                    label: "batch.service".into(),
                    events: batch,
                    traffic: None,
                },
            ],
            unattributed,
            unattributed_why: BTreeMap::new(),
        });
    }
    let last = recording.snapshots.last_mut().unwrap();
    // The exact tier measured sock_send earlier in the run.
    common::calibrated_in_softirq_tier(last, 1_500_000, 0.812, 400, 300.0);
    recording
}

/// Who pays, in the browser: the groups' table, heaviest first, with
/// `unattributed` last; and the estimates of a lower tier marked on the
/// cards, with the tier beside the title.
#[test]
fn the_page_shows_who_pays_and_marks_estimates() {
    let recording = tiered_and_attributed();
    let page = open_recording(&recording);
    let tab = Arc::clone(&page.tab);

    let rows = wait_for(
        &tab,
        "(() => { const r = [...document.querySelectorAll('#groups tbody tr')]\
           .map(tr => tr.querySelector('td').childNodes[0].textContent); return r.length ? r : null })()",
    );
    assert_eq!(
        rows,
        serde_json::json!(["web.service", "batch.service", "unattributed"])
    );
    let by = wait_for(&tab, "document.getElementById('groups-by').textContent");
    assert!(by.as_str().unwrap().contains("cgroup"), "{by}");
    // The label column is headed with what a group is and what its id is.
    let heading = wait_for(
        &tab,
        "document.querySelector('#groups thead th')?.textContent",
    );
    assert_eq!(heading, "cgroup (cgroup path)");

    let send = wait_for(
        &tab,
        "document.getElementById('value-sock_send')?.textContent",
    );
    assert!(send.as_str().unwrap().starts_with('~'), "{send}");
    let rx = wait_for(
        &tab,
        "document.getElementById('value-net_rx_softirq')?.textContent",
    );
    assert!(!rx.as_str().unwrap().starts_with('~'), "{rx}");
    let detail = wait_for(
        &tab,
        "document.querySelector('.card.ev-sock_send .runs')?.textContent",
    );
    assert!(
        detail
            .as_str()
            .unwrap()
            .starts_with("estimated ± 1.5 ms · ~"),
        "{detail}"
    );
    assert!(
        detail
            .as_str()
            .unwrap()
            .ends_with(" · calibration 0.81 ± 0.04 (not applied), 5 min ago"),
        "{detail}"
    );
    let recv = wait_for(
        &tab,
        "document.querySelector('.card.ev-sock_recv .runs')?.textContent",
    );
    assert!(!recv.as_str().unwrap().contains("agreement"), "{recv}");
    let tier = wait_for(&tab, "document.getElementById('tier')?.textContent");
    assert!(tier.as_str().unwrap().starts_with("tier softirq"), "{tier}");
}

/// A calibration interval of a run in the `sampled` tier: the page says
/// the interval is exact and which tier the run is in, and that its cost
/// over the budget is not the budget exceeded.
#[test]
fn the_page_names_a_calibration_interval() {
    let mut recording = recording();
    let last = recording.snapshots.last_mut().unwrap();
    last.calibrating = Some(Tier::Sampled);
    last.budget = Some(BudgetStatus::over_at_floor(1.0));
    let page = open_recording(&recording);
    let tier = wait_for(&page.tab, "document.getElementById('tier')?.textContent");
    assert_eq!(
        tier.as_str().unwrap(),
        "tier exact (calibration interval: the run is in sampled)"
    );
    let budget = wait_for(
        &page.tab,
        "[...document.querySelectorAll('#overhead tr')]\
           .map(tr => tr.textContent).find(t => t.startsWith('budget')) ?? null",
    );
    assert_eq!(
        budget.as_str().unwrap(),
        "budget1 % of one CPU: over in this calibration interval, not judged \
         (4 steps down, 0 up, sampling asked 99 Hz)"
    );
}

/// A tier the budget stepped down to says so, and how to measure exactly:
/// without it, `serve --demo`'s first page showed estimates near zero for
/// traffic `stat --demo` measures, with nothing to say why.
#[test]
fn the_page_says_the_budget_took_the_run_to_its_tier() {
    let mut recording = recording();
    let last = recording.snapshots.last_mut().unwrap();
    last.tier = Tier::Sampled;
    for time in last.events.values_mut() {
        (time.estimated, time.error_ns) = (true, Some(10_000_000));
    }
    last.budget = Some(BudgetStatus::over_at_floor(1.0));
    let page = open_recording(&recording);
    let tier = wait_for(&page.tab, "document.getElementById('tier')?.textContent");
    assert_eq!(
        tier.as_str().unwrap(),
        "tier sampled (~ estimated from stack samples; the 1 % budget stepped down to it, \
         --budget off measures exactly)"
    );
}

/// `serve`'s split of its cost and the budget's knobs, in the cost table:
/// measuring and serving apart, each knob costliest first, with whether
/// its cost was measured or predicted.
#[test]
fn the_page_shows_measuring_serving_and_each_knob() {
    let mut recording = recording();
    let last = recording.snapshots.last_mut().unwrap();
    last.overhead.measuring_percent = Some(0.45);
    last.overhead.serving_percent = Some(0.15);
    last.budget = Some(BudgetStatus {
        over: false,
        knobs: serde_json::from_value(serde_json::json!([
            {"knob": "process", "cost_percent": 0.15, "basis": "measured"},
            {"knob": "socket_window", "cost_percent": 1.4, "basis": "predicted"},
            {"knob": "exact_hooks", "cost_percent": 0.25, "basis": "measured"},
        ]))
        .expect("budget knobs"),
        ..BudgetStatus::over_at_floor(1.0)
    });
    let page = open_recording(&recording);
    let rows = wait_for(
        &page.tab,
        "(() => { const rows = [...document.querySelectorAll('#overhead tr')]\
           .map(tr => [...tr.cells].map(td => td.textContent).join(': '))\
           .filter(t => t.startsWith('measuring') || t.startsWith('serving') \
                        || t.startsWith('budget knob'));\
           return rows.length ? rows : null; })()",
    );
    assert_eq!(
        rows,
        serde_json::json!([
            "measuring (what the budget keeps): 0.45 %",
            "serving (the HTTP process): 0.15 %",
            "budget knob socket_window: 1.40 % (predicted)",
            "budget knob exact_hooks: 0.25 % (measured)",
            "budget knob process: 0.15 % (measured)",
        ])
    );
}

/// A budget that stepped the co-hosted sketch's probability down, in the
/// browser: the sketch's summary gives the probability in force, the cost
/// table's budget row the one asked for; under `--by flow` a heavy hitter
/// shows its connection's network time.
#[test]
fn the_page_shows_the_sketch_probability_in_force_and_the_one_asked() {
    let mut recording = recording();
    let last = recording.snapshots.last_mut().unwrap();
    last.sketch = Some(
        serde_json::from_value(serde_json::json!({
            "ts": last.ts, "interval_s": last.interval_s, "iface": "veth-a",
            "mode": "native", "probability": 0.0025, "rows": 4, "columns": 2048,
            "packets": 50000, "bytes": 125000000, "gaps_reused": 0,
            "top": [{"flow": {"src": "198.18.0.2", "dst": "198.18.0.1", "sport": 40000,
                              "dport": 5201, "proto": "tcp"},
                     "packets": 40000, "bytes": 120000000, "share": 0.96,
                     "flows": ["198.18.0.1:5201 -> 198.18.0.2:40000 tcp"]}],
            "other_protocols": {},
            "cost": {"run_count": 50000, "run_time_ns": 2000000,
                     "ns_per_packet": 40.0, "cpu_percent": 0.1}
        }))
        .expect("a sketch snapshot"),
    );
    // Under --by flow, the heavy hitter joined to its connection, which
    // took 1.5 ms of net_rx_softirq.
    let rx = last.events[&EventKey::NetRxSoftirq].total_ns;
    assert!(rx >= 1_500_000, "the recording's net_rx_softirq: {rx}");
    let mut events = Attribution::zero_events();
    events.insert(EventKey::NetRxSoftirq, 1_500_000);
    let mut unattributed: BTreeMap<EventKey, u64> = last
        .events
        .iter()
        .map(|(key, time)| (*key, time.total_ns))
        .collect();
    *unattributed.get_mut(&EventKey::NetRxSoftirq).unwrap() -= 1_500_000;
    last.attribution = Some(Attribution {
        by: GroupBy::Flow,
        on: true,
        groups: vec![Group {
            name: "198.18.0.1:5201 -> 198.18.0.2:40000 tcp".into(),
            label: String::new(),
            events,
            traffic: None,
        }],
        unattributed,
        unattributed_why: BTreeMap::new(),
    });
    last.budget = Some(BudgetStatus {
        percent: 1.0,
        over: true,
        at_floor: false,
        asked_frequency_hz: None,
        asked_sketch_probability: Some(0.01),
        change: Some(BudgetChange::SketchDown {
            from: 0.0025,
            to: 0.001,
        }),
        steps_down: 1,
        steps_up: 0,
        knobs: Vec::new(),
    });
    let page = open_recording(&recording);
    let tab = Arc::clone(&page.tab);

    let summary = wait_for(&tab, "document.querySelector('#sketch p')?.textContent");
    assert!(
        summary
            .as_str()
            .unwrap()
            .starts_with("veth-a (native), p=0.0025,"),
        "{summary}"
    );
    let budget = wait_for(
        &tab,
        "[...document.querySelectorAll('#overhead tr')]\
           .map(tr => tr.textContent).find(t => t.startsWith('budget')) ?? null",
    );
    let budget = budget.as_str().unwrap();
    assert!(budget.contains("1 % of one CPU: over"), "{budget}");
    assert!(budget.ends_with("sketch asked p=0.01)"), "{budget}");
    let row = wait_for(
        &tab,
        "[...document.querySelectorAll('#sketch th, #sketch tbody td')].map(c => c.textContent)",
    );
    assert_eq!(
        row,
        serde_json::json!([
            "flow",
            "packets",
            "bytes",
            "share",
            "net CPU",
            "tcp 198.18.0.2:40000 → 198.18.0.1:5201",
            "40,000",
            "120,000,000",
            "96.0 %",
            "1.500 ms"
        ]),
        "the sketch's table"
    );
}

/// Two programs of someone's data plane, one attached in two places, and
/// netto's sketch, over an interval of `interval_s`.
fn network_programs(interval_s: f64) -> NetworkPrograms {
    let program = |id: u32, name: &str, attach: serde_json::Value, runs: u64, ns: u64| {
        serde_json::json!({
            "id": id, "name": name, "tag": "0011223344556677", "prog_type": "sched_cls",
            "attach": attach, "hook": "tc_ingress", "runs": runs, "run_time_ns": ns,
            "ns_per_run": ns as f64 / runs as f64, "event": "net_rx_softirq",
            "share_percent": 12.5
        })
    };
    let tc = |iface: &str| serde_json::json!({"hook": "tc_ingress", "iface": iface, "link": true});
    let mut sketch = program(
        11,
        "netto_sketch_4",
        serde_json::json!([]),
        (interval_s * 10.0) as u64,
        (interval_s * 1000.0) as u64,
    );
    sketch["own"] = serde_json::json!(true);
    serde_json::from_value(serde_json::json!({
        "basis": "whole_interval",
        "stats_held_s": interval_s,
        "programs": [
            program(7, "cil_from_netdev", serde_json::json!([tc("eth0"), tc("lxc_health_c0ffee")]),
                    (interval_s * 100_000.0) as u64, (interval_s * 30_000_000.0) as u64),
            program(9, "xdp_fw", serde_json::json!([
                {"hook": "xdp", "iface": "eth0", "mode": "driver", "link": false}]),
                    (interval_s * 200_000.0) as u64, (interval_s * 40_000_000.0) as u64),
            sketch
        ],
        "not_attached": 0
    }))
    .expect("network programs")
}

/// The host's programs, costliest first, with where each runs and its
/// share of the event explained.
#[test]
fn the_page_lists_the_hosts_ebpf_programs() {
    let mut recording = recording();
    let last = recording.snapshots.last_mut().unwrap();
    // A whole second, so that the rates read as round numbers.
    last.interval_s = 1.0;
    last.network_programs = Some(network_programs(last.interval_s));
    let page = open_recording(&recording);
    let tab = Arc::clone(&page.tab);
    let rows = wait_for(
        &tab,
        "document.querySelector('#programs tbody tr') ? [...document.querySelectorAll('#programs tr')]\
           .map(tr => [...tr.children].map(c => c.textContent)) : null",
    );
    assert_eq!(
        rows,
        serde_json::json!([
            [
                "program",
                "runs/s",
                "ns/run",
                "% of one CPU",
                "share of event",
                "where"
            ],
            [
                "xdp_fw sched_cls #9",
                "200,000",
                "200",
                "4.00",
                "~12.5 % of net_rx_softirq",
                "xdp on eth0 (driver), no link"
            ],
            [
                "cil_from_netdev sched_cls #7",
                "100,000",
                "300",
                "3.00",
                "~12.5 % of net_rx_softirq",
                "tc_ingress on eth0, link; tc_ingress on lxc_health_c0ffee, link"
            ],
            [
                "netto_sketch_4 (netto)",
                "10",
                "100",
                "0.00",
                "~12.5 % of net_rx_softirq",
                "tc_ingress (not located)"
            ]
        ]),
        "costliest first, netto's own marked"
    );
    let basis = wait_for(
        &tab,
        "document.getElementById('programs-basis')?.textContent",
    );
    assert_eq!(basis, "last interval, counted over the whole interval");
    let tip = wait_for(
        &tab,
        "[...document.querySelectorAll('#programs th [title]')].map(t => t.title).join('|')",
    );
    assert!(
        tip.as_str()
            .unwrap()
            .contains("an estimate: entering a program is not in BPF statistics"),
        "{tip}"
    );
}

/// The page's width against the window's, and each panel's content's
/// against the panel's, at `width` pixels, once everything has drawn:
/// (page scroll width, window width, panels whose content is wider).
fn widths(recording: &Path, width: u32) -> (u64, u64, serde_json::Value) {
    let page = open_page_at(recording, width, &[]);
    let tab = Arc::clone(&page.tab);
    wait_for(
        &tab,
        "document.getElementById('flame')?.contentDocument?.querySelector('#frames') ? 1 : null",
    );
    wait_for(
        &tab,
        "document.querySelector('#groups tbody tr') ? 1 : null",
    );
    let page_width = wait_for(&tab, "document.documentElement.scrollWidth");
    let window = wait_for(&tab, "document.documentElement.clientWidth");
    let clipped = wait_for(
        &tab,
        "[...document.querySelectorAll('main > section:not([hidden])')]\
           .filter(s => s.scrollWidth > s.clientWidth + 1)\
           .map(s => `${s.id} ${s.scrollWidth} > ${s.clientWidth}: ` + [...s.querySelectorAll('*')]\
             .filter(e => e.getBoundingClientRect().right > s.getBoundingClientRect().right)\
             .map(e => `${e.tagName}.${e.className} ${e.getBoundingClientRect().width}`).join(', '))",
    );
    (
        page_width.as_u64().unwrap(),
        window.as_u64().unwrap(),
        clipped,
    )
}

/// [`widths`] at 1400 and 1000 pixels: nothing wider than the window or
/// than its panel.
fn fits_1400_and_1000_pixels(recording: &Path) {
    for width in [1400, 1000] {
        let (page, window, clipped) = widths(recording, width);
        assert!(
            page <= window,
            "{page} px of page in a {window} px window at {width}"
        );
        assert_eq!(clipped, serde_json::json!([]), "clipped at {width} px");
    }
}

/// At 1400 and 1000 pixels nothing is wider than the window or than its
/// panel: no sideways scrolling, no clipped column. The recording says as
/// much as a live agent does: a budget, attribution, a sketch, estimates.
#[test]
fn the_page_fits_1400_and_1000_pixels() {
    let mut recording = tiered_and_attributed();
    let last = recording.snapshots.last_mut().unwrap();
    last.budget = Some(BudgetStatus::over_at_floor(1.0));
    last.network_programs = Some(network_programs(last.interval_s));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.json");
    std::fs::write(&path, serde_json::to_vec(&recording).unwrap()).unwrap();
    fits_1400_and_1000_pixels(&path);
}

/// The newest snapshot is painted from /api/v1/snapshot, before (and
/// without) the history and the stream.
#[test]
fn the_page_paints_the_newest_snapshot_first() {
    let recording: Recording =
        serde_json::from_str(&std::fs::read_to_string(RECORDING).unwrap()).unwrap();
    let last = recording.snapshots.last().unwrap();
    let page = open_page_at(
        Path::new(RECORDING),
        1400,
        &["*/api/v1/history*", "*/api/v1/stream*"],
    );
    let shown = wait_for(
        &page.tab,
        "document.getElementById('value-net_rx_softirq')?.textContent",
    );
    let recorded = last.events[&EventKey::NetRxSoftirq].percent_of_cpu(last.interval_s);
    let shown: f64 = shown.as_str().unwrap().parse().unwrap();
    assert!(
        (shown - recorded).abs() <= 0.005 + 1e-9,
        "{shown} vs {recorded}"
    );
}

/// Estimates read to their error's precision (the rule of
/// src/frontends/rounding.rs), per CPU too; the jargon has tooltips in the
/// glossary's words; the start-up notes take one line until opened.
#[test]
fn the_page_explains_its_words_and_rounds_its_estimates() {
    let mut recording = tiered_and_attributed();
    let last = recording.snapshots.last_mut().unwrap();
    let error_ns = 76_300_000;
    common::in_softirq_tier(last, error_ns);
    // Recorded before agreements were: NET_RX's, as a run would measure.
    last.breakdown[0].agreement = Some(1.17);
    let send = last.events[&EventKey::SockSend].clone();
    let interval = last.interval_s;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rough.json");
    std::fs::write(&path, serde_json::to_vec(&recording).unwrap()).unwrap();
    let page = open_page(&path);
    let tab = Arc::clone(&page.tab);

    let (value, _) = netto::frontends::rounding::with_error(
        send.percent_of_cpu(interval),
        netto::model::percent(error_ns, interval),
        2,
    );
    let shown = wait_for(
        &tab,
        "document.getElementById('value-sock_send')?.textContent",
    );
    assert_eq!(shown.as_str().unwrap(), format!("~{value}"));
    let cpu0 = wait_for(
        &tab,
        "document.querySelector('#cpu-0 td:nth-child(4)')?.textContent",
    );
    assert!(cpu0.as_str().unwrap().starts_with('~'), "{cpu0}");

    let agreement = wait_for(
        &tab,
        "document.querySelector('#breakdown tr.context .word')?.title",
    );
    assert_eq!(
        agreement.as_str().unwrap(),
        netto::frontends::glossary::AGREEMENT.meaning
    );
    let titles = wait_for(
        &tab,
        "[...document.querySelectorAll('#overhead .word')].map(w => [w.textContent, w.title])",
    );
    let titles: Vec<(String, String)> = serde_json::from_value(titles).unwrap();
    let titles: BTreeMap<String, String> = titles.into_iter().collect();
    assert_eq!(
        titles["samples left out (softirq loop)"],
        netto::frontends::glossary::SOFTIRQ_LOOP.meaning
    );
    assert_eq!(
        titles["lost task windows"],
        netto::model::Losses::KINDS[0].meaning
    );
    // The notes: folded, one line saying how many.
    let notes = wait_for(
        &tab,
        "(() => { const d = document.getElementById('notes'); \
           return [d.open, d.querySelector('summary').textContent, d.querySelectorAll('li').length] })()",
    );
    assert_eq!(notes[0], false);
    assert!(
        notes[1].as_str().unwrap().starts_with("start-up note"),
        "{notes}"
    );
    assert!(notes[2].as_u64().unwrap() >= 1, "{notes}");
}

/// `recording` as taken on a host of `cpus` CPUs: each time spread evenly
/// over them (the rest of the division on CPU 0), totals unchanged.
fn on_cpus(mut recording: Recording, cpus: usize) -> Recording {
    for snapshot in &mut recording.snapshots {
        snapshot.cpus = cpus;
        let times = snapshot
            .events
            .values_mut()
            .chain(snapshot.softirq.values_mut())
            .chain([&mut snapshot.hardirq]);
        for time in times {
            let share = time.total_ns / cpus as u64;
            time.per_cpu_ns = vec![share; cpus];
            time.per_cpu_ns[0] += time.total_ns - share * cpus as u64;
        }
    }
    recording
}

/// A host of sixteen CPUs: the per-CPU table has a row for each with every
/// event's share and their sum, and at 1400 and 1000 pixels nothing is
/// wider than the window or its panel.
#[test]
fn the_page_shows_every_cpu_of_a_sixteen_cpu_host() {
    let recording = on_cpus(tiered_and_attributed(), 16);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sixteen.json");
    std::fs::write(&path, serde_json::to_vec(&recording).unwrap()).unwrap();
    netto::recording::load(&path).expect("a valid recording");
    fits_1400_and_1000_pixels(&path);
    let last = recording.snapshots.last().unwrap();
    let page = open_page_at(&path, 1000, &[]);
    let rows = wait_for(
        &page.tab,
        "(() => { const rows = [...document.querySelectorAll('#cpus tbody tr')]; \
           return rows.length === 16 ? rows.map(r => [r.id, ...[...r.cells].map(c => c.textContent)]) : null })()",
    );
    for (cpu, row) in rows.as_array().unwrap().iter().enumerate() {
        let cells: Vec<&str> = row
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        // Its id and number, five events, their sum, and the bar.
        assert_eq!(cells.len(), 9, "{row}");
        assert_eq!(cells[..2], [format!("cpu-{cpu}"), cpu.to_string()], "{row}");
        let shares: Vec<f64> = cells[2..8]
            .iter()
            .map(|c| {
                c.trim_start_matches('~')
                    .parse()
                    .unwrap_or_else(|_| panic!("CPU {cpu}: {c:?} is no share: {row}"))
            })
            .collect();
        let recorded =
            last.events[&EventKey::NetRxSoftirq].per_cpu_ns[cpu] as f64 / 1e7 / last.interval_s;
        assert!(
            (shares[0] - recorded).abs() <= 0.005 + 1e-9,
            "CPU {cpu}'s net_rx: the page shows {}, the recording has {recorded}",
            shares[0]
        );
    }
}
