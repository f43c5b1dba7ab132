//! Looking a frame up in the tables: [`RULES`] and [`HOOKS`] indexed once,
//! and the skid functions.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::Category::{self, *};
use super::{Action, Pattern, HOOKS, RULES, SKID};
use crate::symbols::kallsyms::normalize_name;
use crate::symbols::symbolizer::FastState;
use Action::{Is, Netfilter};
use Pattern::{Contains, Exact, Prefix, Suffix};

/// Whether `frame` is one of the [`SKID`] functions.
pub fn is_skid(frame: &str) -> bool {
    let name = normalize_name(frame);
    SKID.iter().any(|pattern| pattern.matches(name))
}

/// [`RULES`] and [`HOOKS`] indexed for lookup. An unmatched frame (most
/// leaf helpers) is tested against every pattern, so prefixes are
/// bucketed by their first byte and only a bucket is scanned.
struct Matcher {
    exact: HashMap<&'static str, Action, FastState>,
    /// Prefix rows by first byte, each bucket in table order.
    prefixes: Vec<Vec<(usize, &'static str, Action)>>,
    /// Suffix and substring rows, in table order.
    others: Vec<(usize, Pattern, Action)>,
    hooks: HashMap<&'static str, Category, FastState>,
}

fn matcher() -> &'static Matcher {
    static MATCHER: OnceLock<Matcher> = OnceLock::new();
    MATCHER.get_or_init(|| {
        let mut m = Matcher {
            exact: HashMap::default(),
            prefixes: vec![Vec::new(); 256],
            others: Vec::new(),
            hooks: HOOKS.iter().copied().collect(),
        };
        for (row, &(pattern, action)) in RULES.iter().enumerate() {
            match pattern {
                Exact(name) => {
                    m.exact.entry(name).or_insert(action);
                }
                Prefix(p) => {
                    let first = p.as_bytes().first().copied().unwrap_or_default();
                    m.prefixes[usize::from(first)].push((row, p, action));
                }
                Suffix(_) | Contains(_) => m.others.push((row, pattern, action)),
            }
        }
        m
    })
}

/// What `frame` means by itself, if any row matches it.
pub fn action(frame: &str) -> Option<Action> {
    let m = matcher();
    let name = normalize_name(frame);
    if let Some(&action) = m.exact.get(name) {
        return Some(action);
    }
    let bucket = name
        .as_bytes()
        .first()
        .map_or(&[][..], |&b| &m.prefixes[usize::from(b)]);
    let prefix = bucket.iter().find(|(_, p, _)| name.starts_with(p));
    let other = m.others.iter().find(|(_, p, _)| p.matches(name));
    match (prefix, other) {
        (Some(&(a, _, prefix)), Some(&(b, _, other))) => Some(if a < b { prefix } else { other }),
        (Some(&(_, _, action)), None) | (None, Some(&(_, _, action))) => Some(action),
        (None, None) => None,
    }
}

/// The hook of the netfilter frame last in `outward` (rule 2), walking
/// towards the outermost frame.
pub fn hook<S: AsRef<str>>(outward: &[S]) -> Category {
    let hooks = &matcher().hooks;
    for frame in outward.iter().rev() {
        let name = normalize_name(frame.as_ref());
        if let Some(&hook) = hooks.get(name) {
            return hook;
        }
        match action(name) {
            None | Some(Netfilter) | Some(Is(Conntrack)) => {}
            Some(Is(_) | Action::Program) => break,
        }
    }
    NetfilterOther
}
