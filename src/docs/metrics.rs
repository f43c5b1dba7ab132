//! docs/src/reference/metrics.md: every family of the metrics table, by
//! concern, as `/metrics` serves it, and the values of its labels.

use std::fmt::Write as _;

use crate::frontends::web::metrics::families::{Concern, Label, FAMILIES};

pub fn page() -> String {
    let mut page = format!(
        "# Metrics\n\n{}\n\n\
         `netto serve` serves these families at `/metrics`, in the Prometheus text format. \
         A counter (its name ends in `_total`) is cumulative since netto started: read it \
         through `rate()` or `increase()`, and a scrape at any interval sees every second. A \
         gauge is the value now, or of the last interval. Times are in seconds; per-CPU times \
         add up over the CPUs to CPU-seconds, so `rate(...) * 100` is percent of one CPU. Where \
         a label's values are a closed set, [Labels](#labels) lists them.\n",
        super::GENERATED
    );
    for concern in Concern::ALL {
        let _ = write!(
            page,
            "\n## {}\n\n{}\n\n| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n",
            concern.title(),
            concern.meaning()
        );
        for family in FAMILIES.iter().filter(|f| f.concern == concern) {
            let labels: Vec<String> = family
                .labels
                .iter()
                .map(|label| format!("`{}`", label.name))
                .collect();
            let _ = writeln!(
                page,
                "| `{}` | {} | {} | {} |",
                family.name,
                family.kind.name(),
                labels.join(", "),
                cell(family.help)
            );
        }
    }
    page.push_str("\n## Labels\n\n| Label | Meaning | Values |\n|---|---|---|\n");
    for label in labels() {
        let values = label.values.map_or_else(
            || "any".to_owned(),
            |values| {
                values()
                    .iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        );
        let _ = writeln!(
            page,
            "| `{}` | {} | {values} |",
            label.name,
            cell(label.meaning)
        );
    }
    page
}

/// Every label, once, in the order the families first use them.
pub(super) fn labels() -> Vec<Label> {
    let mut seen: Vec<Label> = Vec::new();
    for label in FAMILIES.iter().flat_map(|f| f.labels) {
        if !seen.iter().any(|l| l.name == label.name) {
            seen.push(*label);
        }
    }
    seen
}

/// `text` as one table cell: a `|` escaped, and metric names and command
/// line options set as code (outside what is code already).
fn cell(text: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_code = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if is_word(c) {
            let end = rest.find(|c| !is_word(c)).unwrap_or(rest.len());
            let word = &rest[..end];
            let named = word.starts_with("netto_") || (word.starts_with("--") && word.len() > 2);
            if named && !in_code {
                let _ = write!(out, "`{word}`");
            } else {
                out.push_str(word);
            }
            rest = &rest[end..];
        } else {
            match c {
                '|' => out.push_str("\\|"),
                '`' => {
                    in_code = !in_code;
                    out.push(c);
                }
                _ => out.push(c),
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_sets_names_and_options_as_code_once() {
        assert_eq!(
            cell("see netto_x_total (--by cgroup), `other`, a | b, rate(netto_y) * 100"),
            "see `netto_x_total` (`--by` cgroup), `other`, a \\| b, rate(`netto_y`) * 100"
        );
        assert_eq!(cell("not-netto_x, -- and --"), "not-netto_x, -- and --");
    }

    #[test]
    fn labels_of_one_name_mean_one_thing() {
        for label in FAMILIES.iter().flat_map(|f| f.labels) {
            let first = labels().into_iter().find(|l| l.name == label.name).unwrap();
            assert_eq!(
                (first.meaning, first.values.map(|v| v())),
                (label.meaning, label.values.map(|v| v())),
                "two labels named {}",
                label.name
            );
        }
    }

    #[test]
    fn every_family_is_on_the_page_once_under_its_concern() {
        let page = page();
        for family in FAMILIES {
            let row = format!("| `{}` | {} |", family.name, family.kind.name());
            assert_eq!(page.matches(&row).count(), 1, "{}", family.name);
        }
        for concern in Concern::ALL {
            assert!(page.contains(&format!("\n## {}\n", concern.title())));
        }
    }
}
