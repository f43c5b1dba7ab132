//! Folded stacks, the plain-text exchange format of flame graph tools
//! (flamegraph.pl, inferno, speedscope): one line per distinct stack,
//! frames outermost first joined by `;`, then a space and the width
//! (nanoseconds of exact time, or samples: [`super::Weight`]). The sample
//! context is the root frame (`net_rx;__do_softirq;... 12`), so the same
//! kernel path under two contexts stays two towers instead of silently
//! merging; in a graph of every group, the group's frame is above it
//! (`[/system.slice/nginx.service];net_rx;... 12`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, Write};

use super::FlameStack;

/// What the symbolizer writes for a frame it could not name; reused here
/// so an address that slipped through reads the same as any other
/// unnamed frame.
const UNKNOWN_FRAME: &str = "[unknown]";

/// Below this many hex digits a name such as `add` or `dec` is a plausible
/// function; kernel addresses are at least this long.
const MIN_ADDRESS_DIGITS: usize = 8;

/// Writes one line per distinct stack, sorted, with duplicates (the same
/// stack reported in several intervals) added up. Stacks with no samples
/// are left out: they would draw nothing and only lengthen the file.
pub fn write_folded(stacks: &[FlameStack], out: &mut dyn Write) -> io::Result<()> {
    for (stack, count) in fold(stacks) {
        writeln!(out, "{stack} {count}")?;
    }
    Ok(())
}

/// The folded lines without their counts, keyed by stack text, which is
/// what inferno and the differential step consume.
pub(super) fn fold(stacks: &[FlameStack]) -> BTreeMap<String, u64> {
    let mut folded = BTreeMap::new();
    for stack in stacks.iter().filter(|s| s.width > 0) {
        let mut line = String::new();
        if let Some(root) = &stack.root {
            line.push_str(&frame_label(root));
            line.push(';');
        }
        line.push_str(stack.context.name());
        for frame in &stack.frames {
            line.push(';');
            line.push_str(&frame_label(frame));
        }
        let total: &mut u64 = folded.entry(line).or_default();
        *total = total.saturating_add(stack.width);
    }
    folded
}

/// Makes a frame safe to place in a folded line: `;` would split it into
/// two frames and a line break would end the line, so both are replaced.
/// Anything that looks like a kernel address becomes `[unknown]`, because
/// netto never prints an address even when a caller hands one in.
pub(super) fn frame_label(frame: &str) -> Cow<'_, str> {
    let needs_cleaning = |c: char| c == ';' || c.is_control();
    let label = if frame.contains(needs_cleaning) {
        Cow::Owned(
            frame
                .chars()
                .map(|c| match c {
                    ';' => ':',
                    c if c.is_control() => ' ',
                    c => c,
                })
                .collect(),
        )
    } else {
        Cow::Borrowed(frame)
    };
    let trimmed = label.trim();
    if trimmed.is_empty() || looks_like_address(trimmed) {
        Cow::Borrowed(UNKNOWN_FRAME)
    } else if trimmed.len() == label.len() {
        label
    } else {
        Cow::Owned(trimmed.to_owned())
    }
}

fn looks_like_address(s: &str) -> bool {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    digits.len() >= MIN_ADDRESS_DIGITS && digits.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SampleContext;

    fn folded_text(stacks: &[FlameStack]) -> String {
        let mut out = Vec::new();
        write_folded(stacks, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn context_is_the_root_frame_outermost_first() {
        let text = folded_text(&[FlameStack::of(
            SampleContext::NetRx,
            &["__do_softirq", "net_rx_action", "napi_poll"],
            7,
        )]);
        assert_eq!(text, "net_rx;__do_softirq;net_rx_action;napi_poll 7\n");
    }

    #[test]
    fn separators_and_addresses_never_reach_the_output() {
        let text = folded_text(&[
            FlameStack::of(
                SampleContext::NetRx,
                &[
                    "ffffffff81a2b3c4",
                    "0xffffffffc0de0042",
                    "odd;name",
                    "two\nlines",
                    "",
                ],
                1,
            ),
            FlameStack::of(SampleContext::NetRx, &["unused"], 0),
        ]);
        assert_eq!(
            text,
            "net_rx;[unknown];[unknown];odd:name;two lines;[unknown] 1\n"
        );
    }

    #[test]
    fn short_hex_looking_names_are_functions_not_addresses() {
        assert_eq!(frame_label("add"), "add");
        assert_eq!(frame_label("deadbee"), "deadbee");
        assert_eq!(frame_label("tcp_ack+0x1a/0x2c0"), "tcp_ack+0x1a/0x2c0");
    }
}
