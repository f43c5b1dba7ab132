//! Differential flame graphs: what changed between two runs (before and
//! after a kernel upgrade, a sysctl, a driver setting). The picture has
//! the shape of the *after* run; each frame is red where it gained samples
//! and blue where it lost some, as in Brendan Gregg's differential flame
//! graphs. Paths that vanished entirely have no width after, so they do not
//! show; swapping the two runs shows them.

use std::io::{self, Write};

use inferno::differential;

use super::folded::fold;
use super::{draw, inferno_options, FlameError, Labels};
use super::{FlameStack, Weight};

/// Writes `stack before after` lines, sorted, for every stack in either
/// run: the input of any differential flame graph tool.
///
/// `normalize` scales the before counts to the after total, so runs of
/// different lengths or sampling rates compare by share rather than by raw
/// count (otherwise a longer second run turns everything red).
pub fn write_diff_folded(
    before: &[FlameStack],
    after: &[FlameStack],
    normalize: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    for line in diff_lines(before, after, normalize)? {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// Draws the differential flame graph of `before` -> `after`, both
/// weighted by `weight`. Fails with [`FlameError::NoSamples`] before
/// writing anything when the after run has nothing to draw, since it gives
/// the graph its widths.
pub fn write_diff_svg(
    before: &[FlameStack],
    after: &[FlameStack],
    normalize: bool,
    labels: &Labels,
    weight: Weight,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    if after.iter().all(|stack| stack.width == 0) {
        return Err(FlameError::NoSamples);
    }
    let lines = diff_lines(before, after, normalize)?;
    draw(&mut inferno_options(labels, weight), &lines, out)
}

fn diff_lines(
    before: &[FlameStack],
    after: &[FlameStack],
    normalize: bool,
) -> io::Result<Vec<String>> {
    let options = differential::Options {
        normalize,
        strip_hex: false,
    };
    let mut merged = Vec::new();
    differential::from_readers(
        options,
        folded_bytes(before).as_slice(),
        folded_bytes(after).as_slice(),
        &mut merged,
    )?;
    let text =
        String::from_utf8(merged).map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
    // inferno emits its lines in hash order; sorted, the same two runs
    // always give the same file.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort_unstable();
    Ok(lines)
}

fn folded_bytes(stacks: &[FlameStack]) -> Vec<u8> {
    fold(stacks)
        .into_iter()
        .flat_map(|(stack, count)| format!("{stack} {count}\n").into_bytes())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::SampleContext;

    fn run() -> Vec<FlameStack> {
        vec![
            FlameStack::of(SampleContext::NetRx, &["__do_softirq", "net_rx_action"], 50),
            FlameStack::of(SampleContext::NetTx, &["__do_softirq", "net_tx_action"], 7),
            FlameStack::of(SampleContext::SockSend, &["tcp_sendmsg", "tcp_push"], 31),
            FlameStack::of(SampleContext::SockRecv, &["tcp_recvmsg"], 12),
            FlameStack::of(SampleContext::NetRx, &["__do_softirq", "net_rx_action"], 5),
        ]
    }

    /// Stack -> (before, after), read back from the folded diff text.
    fn parse_diff(text: &str) -> BTreeMap<String, (u64, u64)> {
        text.lines()
            .map(|line| {
                let mut fields = line.rsplitn(3, ' ');
                let after = fields.next().unwrap().parse().unwrap();
                let before = fields.next().unwrap().parse().unwrap();
                let stack = fields.next().unwrap().to_string();
                (stack, (before, after))
            })
            .collect()
    }

    fn diff_text(before: &[FlameStack], after: &[FlameStack], normalize: bool) -> String {
        let mut out = Vec::new();
        write_diff_folded(before, after, normalize, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_run_against_itself_changes_nothing() {
        for normalize in [false, true] {
            let diff = parse_diff(&diff_text(&run(), &run(), normalize));
            assert_eq!(diff.len(), 4);
            for (stack, (before, after)) in &diff {
                assert!(*after > 0, "{stack}");
                assert_eq!(before, after, "{stack}: delta must be 0");
            }
        }
    }

    #[test]
    fn changes_and_one_sided_stacks_are_kept() {
        let after = vec![
            FlameStack::of(SampleContext::NetRx, &["__do_softirq", "net_rx_action"], 80),
            FlameStack::of(SampleContext::SockSend, &["tcp_sendmsg", "tcp_push"], 31),
            FlameStack::of(SampleContext::SockSend, &["udp_sendmsg"], 9),
        ];
        let diff = parse_diff(&diff_text(&run(), &after, false));
        assert_eq!(diff["net_rx;__do_softirq;net_rx_action"], (55, 80));
        assert_eq!(diff["sock_send;tcp_sendmsg;tcp_push"], (31, 31));
        assert_eq!(diff["sock_send;udp_sendmsg"], (0, 9));
        assert_eq!(diff["sock_recv;tcp_recvmsg"], (12, 0));
    }

    #[test]
    fn output_is_sorted_and_repeatable() {
        let text = diff_text(&run(), &run(), false);
        let mut sorted: Vec<&str> = text.lines().collect();
        sorted.sort_unstable();
        assert_eq!(text.lines().collect::<Vec<_>>(), sorted);
        assert_eq!(text, diff_text(&run(), &run(), false));
    }

    #[test]
    fn normalizing_scales_before_to_the_after_total() {
        let doubled: Vec<FlameStack> = run()
            .into_iter()
            .map(|s| FlameStack {
                width: s.width * 2,
                ..s
            })
            .collect();
        let diff = parse_diff(&diff_text(&run(), &doubled, true));
        for (stack, (before, after)) in diff {
            assert_eq!(before, after, "{stack}");
        }
    }

    #[test]
    fn self_diff_svg_is_well_formed_and_all_zero() {
        let labels = Labels {
            title: "before vs after".into(),
            subtitle: "box1".into(),
            estimated: false,
        };
        let mut out = Vec::new();
        write_diff_svg(&run(), &run(), false, &labels, Weight::Samples, &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        let doc = super::super::parse_svg(&svg);
        let titles: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("title"))
            .filter_map(|n| n.text())
            .collect();
        assert!(titles.iter().any(|t| t.starts_with("tcp_sendmsg (")));
        // inferno writes each frame's change after `;`; unchanged is 0.00%.
        let changes: Vec<&&str> = titles.iter().filter(|t| t.contains(';')).collect();
        // 4 contexts, __do_softirq twice, 5 leaves.
        assert_eq!(changes.len(), 11, "{titles:?}");
        for title in changes {
            assert!(title.ends_with("; 0.00%)"), "{title}");
        }
        assert!(svg.contains("before vs after"));
    }

    #[test]
    fn no_after_samples_writes_nothing() {
        let labels = Labels {
            title: "t".into(),
            subtitle: "s".into(),
            estimated: false,
        };
        let mut out = Vec::new();
        let err =
            write_diff_svg(&run(), &[], false, &labels, Weight::Samples, &mut out).unwrap_err();
        assert!(matches!(err, FlameError::NoSamples));
        assert!(out.is_empty());
    }
}
