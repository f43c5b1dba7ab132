//! The long-run check of `netto serve` (benches/soak.sh), short: 25 s at
//! 10 kHz under the demo traffic with 5 stream clients. Memory stays flat
//! after warm-up, every client gets every snapshot, and every loss the
//! snapshots report is counted by /metrics. Needs root and BPF.

use std::process::Command;

#[test]
fn serve_soak_short() {
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/soak.sh"))
        .args(["--duration", "25", "--clients", "5", "--interval", "0.5"])
        .args(["--history", "5", "--warmup", "10", "--rss-every", "1"])
        .args(["--netto", env!("CARGO_BIN_EXE_netto")])
        // A test never rewrites the docs' performance table.
        .env_remove("NETTO_BENCH_TABLE")
        .output()
        .expect("running benches/soak.sh");
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{report}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the soak failed: {:?}", out.status);
    for line in [
        "RSS of netto's processes",
        "every client's snapshots tile time",
        "dropped_halves",
        "every check held",
    ] {
        assert!(report.contains(line), "{line:?} missing");
    }
}
