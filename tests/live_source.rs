//! The live source as the TUI and the web server drive it: snapshots per
//! interval, a sampling frequency changed while running, attribution
//! turned off and on, and nothing left loaded once it is dropped.

mod common;

use std::time::Duration;

use netto::collect::attribution;
use netto::kernel::backend::BackendChoice;
use netto::kernel::sampler::Transport;
use netto::model::{EventKey, GroupBy, Snapshot};
use netto::source::live::{self, DemoWhen, LiveConfig, StackSampling};
use netto::source::Control;

#[test]
fn frequency_changes_while_running_and_everything_unloads() {
    // Programs of earlier tests may still be on the kernel's free queue.
    let settled = (0..100).any(|_| {
        common::netto_programs_loaded() == 0 || {
            std::thread::sleep(Duration::from_millis(100));
            false
        }
    });
    assert!(settled, "netto programs of an earlier test still loaded");
    let before = 0;
    let source = live::start(LiveConfig {
        backend: BackendChoice::Auto,
        bpf_stats: false,
        interval: Duration::from_millis(300),
        duration: None,
        sampling: Some(StackSampling {
            frequency_hz: 200,
            transport: Transport::Mmap,
        }),
        demo: DemoWhen::Off,
        flush_on_stop: false,
        xdp_sketch: None,
        attribution: None,
        budget: None,
    })
    .expect("starting the live source");
    assert!(source.is_live());
    assert_eq!(source.info.frequency_hz, Some(200));
    assert!(common::netto_programs_loaded() > before);

    let next = || {
        source
            .snapshots
            .recv_timeout(Duration::from_secs(5))
            .expect("a snapshot per interval")
    };
    let first = next();
    assert_eq!(first.sampling.as_ref().unwrap().frequency_hz, 200);
    assert!((first.interval_s - 0.3).abs() < 0.1, "{}", first.interval_s);
    // Nothing lost at 200 Hz on an ordinary run.
    assert!(!first.losses.any(), "{:?}", first.losses);

    source
        .controller()
        .send(Control::SetFrequency(2000))
        .unwrap();
    // The interval in progress may end with either sampler; the one after
    // is all at the new frequency.
    let _ = next();
    let later = next();
    assert_eq!(later.sampling.as_ref().unwrap().frequency_hz, 2000);
    // Out of range requests are clamped, never an error.
    source
        .controller()
        .send(Control::SetFrequency(1_000_000))
        .unwrap();
    let _ = next();
    assert_eq!(next().sampling.as_ref().unwrap().frequency_hz, 10_000);

    source.finish().expect("the source ends cleanly");
    // The kernel frees released programs from a work queue, shortly after.
    let gone = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        common::netto_programs_loaded() == before
    });
    assert!(
        gone,
        "{} netto programs still loaded",
        common::netto_programs_loaded()
    );
}

/// Attribution is a knob: `Control::SetAttribution` detaches its delivery
/// points (their links go) and snapshots say it is off, with every event's
/// time unattributed; turned on again, the links and the groups are back.
#[test]
fn attribution_turns_off_and_on_while_running() {
    let source = live::start(LiveConfig {
        backend: BackendChoice::Auto,
        bpf_stats: false,
        interval: Duration::from_millis(300),
        duration: None,
        sampling: None,
        demo: DemoWhen::Off,
        flush_on_stop: false,
        xdp_sketch: None,
        attribution: Some(attribution::Config {
            by: GroupBy::Process,
            max_groups: 5,
        }),
        budget: None,
    })
    .expect("starting the live source");
    let next = || {
        source
            .snapshots
            .recv_timeout(Duration::from_secs(5))
            .expect("a snapshot per interval")
    };
    let attribution = |s: &Snapshot| {
        s.attribution
            .clone()
            .expect("attribution in every snapshot")
    };
    let first = attribution(&next());
    assert!(first.on, "{first:?}");
    assert_eq!(first.by, GroupBy::Process);
    assert!(
        common::attribution_links() > 0,
        "no delivery point attached"
    );

    source
        .controller()
        .send(Control::SetAttribution(false))
        .unwrap();
    let _ = next();
    let off = next();
    let a = attribution(&off);
    assert!(!a.on && a.groups.is_empty(), "{a:?}");
    for key in EventKey::ALL {
        assert_eq!(a.unattributed[&key], off.event(key).total_ns, "{key:?}");
    }
    assert_eq!(
        common::attribution_links(),
        0,
        "delivery points still attached"
    );

    source
        .controller()
        .send(Control::SetAttribution(true))
        .unwrap();
    let _ = next();
    assert!(attribution(&next()).on);
    assert!(common::attribution_links() > 0);
    source.finish().expect("the source ends cleanly");
}
