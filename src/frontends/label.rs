//! Names that come from the measured host (a process's command, a cgroup
//! path, a namespace's file name) as the front ends print them. Any local
//! user can name a process (`prctl(PR_SET_NAME)`) or, with a delegated
//! subtree, a cgroup, and netto is often run as root in a terminal: a name
//! holding an escape sequence must not reach that terminal as one. The
//! model keeps names as the kernel gave them (recordings and JSON carry
//! them exactly); this is the one place they are made printable, for every
//! front end that prints them as text.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every character a terminal would act on instead of showing
/// written out: control characters (C0, DEL, C1) as `\xHH`, and the Unicode
/// marks that reorder the text around them (bidirectional embeddings,
/// overrides and isolates) as `\u{HHHH}`. A name that is empty or only
/// blanks is quoted, so that a row never looks unnamed.
pub fn printable(text: &str) -> Cow<'_, str> {
    let blank = text.chars().all(char::is_whitespace);
    if !blank && !text.chars().any(acts_on_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if c.is_control() && u32::from(c) <= 0xff => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if acts_on_terminal(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    if blank {
        out = format!("\"{out}\"");
    }
    Cow::Owned(out)
}

fn acts_on_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shown_as_they_are_unless_a_terminal_would_act_on_them() {
        for plain in [
            "sshd",
            "/system.slice/nginx.service",
            "dev-disk-by\\x2duuid",
            "zürich",
        ] {
            assert!(matches!(printable(plain), Cow::Borrowed(_)), "{plain}");
        }
        assert_eq!(printable("\u{1b}[2Jevil"), "\\x1b[2Jevil");
        assert_eq!(printable("a\tb\nc\u{7f}\u{9b}"), "a\\x09b\\x0ac\\x7f\\x9b");
        assert_eq!(printable("abc\u{202e}fdp.exe"), "abc\\u{202e}fdp.exe");
        assert_eq!(printable(""), "\"\"");
        assert_eq!(printable("   "), "\"   \"");
        assert_eq!(printable(" \t"), "\" \\x09\"");
        for name in ["\u{1b}]0;title\u{7}", "\u{9b}31m", "x\u{2066}y"] {
            let shown = printable(name);
            assert!(!shown.chars().any(acts_on_terminal), "{shown:?}");
        }
    }
}
