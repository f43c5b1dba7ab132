//! Folded stacks read back: what the tests hold netto's folded output,
//! the web view's folded endpoint and pprof profiles to. netto itself only
//! writes the format ([`super::folded`]).

use std::collections::BTreeMap;
use std::io::{self, BufRead};

use thiserror::Error;

/// One line of a folded file once read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedStack {
    /// Outermost first; the first is the sample context for netto's own
    /// output.
    pub frames: Vec<String>,
    pub count: u64,
}

#[derive(Debug, Error)]
pub enum FoldedError {
    #[error("folded stacks, line {line}: {reason}")]
    Malformed { line: usize, reason: String },
    #[error("reading folded stacks: {0}")]
    Io(#[from] io::Error),
}

/// Reads folded stacks back, adding up lines with the same stack, in
/// stack order. Blank lines and `# ` comments (which inferno also skips)
/// are ignored; anything else that is not `frames count` is an error
/// naming its line, since a silently dropped line would skew every share.
pub fn parse_folded(input: impl BufRead) -> Result<Vec<FoldedStack>, FoldedError> {
    let mut merged: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for (index, line) in input.lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|err| match err.kind() {
            io::ErrorKind::InvalidData => malformed(number, "not valid UTF-8"),
            _ => FoldedError::Io(err),
        })?;
        let line = line.trim();
        if line.is_empty() || line.starts_with("# ") {
            continue;
        }
        let (frames, count) = parse_line(line).map_err(|reason| malformed(number, reason))?;
        let total = merged.entry(frames).or_default();
        *total = total
            .checked_add(count)
            .ok_or_else(|| malformed(number, "sample count overflows"))?;
    }
    Ok(merged
        .into_iter()
        .map(|(frames, count)| FoldedStack { frames, count })
        .collect())
}

fn parse_line(line: &str) -> Result<(Vec<String>, u64), String> {
    let (stack, count) = line
        .rsplit_once(char::is_whitespace)
        .ok_or("no sample count after the stack")?;
    let count = count
        .parse::<u64>()
        .map_err(|_| format!("sample count `{count}` is not a whole number"))?;
    let stack = stack.trim_end();
    if stack.is_empty() {
        return Err("no frames before the sample count".into());
    }
    let frames: Vec<String> = stack.split(';').map(str::to_owned).collect();
    if frames.iter().any(String::is_empty) {
        return Err("empty frame (two `;` in a row, or one at an end)".into());
    }
    Ok((frames, count))
}

fn malformed(line: usize, reason: impl Into<String>) -> FoldedError {
    FoldedError::Malformed {
        line,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontends::flame::folded::write_folded;
    use crate::frontends::flame::FlameStack;
    use crate::model::SampleContext;

    #[test]
    fn round_trip_keeps_every_count_and_merges_duplicates() {
        let stacks = vec![
            FlameStack::of(SampleContext::NetRx, &["__do_softirq", "net_rx_action"], 5),
            FlameStack::of(SampleContext::NetTx, &["__do_softirq", "net_tx_action"], 3),
            FlameStack::of(SampleContext::SockSend, &["tcp_sendmsg", "tcp_push"], 11),
            FlameStack::of(SampleContext::SockRecv, &["tcp_recvmsg", "[unknown]"], 2),
            // Same path as the first, from a later interval.
            FlameStack::of(SampleContext::NetRx, &["__do_softirq", "net_rx_action"], 4),
            // Same frames, other context: must stay apart.
            FlameStack::of(SampleContext::NetTx, &["__do_softirq", "net_rx_action"], 1),
        ];
        let mut expected: BTreeMap<Vec<String>, u64> = BTreeMap::new();
        for s in &stacks {
            let mut frames = vec![s.context.name().to_string()];
            frames.extend(s.frames.iter().cloned());
            *expected.entry(frames).or_default() += s.width;
        }

        let mut written = Vec::new();
        write_folded(&stacks, &mut written).unwrap();
        let parsed = parse_folded(&written[..]).unwrap();
        let got: BTreeMap<Vec<String>, u64> =
            parsed.into_iter().map(|s| (s.frames, s.count)).collect();
        assert_eq!(got, expected);
        assert_eq!(got.values().sum::<u64>(), 26);
    }

    #[test]
    fn parser_merges_duplicate_lines_and_skips_blanks_and_comments() {
        let text = "# made by hand\n\na;b 2\r\na;b 3\na;c 1\n";
        let parsed = parse_folded(text.as_bytes()).unwrap();
        assert_eq!(
            parsed,
            vec![
                FoldedStack {
                    frames: vec!["a".into(), "b".into()],
                    count: 5
                },
                FoldedStack {
                    frames: vec!["a".into(), "c".into()],
                    count: 1
                },
            ]
        );
    }

    #[test]
    fn frames_with_spaces_keep_them() {
        let parsed = parse_folded("net_rx;veth_xmit [veth] 4\n".as_bytes()).unwrap();
        assert_eq!(parsed[0].frames, vec!["net_rx", "veth_xmit [veth]"]);
        assert_eq!(parsed[0].count, 4);
    }

    #[test]
    fn malformed_lines_are_errors_naming_the_line() {
        for (text, line, reason) in [
            ("a;b 1\na;b\n", 2, "no sample count"),
            ("a;b 1\n\na;b x\n", 3, "`x` is not a whole number"),
            ("a;b -1\n", 1, "`-1` is not a whole number"),
            ("a;b 1.5\n", 1, "not a whole number"),
            ("a;;b 1\n", 1, "empty frame"),
            ("a; 1\n", 1, "empty frame"),
            ("a 1\n 7\n", 2, "no sample count"),
            ("a 18446744073709551615\na 1\n", 2, "overflows"),
        ] {
            let err = parse_folded(text.as_bytes()).unwrap_err();
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("folded stacks, line {line}: ")),
                "{text:?}: {message}"
            );
            assert!(message.contains(reason), "{text:?}: {message}");
        }
    }

    #[test]
    fn invalid_utf8_names_its_line() {
        let err = parse_folded(&b"a 1\n\xff\xfe 2\n"[..]).unwrap_err();
        assert_eq!(err.to_string(), "folded stacks, line 2: not valid UTF-8");
    }
}
