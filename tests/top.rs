//! `netto top` as a user runs it: in a real terminal (tmux), typing keys
//! and reading the screen. A replayed recording needs neither root nor
//! BPF; the live run measures a veth load and needs both.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::thread;
use std::time::Duration;

use common::pane::Pane;
use common::*;
use netto::frontends::tui::format;
use netto::model::{EventKey, Snapshot};

/// The words on the line that starts (after the border) with `label`.
fn row<'a>(screen: &'a str, label: &str) -> Vec<&'a str> {
    let line = screen
        .lines()
        .find(|l| l.trim_start_matches(['│', '┃', ' ']).starts_with(label))
        .unwrap_or_else(|| panic!("no {label} row:\n{screen}"));
    line.split(|c: char| c.is_whitespace() || "│┃".contains(c))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The totals view's numbers for `key`, as the UI prints them.
fn expected_row(snapshot: &Snapshot, key: EventKey) -> [String; 2] {
    let time = snapshot.event(key);
    let host = snapshot.interval_s * snapshot.cpus as f64;
    [
        format::percent(netto::model::percent(time.total_ns, host)),
        format::percent(time.percent_of_cpu(snapshot.interval_s)),
    ]
}

/// After Tab, Down, Right: the first category of the breakdown is open,
/// its hottest functions listed under it.
fn assert_a_category_opens(pane: &Pane) {
    let open = |l: &str| l.contains("│  v ") || l.contains("┃  v ");
    let opened = pane.wait_for("an open category", Duration::from_secs(5), |s| {
        s.lines().any(open)
    });
    let function = opened.lines().skip_while(|l| !open(l)).nth(1).unwrap();
    // A function where interrupts come back on is marked after its name.
    let mut words = row(function, "");
    if words.get(1) == Some(&"skid") {
        words.remove(1);
    }
    assert!(
        words.len() == 4 && words[1].ends_with('%') && words[3].parse::<u64>().is_ok(),
        "a function row (name, share, CPU, samples) under the category:\n{opened}"
    );
}

#[test]
fn replay_shows_the_recording_and_q_restores_the_terminal() {
    let recording = recording();
    let last = recording.snapshots.last().unwrap();
    let pane = Pane::new(120, 40);
    pane.run_netto(&format!("top --replay {RECORDING} --speed 4"));
    let screen = pane.wait_for("end of the replay", Duration::from_secs(20), |s| {
        s.contains("finished; q quits")
    });
    assert!(pane.terminal_state().0, "on the alternate screen");
    let header = row(&screen, "host");
    let h = &recording.header;
    assert_eq!(
        header[..6],
        [
            "host",
            h.host.as_str(),
            "kernel",
            h.kernel.as_str(),
            "backend",
            h.backend.as_str()
        ]
    );
    // Recorded before tiers: exact throughout.
    assert_eq!(header[6..10], ["tier", "exact", "replay", "of"]);
    for key in [
        EventKey::NetRxSoftirq,
        EventKey::NetTxSoftirq,
        EventKey::SockSend,
        EventKey::SockRecv,
    ] {
        let shown = row(&screen, key.name());
        assert_eq!(shown[1..3], expected_row(last, key), "{}", key.name());
        assert_eq!(
            shown[3],
            format::quantity(last.event(key).count as f64 / last.interval_s)
        );
    }
    // The breakdown of the last five seconds: those snapshots' samples,
    // each category's share of their time together.
    let window: Vec<&Snapshot> = recording
        .snapshots
        .iter()
        .filter(|s| s.ts > last.ts - 5.0)
        .collect();
    let rx: Vec<_> = window.iter().map(|s| &s.breakdown[0]).collect();
    let samples: u64 = rx.iter().map(|b| b.samples).sum();
    assert_eq!(row(&screen, "v NET_RX")[4], samples.to_string());
    let cpu_ns = |name: &str| -> u64 {
        rx.iter()
            .flat_map(|b| &b.categories)
            .filter(|k| k.category == name)
            .map(|k| k.cpu_ns)
            .sum()
    };
    let sampled: u64 = rx
        .iter()
        .flat_map(|b| &b.categories)
        .map(|k| k.cpu_ns)
        .sum();
    let top = &last.breakdown[0].categories[0].category;
    let category = row(&screen, &format!("> {top}"));
    assert_eq!(
        category[2],
        format::percent(cpu_ns(top) as f64 * 100.0 / sampled as f64)
    );
    let top_samples: u64 = rx
        .iter()
        .flat_map(|b| &b.categories)
        .filter(|k| &k.category == top)
        .map(|k| k.samples)
        .sum();
    assert_eq!(category[4], top_samples.to_string());

    pane.keys(&["q"]);
    pane.assert_exits_and_restores(Duration::from_secs(1));
}

#[test]
fn replay_keys_per_cpu_pause_help_and_flame_graph() {
    let pane = Pane::new(100, 30);
    pane.run_netto(&format!(
        "top --replay {RECORDING} --speed 1 --flame-seconds 60"
    ));
    pane.wait_for("first snapshot", Duration::from_secs(20), |s| {
        s.contains("net_rx_softirq")
    });

    pane.keys(&["c"]);
    let per_cpu = pane.wait_for("per-CPU rows", Duration::from_secs(2), |s| {
        s.contains("cpu0") && s.contains("cpu1")
    });
    assert!(per_cpu.contains("% of each CPU"), "{per_cpu}");
    pane.keys(&["p"]);
    pane.wait_for("pause", Duration::from_secs(2), |s| s.contains("PAUSED"));
    pane.keys(&["+"]);
    pane.wait_for("refusal", Duration::from_secs(2), |s| {
        s.contains("a replay keeps its recorded sampling frequency")
    });
    pane.keys(&["?"]);
    pane.wait_for("help", Duration::from_secs(2), |s| {
        s.contains("netto top: keys")
    });
    pane.keys(&["Escape"]);
    pane.wait_for("help closed", Duration::from_secs(2), |s| {
        !s.contains("netto top: keys")
    });

    for key in ["Tab", "Down", "Right"] {
        pane.keys(&[key]);
        thread::sleep(Duration::from_millis(100));
    }
    assert_a_category_opens(&pane);

    pane.keys(&["s"]);
    let screen = pane.wait_for("flame graph", Duration::from_secs(10), |s| {
        s.contains("flame graph of the last 60 s written to")
    });
    let written: Vec<PathBuf> = std::fs::read_dir(pane.dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    assert_eq!(written.len(), 1, "{screen}");
    let name = written[0].file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("netto-top-"), "{name}");
    assert!(
        screen.contains(name),
        "the status line names the file:\n{screen}"
    );
    let svg = std::fs::read_to_string(&written[0]).unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains(&format!(
        "Kernel network stack CPU on {}",
        recording().header.host
    )));
    assert!(svg.contains("widths: exact time"), "the default weight");

    pane.keys(&["C-c"]);
    pane.assert_exits_and_restores(Duration::from_secs(1));
}

#[test]
fn signals_end_the_ui_and_restore_the_terminal() {
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        let pane = Pane::new(100, 30);
        pane.run_netto(&format!("top --replay {RECORDING}"));
        pane.wait_for("first snapshot", Duration::from_secs(20), |s| {
            s.contains("net_rx_softirq")
        });
        common::kill(pane.netto_pid(), signal);
        pane.assert_exits_and_restores(Duration::from_secs(2));
    }
}

#[test]
fn too_small_a_terminal_says_so_until_it_grows() {
    let pane = Pane::new(70, 20);
    pane.run_netto(&format!("top --replay {RECORDING}"));
    pane.wait_for("too-small message", Duration::from_secs(20), |s| {
        s.contains("terminal too small: 70x20") && s.contains("needs at least 80x24")
    });
    pane.tmux(&["resize-window", "-x", "80", "-y", "24"]);
    let screen = pane.wait_for("panels", Duration::from_secs(5), |s| {
        s.contains("events:") && s.contains("breakdown,")
    });
    assert!(!screen.contains("too small"));
    pane.keys(&["q"]);
    pane.assert_exits_and_restores(Duration::from_secs(1));
}

#[test]
fn bad_replay_input_is_one_line_before_the_screen_opens() {
    let pane = Pane::new(100, 30);
    let missing = pane.path("missing.json");
    pane.run_netto(&format!("top --replay {}", missing.display()));
    let screen = pane.wait_for("exit", Duration::from_secs(10), |s| s.contains("EXIT="));
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(screen.contains(&format!("netto: error: cannot read {}", missing.display())));
    assert_eq!(pane.terminal_state(), (false, true));

    // Not a terminal: refused with a pointer to the commands that write files.
    let out = Command::new(NETTO)
        .args(["top", "--replay", RECORDING])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("netto: error: netto top needs a terminal"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1);
}

#[test]
fn a_malformed_recording_is_one_line_before_the_screen_opens() {
    // The snapshots lack an event key: top used to panic on them (exit 101).
    let mut broken = recording_json();
    for snapshot in broken["snapshots"].as_array_mut().unwrap() {
        snapshot["events"]
            .as_object_mut()
            .unwrap()
            .remove("net_timers");
    }
    let pane = Pane::new(100, 30);
    let path = pane.path("broken.json");
    std::fs::write(&path, broken.to_string()).unwrap();
    pane.run_netto(&format!("top --replay {}", path.display()));
    let screen = pane.wait_for("exit", Duration::from_secs(10), |s| s.contains("EXIT="));
    assert!(screen.contains("EXIT=2"), "{screen}");
    assert!(
        screen.contains(&format!(
            "netto: error: {}: snapshots[0].events: lacks net_timers",
            path.display()
        )),
        "{screen}"
    );
    assert_eq!(pane.terminal_state(), (false, true));
}

#[test]
fn live_under_a_veth_load_then_gone_without_a_trace() {
    // Programs of earlier tests may still be on the kernel's free queue.
    let settled = (0..100).any(|_| {
        netto_programs_loaded() == 0 || {
            std::thread::sleep(Duration::from_millis(100));
            false
        }
    });
    assert!(settled, "netto programs of an earlier test still loaded");
    let before = 0;
    let pair = common::veth_pair("top").expect("creating the test namespace");
    let dest = format!("{}:5611", pair.peer_addr());
    let seconds = 8;
    let _sink = Server::start(loadgen_in(
        &pair,
        &format!(
            "discard --proto tcp --listen {dest} --duration {}",
            seconds + 5
        ),
    ));
    let load = thread::spawn(move || {
        run_client(loadgen(&format!(
            "send --proto tcp --syscall write --dest {dest} --duration {seconds}"
        )))
    });

    let pane = Pane::new(120, 40);
    pane.run_netto("top --interval 0.5 --frequency 499");
    let screen = pane.wait_for("network time on screen", Duration::from_secs(30), |s| {
        s.contains("live")
            && s.contains("v NET_RX")
            && s.lines()
                .any(|l| l.contains("net_rx_softirq") && !l.contains(" 0.0%"))
    });
    let rx = row(&screen, "net_rx_softirq");
    let host: f64 = rx[1].trim_end_matches('%').parse().unwrap();
    assert!(host > 0.0, "{screen}");
    assert!(row(&screen, "sampling")[1] == "499", "{screen}");
    assert!(netto_programs_loaded() > before);

    pane.keys(&["+"]);
    // The first interval of a new sampler may hold no stack yet; the
    // breakdown keys need a tree to move in.
    pane.wait_for("the new frequency measured", Duration::from_secs(10), |s| {
        s.lines().any(|l| l.starts_with("sampling 999 Hz  ")) && s.contains("  > ")
    });
    // Single-byte keys: under load, an arrow's escape sequence may reach
    // netto split across reads (the replay test drives the arrows).
    // TCP delivered into the namespace: its receive path is sampled.
    let screen = pane.wait_for("local TCP delivery", Duration::from_secs(5), |s| {
        s.contains("> local_tcp")
    });
    let tcp = row(&screen, "> local_tcp");
    assert!(
        tcp[2].ends_with('%') && tcp[4].parse::<u64>().unwrap() > 0,
        "{screen}"
    );

    pane.keys(&["q"]);
    pane.assert_exits_and_restores(Duration::from_secs(5));
    load.join().unwrap();
    let gone = (0..50).any(|_| {
        thread::sleep(Duration::from_millis(100));
        netto_programs_loaded() == before
    });
    assert!(gone, "netto's programs still loaded after it exited");
}
