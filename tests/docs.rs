//! The manual, checked as files (no root, no build of the book): README is a
//! front door of at most 300 lines with no dated measurement or lab-log line,
//! every relative link and anchor of README, CONTRIBUTING and docs/ resolves
//! (in the repository and in the built book), the journal's entries are
//! dated and structured, and every picture is linked and every linked
//! picture exists.
//!
//! The book is built from docs/src/ (docs/book.toml). The journal lives in
//! it, docs/src/journal/ (docs/journal is a symbolic link to it), so that the
//! manual's pages and the journal's entries link each other by one path in
//! the repository and in the built book. The pictures stay in docs/images/,
//! which README shows, and the pages reach them through the symbolic link
//! docs/src/images (mdBook copies what it leads to). So a link from a page
//! holds in the built book when it stays inside docs/src/ and, when it names
//! a page, that page is a chapter of SUMMARY.md (mdBook renders only those,
//! and turns every `.md` link into `.html`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use regex::Regex;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const README_MAX_LINES: usize = 300;

/// A dated measurement or a line of a lab log: what belongs in
/// docs/src/journal/, never in README or a page of the manual.
static DATED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)load average|the next day|a third day|20[0-9]{2}-[01][0-9]-[0-3][0-9]")
        .unwrap()
});

/// A link into the journal, inline (`[text](journal/...)`) or as a
/// reference definition (`[x]: journal/...`): a page may link the entry
/// behind a figure, whose name and title carry its date.
static JOURNAL_LINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[[^\]]*\]\([^)]*journal/[^)]*\)|^\s*\[[^\]]+\]:\s*\S*journal/\S*").unwrap()
});

/// The stamp of each current table of the performance and reliability
/// pages: `Run: DATE, MACHINE; load average ...; COMMAND`. A table's
/// figures are only worth what that says, so it carries its date where
/// nothing else may.
static RUN_STAMP: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^Run: ").unwrap());

/// The lines of `text` that are dated or read like a lab log, as
/// `path:line: text`; links into the journal do not count, nor the
/// performance and reliability pages' stamps of their tables.
fn dated_lines(path: &Path, text: &str) -> Vec<String> {
    let stamps = ["performance.md", "reliability.md"]
        .iter()
        .any(|page| *path == docs_src().join(page));
    text.lines()
        .enumerate()
        .filter(|(_, line)| !(stamps && RUN_STAMP.is_match(line)))
        .filter(|(_, line)| DATED.is_match(&JOURNAL_LINK.replace_all(line, "")))
        .map(|(n, line)| format!("{}:{}: {line}", rel(path), n + 1))
        .collect()
}

/// A journal entry's name: its date, then its topic in lower-case words
/// (a kernel's version, 6.12, among them).
static JOURNAL_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(20[0-9]{2})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])-[a-z0-9.]+(-[a-z0-9.]+)*\.md$",
    )
    .unwrap()
});

/// The headings every journal entry has.
const JOURNAL_HEADINGS: [&str; 4] = ["Status", "Why", "Method", "Result"];

fn root() -> &'static Path {
    Path::new(ROOT)
}

fn docs_src() -> PathBuf {
    root().join("docs/src")
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", rel(path)))
}

/// Every file under `dir`, not following symbolic links (docs/journal and
/// docs/src/images lead to folders whose files are listed once).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let kind = fs::symlink_metadata(&path).unwrap().file_type();
        if kind.is_dir() {
            files.extend(files_under(&path));
        } else if kind.is_file() {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn is_markdown(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "md")
}

/// README.md, CONTRIBUTING.md (once it exists) and every page under docs/.
fn markdown_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md"]
        .iter()
        .map(|name| root().join(name))
        .filter(|path| path.exists())
        .collect();
    files.extend(
        files_under(&root().join("docs"))
            .into_iter()
            .filter(|p| is_markdown(p)),
    );
    files
}

fn journal() -> PathBuf {
    docs_src().join("journal")
}

/// The journal's index, which lists its entries.
const JOURNAL_INDEX: &str = "README.md";

/// The journal's entries: every file of docs/src/journal/ but its index.
fn journal_entries() -> Vec<PathBuf> {
    files_under(&journal())
        .into_iter()
        .filter(|p| !p.ends_with(JOURNAL_INDEX))
        .collect()
}

/// The manual's pages: docs/src/ without the journal.
fn manual_pages() -> Vec<PathBuf> {
    files_under(&docs_src())
        .into_iter()
        .filter(|p| is_markdown(p) && !p.starts_with(journal()))
        .collect()
}

/// One link or image of a Markdown file.
#[derive(Debug)]
struct Link {
    line: usize,
    dest: String,
    image: bool,
}

/// One heading: its level and its text as mdBook and GitHub read it
/// (inline code included, markup left out).
struct Heading {
    level: HeadingLevel,
    text: String,
}

struct Page {
    links: Vec<Link>,
    headings: Vec<Heading>,
}

/// The extensions mdBook turns on, so a page parses here as in the book.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

fn parse(text: &str) -> Page {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut page = Page {
        links: Vec::new(),
        headings: Vec::new(),
    };
    let mut heading: Option<Heading> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) => page.links.push(Link {
                line: line_of(range.start),
                dest: dest_url.to_string(),
                image: false,
            }),
            Event::Start(Tag::Image { dest_url, .. }) => page.links.push(Link {
                line: line_of(range.start),
                dest: dest_url.to_string(),
                image: true,
            }),
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some(Heading {
                    level,
                    text: String::new(),
                })
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.text.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => page.headings.extend(heading.take()),
            _ => {}
        }
    }
    page
}

/// A heading's id, by mdBook's rule (which GitHub's matches for these
/// pages): lower case, letters, digits, `_` and `-` kept, white space made
/// `-`, the rest dropped; a repeated id gets `-1`, `-2`, ...
fn heading_ids(headings: &[Heading]) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for heading in headings {
        let id: String = heading
            .text
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
                c if c.is_whitespace() => Some('-'),
                _ => None,
            })
            .collect();
        let mut unique = id.clone();
        let mut n = 0;
        while !ids.insert(unique.clone()) {
            n += 1;
            unique = format!("{id}-{n}");
        }
    }
    ids
}

/// `path` with `.` and `..` taken out by name, without following symbolic
/// links: where a link points in the built book, which has no links.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn is_external(dest: &str) -> bool {
    static SCHEME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[a-zA-Z][a-zA-Z0-9+.-]*:").unwrap());
    SCHEME.is_match(dest)
}

/// The pages SUMMARY.md makes chapters of, as paths under docs/src/ by
/// name (a chapter in docs/src/journal/ stays there).
fn chapters() -> BTreeSet<PathBuf> {
    let summary = docs_src().join("SUMMARY.md");
    parse(&read(&summary))
        .links
        .iter()
        .map(|l| lexical(&docs_src().join(&l.dest)))
        .collect()
}

/// Every relative link of every Markdown file, resolved: `(file, link,
/// target)`, the target by name (not through symbolic links).
fn relative_links() -> Vec<(PathBuf, Link, PathBuf)> {
    let mut all = Vec::new();
    for file in markdown_files() {
        for link in parse(&read(&file)).links {
            if is_external(&link.dest) {
                continue;
            }
            let path = link.dest.split('#').next().unwrap();
            let target = if path.is_empty() {
                file.clone()
            } else {
                lexical(&file.parent().unwrap().join(path))
            };
            all.push((file.clone(), link, target));
        }
    }
    all
}

#[test]
fn readme_is_a_front_door_without_dated_lines() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: the manual goes in docs/src/"
    );
    let dated = dated_lines(&root().join("README.md"), &readme);
    assert!(
        dated.is_empty(),
        "dated measurements and lab notes belong in docs/src/journal/, not README:\n{}",
        dated.join("\n")
    );
}

#[test]
fn pages_outside_the_journal_have_no_dated_line() {
    let dated: Vec<String> = manual_pages()
        .iter()
        .flat_map(|page| dated_lines(page, &read(page)))
        .collect();
    assert!(
        dated.is_empty(),
        "the manual says what holds now; dated runs go in docs/src/journal/ and the \
         performance and reliability pages link them:\n{}",
        dated.join("\n")
    );
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let chapters = chapters();
    let mut ids: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    for (file, link, target) in relative_links() {
        let at = format!("{}:{}: {}", rel(&file), link.line, link.dest);
        // Through symbolic links, as a reader of the repository follows it.
        if !target.exists() {
            broken.push(format!("{at}: {} does not exist", rel(&target)));
            continue;
        }
        if file.starts_with(docs_src()) {
            if !target.starts_with(docs_src()) {
                broken.push(format!(
                    "{at}: leaves docs/src/, so the built book lacks it (link what the book \
                     holds, or name the file in code)"
                ));
                continue;
            }
            if is_markdown(&target) && !chapters.contains(&target) {
                broken.push(format!(
                    "{at}: {} is no chapter of docs/src/SUMMARY.md, so the built book lacks it",
                    rel(&target)
                ));
                continue;
            }
        }
        if let Some((_, anchor)) = link.dest.split_once('#') {
            if !is_markdown(&target) {
                broken.push(format!("{at}: an anchor into a file that is not Markdown"));
                continue;
            }
            let known = ids
                .entry(target.clone())
                .or_insert_with(|| heading_ids(&parse(&read(&target)).headings));
            if !known.contains(anchor) {
                broken.push(format!(
                    "{at}: no heading of {} has the id {anchor:?}",
                    rel(&target)
                ));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn readme_links_the_agent_guide_and_the_metrics_reference() {
    let readme = root().join("README.md");
    let targets: BTreeSet<PathBuf> = relative_links()
        .into_iter()
        .filter(|(file, _, _)| *file == readme)
        .map(|(_, _, target)| target)
        .collect();
    for page in ["docs/src/agent.md", "docs/src/reference/metrics.md"] {
        let page = root().join(page);
        assert!(
            targets.contains(&page),
            "README.md does not link {}",
            rel(&page)
        );
        assert!(
            page.exists(),
            "README.md links {}, which does not exist",
            rel(&page)
        );
    }
}

#[test]
fn readme_links_no_journal_entry() {
    // Journal names carry dates, and README has none.
    let readme = root().join("README.md");
    let into_journal: Vec<String> = relative_links()
        .into_iter()
        .filter(|(file, _, target)| {
            *file == readme
                && (target.starts_with(journal())
                    || target.starts_with(root().join("docs/journal")))
        })
        .map(|(_, link, _)| format!("README.md:{}: {}", link.line, link.dest))
        .collect();
    assert!(
        into_journal.is_empty(),
        "README links only the manual's pages, never the journal:\n{}",
        into_journal.join("\n")
    );
}

#[test]
fn journal_entries_are_dated_and_have_status_why_method_result() {
    let entries = journal_entries();
    let mut wrong = Vec::new();
    if fs::read_link(root().join("docs/journal")).ok() != Some(PathBuf::from("src/journal")) {
        wrong.push("docs/journal must be a symbolic link to src/journal".to_owned());
    }
    if !journal().join(JOURNAL_INDEX).exists() {
        wrong.push(format!(
            "docs/src/journal/{JOURNAL_INDEX}, the index, is missing"
        ));
    }
    let chapters = chapters();
    for entry in &entries {
        let name = entry.file_name().unwrap().to_string_lossy();
        if !JOURNAL_NAME.is_match(&name) {
            wrong.push(format!(
                "{}: not named YYYY-MM-DD-topic.md (a real date, then lower-case words \
                 and versions joined by -)",
                rel(entry)
            ));
            continue;
        }
        let headings: BTreeSet<String> = parse(&read(entry))
            .headings
            .into_iter()
            .filter(|h| h.level != HeadingLevel::H1)
            .map(|h| h.text.trim().to_owned())
            .collect();
        for wanted in JOURNAL_HEADINGS {
            if !headings.contains(wanted) {
                wrong.push(format!("{}: no heading {wanted:?}", rel(entry)));
            }
        }
        if !chapters.contains(&journal().join(&*name)) {
            wrong.push(format!(
                "{}: not in docs/src/SUMMARY.md (add `  - [TITLE](journal/{name})` under \
                 `- [Journal](journal/README.md)`)",
                rel(entry)
            ));
        }
    }
    assert!(wrong.is_empty(), "journal:\n{}", wrong.join("\n"));
}

#[test]
fn every_picture_is_linked_and_every_linked_picture_exists() {
    let images = root().join("docs/images");
    let pictures = files_under(&images);
    assert!(
        !pictures.is_empty(),
        "docs/images/ holds no picture (scripts/pictures.sh makes them)"
    );
    // By name: a page under docs/src/ reaches docs/images/ through
    // docs/src/images.
    let by_name = |target: &Path| match target.strip_prefix(docs_src().join("images")) {
        Ok(inside) => images.join(inside),
        Err(_) => target.to_owned(),
    };
    let mut linked = BTreeSet::new();
    let mut missing = Vec::new();
    for (file, link, target) in relative_links() {
        let target = by_name(&target);
        if link.image && !target.exists() {
            missing.push(format!(
                "{}:{}: {} does not exist",
                rel(&file),
                link.line,
                link.dest
            ));
        }
        if target.starts_with(&images) {
            linked.insert(target);
        }
    }
    let unlinked: Vec<String> = pictures
        .iter()
        .filter(|p| !linked.contains(*p))
        .map(|p| rel(p))
        .collect();
    assert!(
        missing.is_empty(),
        "pictures linked but missing:\n{}",
        missing.join("\n")
    );
    assert!(
        unlinked.is_empty(),
        "pictures no page links (link them from README or a page, or remove them):\n{}",
        unlinked.join("\n")
    );
}
