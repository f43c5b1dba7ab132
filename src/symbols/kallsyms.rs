//! /proc/kallsyms, parsed two ways: [`Kallsyms`] looks names up (to
//! configure the BPF side) and [`SymbolTable`] turns sampled addresses back
//! into function names. Addresses read here never reach any output, `Debug`
//! or error message (KASLR).

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum KallsymsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// kptr_restrict shows this process only zeros, so no address can be
    /// resolved; callers report it instead of printing `[unknown]` stacks.
    #[error(
        "kernel symbol addresses are hidden (kernel.kptr_restrict); stacks cannot be symbolized"
    )]
    AddressesHidden,
}

/// The kernel symbols netto asks for by name (the network callbacks), from
/// one pass over kallsyms. Only the asked names are kept: the file has over
/// a hundred thousand lines and netto needs a dozen, and every measuring
/// command reads it at start-up (under the kernel matrix's emulation,
/// hashing every name took most of netto's start).
#[derive(Default)]
pub struct Kallsyms {
    /// Each asked name and what kallsyms has for it: `None` when the
    /// kernel has no such symbol, its first address otherwise (zero where
    /// addresses are hidden).
    asked: Vec<(String, Option<u64>)>,
    hidden: bool,
}

impl fmt::Debug for Kallsyms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kallsyms")
            .field("asked", &self.asked.len())
            .field(
                "present",
                &self.asked.iter().filter(|(_, a)| a.is_some()).count(),
            )
            .field("hidden", &self.hidden)
            .finish()
    }
}

impl Kallsyms {
    /// `names` in /proc/kallsyms.
    pub fn load(names: &[&str]) -> Result<Self, KallsymsError> {
        Self::from_file(Path::new("/proc/kallsyms"), names)
    }

    /// Reads `path` line by line and stops as soon as the answer is
    /// complete (every asked name found and an address seen): the kernel
    /// formats /proc/kallsyms as it is read, so a short read is cheaper,
    /// and asking for no name (is anything hidden?) reads a few lines.
    pub fn from_file(path: &Path, names: &[&str]) -> Result<Self, KallsymsError> {
        let error = |source| KallsymsError::Read {
            path: path.display().to_string(),
            source,
        };
        let mut reader = BufReader::new(fs::File::open(path).map_err(error)?);
        let mut scan = Scan::new(names);
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(error)? == 0 || scan.take(line.trim_end()) {
                return Ok(scan.done());
            }
        }
    }

    /// `names` in kallsyms `text`; a name listed twice keeps its first line.
    pub fn parse(text: &str, names: &[&str]) -> Self {
        let mut scan = Scan::new(names);
        for line in text.lines() {
            if scan.take(line) {
                break;
            }
        }
        scan.done()
    }

    /// Address of `name`, if it was asked for, the kernel has it and
    /// shows addresses.
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.found(name).filter(|&addr| addr != 0)
    }

    /// Whether the kernel has a symbol of that name (asked for), addresses
    /// shown or not.
    pub fn contains(&self, name: &str) -> bool {
        self.found(name).is_some()
    }

    fn found(&self, name: &str) -> Option<u64> {
        self.asked
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|&(_, addr)| addr)
    }

    /// True when every address reads as zero: kptr_restrict hides them from
    /// this process, so nothing can be resolved.
    pub fn addresses_hidden(&self) -> bool {
        self.hidden
    }
}

/// [`Kallsyms`] being built, one line at a time.
struct Scan {
    asked: Vec<(String, Option<u64>)>,
    missing: usize,
    any_line: bool,
    any_address: bool,
}

impl Scan {
    fn new(names: &[&str]) -> Self {
        Scan {
            asked: names.iter().map(|&n| (n.to_owned(), None)).collect(),
            missing: names.len(),
            any_line: false,
            any_address: false,
        }
    }

    /// Takes one line; true once nothing later can change the answer.
    fn take(&mut self, line: &str) -> bool {
        let Some(line) = Line::parse(line) else {
            return false;
        };
        self.any_line = true;
        self.any_address |= line.addr != 0;
        // A length compare first: most lines are no asked name's.
        if let Some((_, found)) = self
            .asked
            .iter_mut()
            .find(|(n, found)| n.len() == line.name.len() && found.is_none() && n == line.name)
        {
            *found = Some(line.addr);
            self.missing -= 1;
        }
        self.any_address && self.missing == 0
    }

    fn done(self) -> Kallsyms {
        Kallsyms {
            asked: self.asked,
            hidden: self.any_line && !self.any_address,
        }
    }
}

fn read(path: &Path) -> Result<String, KallsymsError> {
    fs::read_to_string(path).map_err(|source| KallsymsError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// One `addr type name [module]` line.
struct Line<'a> {
    addr: u64,
    kind: u8,
    name: &'a str,
    module: Option<&'a str>,
}

impl<'a> Line<'a> {
    /// The fields as the kernel prints them (`%px %c %s`, then `\t[%s]`
    /// for a module's symbol): split at those single bytes rather than at
    /// any whitespace, which decodes every character and made most of the
    /// parse's time in a debug build. Any other line is skipped.
    fn parse(line: &'a str) -> Option<Self> {
        let (addr, rest) = line.split_once(' ')?;
        let addr = u64::from_str_radix(addr, 16).ok()?;
        let (kind, rest) = rest.split_once(' ')?;
        let &[kind] = kind.as_bytes() else {
            return None;
        };
        let (name, module) = match rest.split_once('\t') {
            Some((name, module)) => (
                name,
                module.strip_prefix('[').and_then(|m| m.strip_suffix(']')),
            ),
            None => (rest, None),
        };
        (!name.is_empty()).then_some(Line {
            addr,
            kind,
            name,
            module,
        })
    }

    /// Code, as opposed to data: only code shows up in stacks. Weak symbols
    /// (`W`/`w`) are overridable functions in kallsyms, so they count.
    fn is_text(&self) -> bool {
        matches!(self.kind, b't' | b'T' | b'w' | b'W')
    }
}

/// The name a user knows a function by: GCC and LLVM clone or split
/// functions into `foo.isra.0`, `foo.constprop.0`, `foo.part.0`,
/// `foo.cold`, `foo.llvm.123` (and combinations), all of which are `foo`'s
/// code. A dotted name with any other suffix is left alone.
pub fn normalize_name(raw: &str) -> &str {
    // Called for every frame categorized: a byte scan, as most names have
    // no dot at all.
    match raw.bytes().position(|b| b == b'.') {
        Some(dot) if dot > 0 && raw[dot + 1..].split('.').all(is_compiler_suffix) => &raw[..dot],
        _ => raw,
    }
}

fn is_compiler_suffix(part: &str) -> bool {
    matches!(
        part,
        "isra" | "constprop" | "part" | "cold" | "llvm" | "lto_priv" | "localalias"
    ) || (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// The program name of a JIT-compiled BPF program, which kallsyms lists as
/// `bpf_prog_<16 hex tag>_<name>`: the tag means nothing to an operator,
/// the name (e.g. the XDP program's function) does. Other `[bpf]` symbols
/// (trampolines, dispatchers) and unnamed programs keep their kallsyms name.
pub fn bpf_program_name(raw: &str) -> &str {
    const TAG_LEN: usize = 16;
    let Some(rest) = raw.strip_prefix("bpf_prog_") else {
        return raw;
    };
    let is_tag = rest.len() > TAG_LEN
        && rest.as_bytes()[..TAG_LEN]
            .iter()
            .all(|b| b.is_ascii_hexdigit());
    match rest.get(TAG_LEN..).and_then(|r| r.strip_prefix('_')) {
        Some(name) if is_tag && !name.is_empty() => name,
        _ => raw,
    }
}

/// Where the end of the last function before a gap is not known (the last
/// symbol of a module, or of a kernel without `_etext`), an address at most
/// this far past its start still resolves to it. Larger than nearly every
/// kernel function, small enough not to swallow the next module's pages.
const TAIL_CAP: u64 = 64 << 10;
/// The same for JIT-compiled BPF programs, which grow far larger than C
/// functions (up to a million instructions).
const BPF_TAIL_CAP: u64 = 1 << 20;

/// Address -> function name for kernel, module and BPF program code.
///
/// Stored as sorted parallel arrays: a lookup is one binary search over
/// dense `u64`s, which is what keeps cold-cache symbolization fast.
#[derive(Default, Clone)]
pub struct SymbolTable {
    starts: Vec<u64>,
    /// Exclusive end of each entry: the next symbol's start, capped by the
    /// end of the text region the entry belongs to.
    ends: Vec<u64>,
    names: Vec<u32>,
    name_text: Vec<Box<str>>,
    /// The module (`veth`, `bpf`, ...) of each name in `name_text`; `None`
    /// for the core kernel.
    name_module: Vec<Option<Box<str>>>,
}

impl fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymbolTable")
            .field("entries", &self.starts.len())
            .field("names", &self.name_text.len())
            .finish()
    }
}

/// Where a symbol's code lives, which decides how far it may extend.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Region {
    Kernel,
    Module,
    Bpf,
}

/// A text symbol competing for its address; the lowest `rank` wins.
struct Candidate<'a> {
    addr: u64,
    name: &'a str,
    module: Option<&'a str>,
    region: Region,
    /// `__pfx_foo` stands for `foo`'s entry padding, which runs as part of
    /// `foo` (call-depth tracking enters there), but a real symbol at the
    /// same address is a better name.
    padding: bool,
}

impl Candidate<'_> {
    fn rank(&self) -> (bool, bool, usize, &str) {
        (
            self.padding,
            self.name.starts_with('_'),
            self.name.len(),
            self.name,
        )
    }
}

/// Kernel text boundaries kallsyms exports as symbols.
#[derive(Default)]
struct KernelText {
    text: Option<(u64, u64)>,
    init: Option<(u64, u64)>,
}

impl KernelText {
    fn end_of(&self, addr: u64) -> Option<u64> {
        [self.text, self.init]
            .into_iter()
            .flatten()
            .find(|&(start, end)| (start..end).contains(&addr))
            .map(|(_, end)| end)
    }
}

/// Section markers such as `_stext` or `__sched_text_start` delimit code
/// but are not functions.
fn is_marker(name: &str) -> bool {
    matches!(
        name,
        "_text" | "_stext" | "_etext" | "_sinittext" | "_einittext"
    ) || name.ends_with("_text_start")
        || name.ends_with("_text_end")
}

impl SymbolTable {
    pub fn from_file(path: &Path) -> Result<Self, KallsymsError> {
        Self::parse(&read(path)?)
    }

    /// Builds the table from kallsyms text. Fails with
    /// [`KallsymsError::AddressesHidden`] when every address is zero.
    pub fn parse(text: &str) -> Result<Self, KallsymsError> {
        let mut boundaries = Vec::new();
        let mut candidates = Vec::new();
        let mut markers = HashMap::new();
        let mut any_line = false;
        for line in text.lines().filter_map(Line::parse) {
            any_line = true;
            if line.addr == 0 {
                continue;
            }
            boundaries.push(line.addr);
            if line.module.is_none() && is_marker(line.name) {
                markers.insert(line.name, line.addr);
            } else if line.is_text() {
                candidates.push(candidate(&line));
            }
        }
        if any_line && boundaries.is_empty() {
            return Err(KallsymsError::AddressesHidden);
        }
        let pair = |start, end| Some((*markers.get(start)?, *markers.get(end)?));
        let kernel = KernelText {
            text: pair("_stext", "_etext"),
            init: pair("_sinittext", "_einittext"),
        };
        boundaries.sort_unstable();
        boundaries.dedup();
        candidates.sort_unstable_by(|a, b| a.addr.cmp(&b.addr).then(a.rank().cmp(&b.rank())));
        candidates.dedup_by_key(|c| c.addr);
        Ok(Self::build(&candidates, &boundaries, &kernel))
    }

    fn build(candidates: &[Candidate], boundaries: &[u64], kernel: &KernelText) -> Self {
        let mut table = SymbolTable::default();
        let mut ids: HashMap<&str, u32> = HashMap::new();
        for c in candidates {
            let next = boundaries
                .get(boundaries.partition_point(|&b| b <= c.addr))
                .copied()
                .unwrap_or(u64::MAX);
            let region_end = match c.region {
                Region::Kernel => kernel.end_of(c.addr),
                Region::Module => None,
                Region::Bpf => Some(c.addr.saturating_add(BPF_TAIL_CAP)),
            }
            .unwrap_or(c.addr.saturating_add(TAIL_CAP));
            let end = next.min(region_end);
            let id = *ids.entry(c.name).or_insert_with(|| {
                table.name_text.push(c.name.into());
                table.name_module.push(c.module.map(Into::into));
                (table.name_text.len() - 1) as u32
            });
            if table.names.last() == Some(&id) && table.ends.last() == Some(&c.addr) {
                *table.ends.last_mut().expect("entry just compared") = end;
                continue;
            }
            table.starts.push(c.addr);
            table.ends.push(end);
            table.names.push(id);
        }
        table
    }

    /// The function whose code contains `addr`; `None` for an address
    /// outside every known function (past a region's end, in a gap, or in
    /// code loaded after the table was built).
    #[cfg(any(test, feature = "test-support"))]
    pub fn resolve(&self, addr: u64) -> Option<&str> {
        self.resolve_with_module(addr).map(|(name, _)| name)
    }

    /// The function whose code contains `addr` (`None`: outside every
    /// known function), with the module it belongs to (`None`: the core
    /// kernel). A name defined both in the kernel and
    /// in a module keeps the module of its lowest address.
    pub fn resolve_with_module(&self, addr: u64) -> Option<(&str, Option<&str>)> {
        let i = self.starts.partition_point(|&s| s <= addr).checked_sub(1)?;
        let name = self.names[i] as usize;
        (addr < self.ends[i]).then(|| (&*self.name_text[name], self.name_module[name].as_deref()))
    }

    /// Number of address ranges (functions, after merging aliases).
    #[cfg(any(test, feature = "test-support"))]
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }
}

fn candidate<'a>(line: &Line<'a>) -> Candidate<'a> {
    let region = match line.module {
        None => Region::Kernel,
        Some("bpf") => Region::Bpf,
        Some(_) => Region::Module,
    };
    let (name, padding) = if region == Region::Bpf {
        (bpf_program_name(line.name), false)
    } else if let Some(padded) = line.name.strip_prefix("__pfx_") {
        (normalize_name(padded), true)
    } else {
        (normalize_name(line.name), false)
    };
    Candidate {
        addr: line.addr,
        name,
        module: line.module,
        region,
        padding,
    }
}

#[cfg(test)]
mod tests;
