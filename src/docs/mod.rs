//! The reference pages generated from the code, committed under
//! [`REFERENCE_DIR`]: the metrics (from the table `/metrics` is built
//! from), the command line (from clap, as the manual pages are), the JSON
//! schemas of snapshots and recordings (from the model types) and their
//! compatibility policy. `netto docs-reference DIR` writes them; a test
//! renders them here and fails when a committed page differs.

mod cli;
mod glossary;
mod metrics;
mod schema;

/// Where the pages are committed, from the repository's root.
pub const REFERENCE_DIR: &str = "docs/src/reference";

/// The line that opens each generated Markdown page (invisible once
/// rendered): the page is made, not written.
const GENERATED: &str = "<!-- Generated from the code by `cargo run -- docs-reference \
                         docs/src/reference`: edit the code, not this page. -->";

/// One generated page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Relative to [`REFERENCE_DIR`].
    pub path: &'static str,
    pub text: String,
}

/// Every generated page.
pub fn pages() -> Vec<Page> {
    vec![
        Page {
            path: "metrics.md",
            text: metrics::page(),
        },
        Page {
            path: "cli.md",
            text: cli::page(),
        },
        Page {
            path: "glossary.md",
            text: glossary::page(),
        },
        Page {
            path: "json-compatibility.md",
            text: schema::compatibility_page(),
        },
        Page {
            path: "schema/snapshot.schema.json",
            text: schema::snapshot(),
        },
        Page {
            path: "schema/recording.schema.json",
            text: schema::recording(),
        },
    ]
}
