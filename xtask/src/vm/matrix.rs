//! The matrix: rows are features (a test binary run with a filter and an
//! environment), columns are kernels, cells say pass, fail or not
//! available. A feature is not available on a kernel when `netto check`
//! there reports a finding the row needs as missing.

use std::time::Duration;

use serde_json::Value;

use super::guest::JobResult;

/// One feature of the matrix.
pub struct Row {
    /// What the table calls it.
    pub feature: &'static str,
    /// Integration test target (`tests/<test>.rs`).
    pub test: &'static str,
    /// libtest arguments after `--test-threads=1 --nocapture`: a filter.
    pub filter: &'static [&'static str],
    pub env: &'static [(&'static str, &'static str)],
    /// Statistics held on for the whole job ([`super::guest::Job`]'s
    /// `bpf_stats_held`): for rows that do not price netto's programs.
    pub bpf_stats_held: bool,
    /// `netto check --json` findings that must be "ok" for the feature to
    /// exist on a kernel.
    pub needs: &'static [&'static str],
    /// Bound on the run inside the guest.
    pub timeout: Duration,
}

#[derive(Debug)]
pub enum Cell {
    Pass { seconds: u64 },
    Fail(String),
    NotAvailable(String),
}

impl Cell {
    /// What `result` of `row` means, given the kernel's `check` findings
    /// (the `features` object of `netto check --json`).
    pub fn judge(row: &Row, check: &Value, result: &JobResult) -> Cell {
        let missing: Vec<&str> = row
            .needs
            .iter()
            .copied()
            .filter(|need| check["features"][need]["ok"] != true)
            .collect();
        match (result.status, missing.is_empty()) {
            (None, _) => Cell::Fail("no result: the guest hung, crashed or ran out of time".into()),
            (Some(0), true) => Cell::Pass {
                seconds: result.seconds.unwrap_or(0),
            },
            (Some(0), false) => Cell::Fail(format!(
                "passed although netto check reports {} missing",
                missing.join(", ")
            )),
            (Some(code), true) => Cell::Fail(
                std::iter::once(format!("exit status {code}"))
                    .chain(failed_assertions(&result.output))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            (Some(_), false) => Cell::NotAvailable(format!("{} missing", missing.join(", "))),
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self, Cell::Fail(_))
    }

    fn text(&self) -> String {
        match self {
            Cell::Pass { seconds } => format!("pass ({seconds} s)"),
            Cell::Fail(_) => "FAIL".to_owned(),
            Cell::NotAvailable(_) => "n/a".to_owned(),
        }
    }
}

/// Where and why each test in a libtest `output` failed, one line each
/// (`tests/x.rs:9:5: message`): the matrix's verdict names them, so a CI
/// log that keeps only the end of the run still says what failed in the
/// guest. A message of several lines keeps its first.
fn failed_assertions(output: &str) -> Vec<String> {
    let mut lines = output.lines();
    let mut found = Vec::new();
    while let Some(line) = lines.next() {
        let Some((_, place)) = line
            .strip_prefix("thread '")
            .and_then(|rest| rest.split_once(" panicked at "))
        else {
            continue;
        };
        let message = lines.next().unwrap_or("").trim();
        found.push(format!("{} {message}", place.trim()));
    }
    found
}

/// One kernel's column.
pub struct Column {
    /// Series and exact release, e.g. `6.1 (6.1.0-56-amd64)`.
    pub heading: String,
    pub cells: Vec<Cell>,
}

/// A Markdown table, readable as text and pasteable into the docs.
pub fn render(rows: &[&Row], columns: &[Column]) -> String {
    let mut table = String::from("| feature | test |");
    let mut rule = String::from("|---|---|");
    for column in columns {
        table.push_str(&format!(" {} |", column.heading));
        rule.push_str("---|");
    }
    table.push('\n');
    table.push_str(&rule);
    for (i, row) in rows.iter().enumerate() {
        table.push_str(&format!("\n| {} | `{}` |", row.feature, row.test));
        for column in columns {
            table.push_str(&format!(" {} |", column.cells[i].text()));
        }
    }
    table.push('\n');
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROW: Row = Row {
        feature: "f",
        test: "t",
        filter: &[],
        env: &[],
        bpf_stats_held: false,
        needs: &["fentry_fexit"],
        timeout: Duration::from_secs(1),
    };

    fn result(status: Option<i32>) -> JobResult {
        JobResult {
            status,
            output: String::new(),
            seconds: Some(7),
        }
    }

    #[test]
    fn a_missing_feature_is_not_available_unless_its_test_passes() {
        let without = json!({"features": {"fentry_fexit": {"ok": false}}});
        let with = json!({"features": {"fentry_fexit": {"ok": true}}});
        assert!(matches!(
            Cell::judge(&ROW, &without, &result(Some(101))),
            Cell::NotAvailable(_)
        ));
        assert!(Cell::judge(&ROW, &without, &result(Some(0))).failed());
        assert!(Cell::judge(&ROW, &with, &result(Some(101))).failed());
        assert!(Cell::judge(&ROW, &with, &result(None)).failed());
        assert!(matches!(
            Cell::judge(&ROW, &with, &result(Some(0))),
            Cell::Pass { seconds: 7 }
        ));
    }

    #[test]
    fn a_failure_names_each_failed_assertion() {
        let output = "test a ... FAILED\n\
            ---- a stdout ----\n\
            thread 'a' (41) panicked at tests/socket_calls.rs:178:9:\n\
            tcp sendfile: sock_send+softirq is 0.12 of system time\n\
            note: run with `RUST_BACKTRACE=1`\n\
            thread 'b' panicked at tests/x.rs:3:1:\n\
            only 9 sends\n";
        let with = json!({"features": {"fentry_fexit": {"ok": true}}});
        let failed = JobResult {
            output: output.into(),
            ..result(Some(101))
        };
        let Cell::Fail(why) = Cell::judge(&ROW, &with, &failed) else {
            panic!("a failed job is a failed cell");
        };
        assert_eq!(
            why,
            "exit status 101; tests/socket_calls.rs:178:9: tcp sendfile: sock_send+softirq \
             is 0.12 of system time; tests/x.rs:3:1: only 9 sends"
        );
    }

    #[test]
    fn the_table_has_a_row_per_feature_and_a_column_per_kernel() {
        let columns = [Column {
            heading: "6.1".into(),
            cells: vec![Cell::NotAvailable("x".into())],
        }];
        assert_eq!(
            render(&[&ROW], &columns),
            "| feature | test | 6.1 |\n|---|---|---|\n| f | `t` | n/a |\n"
        );
    }
}
