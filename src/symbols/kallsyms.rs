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
mod tests {
    use super::*;

    const FIXTURE: &str = "\
ffffffff8202a140 T tcp_pace_kick
ffffffff8202d1e0 t tcp_write_timer
ffffffffc0a01000 t br_handle_frame\t[bridge]
ffffffff8202a140 T tcp_pace_kick_alias
";

    const BASIC: &str = include_str!("../../tests/fixtures/kallsyms/basic.txt");
    const HIDDEN: &str = include_str!("../../tests/fixtures/kallsyms/hidden.txt");

    #[test]
    fn resolves_kernel_and_module_symbols() {
        let syms = Kallsyms::parse(
            FIXTURE,
            &["tcp_pace_kick", "br_handle_frame", "missing", "tcp_pace"],
        );
        assert_eq!(syms.address_of("tcp_pace_kick"), Some(0xffffffff8202a140));
        assert_eq!(syms.address_of("br_handle_frame"), Some(0xffffffffc0a01000));
        assert_eq!(syms.address_of("missing"), None);
        assert!(!syms.contains("tcp_pace"), "a prefix is not the name");
        assert!(!syms.addresses_hidden());
    }

    /// Only asked names are kept: another one is absent, even when the
    /// kernel has it.
    #[test]
    fn names_not_asked_for_are_not_kept() {
        let syms = Kallsyms::parse(FIXTURE, &["tcp_write_timer"]);
        assert!(syms.contains("tcp_write_timer"));
        assert!(!syms.contains("tcp_pace_kick"));
    }

    /// The kernel's own layout only: a line split another way is skipped,
    /// not read with its fields shifted.
    #[test]
    fn lines_in_another_layout_are_skipped() {
        let text = "ffffffff8202a140  T tcp_pace_kick\nffffffff8202d1e0 tt tcp_write_timer\nffffffff8202d1f0 t \n";
        let syms = Kallsyms::parse(text, &["tcp_pace_kick", "tcp_write_timer"]);
        assert!(!syms.contains("tcp_pace_kick"));
        assert!(!syms.contains("tcp_write_timer"));
        assert!(!syms.addresses_hidden(), "no line read, so nothing hidden");
    }

    #[test]
    fn detects_hidden_addresses() {
        let syms = Kallsyms::parse(
            "0000000000000000 T tcp_pace_kick\n0000000000000000 t x\n",
            &["tcp_pace_kick"],
        );
        assert!(syms.addresses_hidden());
        assert_eq!(syms.address_of("tcp_pace_kick"), None);
        assert!(syms.contains("tcp_pace_kick"));
    }

    #[test]
    fn hidden_addresses_are_a_typed_error() {
        assert!(Kallsyms::parse(HIDDEN, &[]).addresses_hidden());
        assert!(matches!(
            SymbolTable::parse(HIDDEN),
            Err(KallsymsError::AddressesHidden)
        ));
    }

    #[test]
    fn empty_input_is_an_empty_table_not_hidden() {
        let table = SymbolTable::parse("").unwrap();
        assert!(table.is_empty());
        assert_eq!(table.resolve(0xffffffff81000000), None);
    }

    fn table() -> SymbolTable {
        SymbolTable::parse(BASIC).unwrap()
    }

    #[test]
    fn resolves_inside_and_at_the_start_of_functions() {
        let t = table();
        assert_eq!(t.resolve(0xffffffff81e66590), Some("__netif_receive_skb"));
        assert_eq!(t.resolve(0xffffffff81e665ef), Some("__netif_receive_skb"));
        assert_eq!(t.resolve(0xffffffff81e66600), Some("netif_receive_skb"));
        assert_eq!(t.resolve(0xffffffff81e66bd4), Some("weak_hook"));
        assert_eq!(t.resolve(0xffffffff83783020), Some("set_reset_devices"));
        assert_eq!(t.resolve(0xffffffff837f8910), None);
    }

    #[test]
    fn compiler_suffixes_resolve_to_the_function() {
        let t = table();
        assert_eq!(
            t.resolve(0xffffffff81e64e70),
            Some("__netif_receive_skb_core")
        );
        assert_eq!(t.resolve(0xffffffff812439f8), Some("ip_forward_options"));
        assert_eq!(t.resolve(0xffffffff81a10010), Some("tcp_ack"));
        assert_eq!(t.resolve(0xffffffff81a20010), Some("skb_release_data"));
        assert_eq!(t.resolve(0xffffffff81a30010), Some("udp_queue_rcv_one_skb"));
        for raw in [
            "foo.isra.0",
            "foo.constprop.0",
            "foo.cold",
            "foo.part.0",
            "foo.constprop.0.isra.0",
            "foo.part.0.cold",
            "foo.llvm.16373950434580939011",
        ] {
            assert_eq!(normalize_name(raw), "foo", "{raw}");
        }
        assert_eq!(normalize_name("foo.bar"), "foo.bar");
        assert_eq!(normalize_name(".cold"), ".cold");
    }

    #[test]
    fn padding_belongs_to_the_function_it_pads_and_is_never_a_name() {
        let t = table();
        assert_eq!(t.resolve(0xffffffff81dbcee0), Some("veth_poll"));
        assert_eq!(t.resolve(0xffffffff81dbcef4), Some("veth_poll"));
        for addr in [
            0xffffffff81000000u64,
            0xffffffff81e66580,
            0xffffffff81dca550,
        ] {
            assert!(!t.resolve(addr).unwrap_or("").starts_with("__pfx_"));
        }
    }

    #[test]
    fn aliases_pick_one_name_deterministically() {
        let t = table();
        // `_stext`/`_text` are markers; of the functions the name without a
        // leading underscore wins, then the shortest, then the first in order.
        assert_eq!(
            t.resolve(0xffffffff81000004),
            Some("srso_alias_untrain_ret")
        );
        assert_eq!(t.resolve(0xffffffff81b00008), Some("sk_data_ready"));
        assert_eq!(t.resolve(0xffffffff81b10008), Some("alpha"));
        assert_eq!(t.resolve(0xffffffff81b20008), Some("__short"));
        let shuffled: String = BASIC.lines().rev().map(|l| format!("{l}\n")).collect();
        let again = SymbolTable::parse(&shuffled).unwrap();
        for addr in [
            0xffffffff81b00008u64,
            0xffffffff81b10008,
            0xffffffff81b20008,
        ] {
            assert_eq!(again.resolve(addr), t.resolve(addr));
        }
    }

    #[test]
    fn module_symbols_resolve_and_end_at_a_cap() {
        let t = table();
        assert_eq!(t.resolve(0xffffffffc0a01010), Some("br_handle_frame"));
        assert_eq!(t.resolve(0xffffffffc0a03000), Some("br_forward"));
        assert_eq!(t.resolve(0xffffffffc0b00010), Some("nf_conntrack_in"));
        // Last symbol of nf_conntrack: up to the cap, then nothing.
        assert_eq!(
            t.resolve(0xffffffffc0b02000 + 100),
            Some("__nf_conntrack_confirm")
        );
        assert_eq!(t.resolve(0xffffffffc0b02000 + TAIL_CAP), None);
    }

    #[test]
    fn addresses_beyond_the_end_are_unknown() {
        let t = table();
        // Last kernel function ends at `_etext`, not at the next symbol.
        assert_eq!(t.resolve(0xffffffff82209900), Some("last_text_function"));
        assert_eq!(t.resolve(0xffffffff82209988), None);
        assert_eq!(t.resolve(0xffffffff8220a000), None);
        // Data symbols bound the code before them but never resolve.
        assert_eq!(t.resolve(0xffffffff82400000), None);
        assert_eq!(t.resolve(0xffffffff80000000), None);
        assert_eq!(t.resolve(u64::MAX), None);
    }

    #[test]
    fn bpf_programs_resolve_to_their_name() {
        let t = table();
        assert_eq!(t.resolve(0xffffffffa0001010), Some("xdp_pass_prog"));
        assert_eq!(t.resolve(0xffffffffa0002010), Some("tc_ingress"));
        assert_eq!(
            t.resolve(0xffffffffa0003010),
            Some("bpf_prog_0123456789abcdef")
        );
        assert_eq!(t.resolve(0xffffffffa0004010), Some("bpf_dispatcher_xdp"));
        assert_eq!(bpf_program_name("bpf_prog_0123456789abcdef_a.b"), "a.b");
        assert_eq!(bpf_program_name("bpf_prog_run_xdp"), "bpf_prog_run_xdp");
    }

    /// Read from a file, which stops once the answer is complete, the
    /// answer is the one the whole text gives.
    #[test]
    fn a_file_gives_what_its_text_gives() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, BASIC.as_bytes()).unwrap();
        for names in [
            &[][..],
            &["veth_poll"],
            &["veth_poll", "br_forward", "no_such_function"],
        ] {
            let read = Kallsyms::from_file(file.path(), names).unwrap();
            let parsed = Kallsyms::parse(BASIC, names);
            assert_eq!(read.asked, parsed.asked, "{names:?}");
            assert_eq!(read.hidden, parsed.hidden);
        }
        let mut hidden = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut hidden, HIDDEN.as_bytes()).unwrap();
        assert!(Kallsyms::from_file(hidden.path(), &[])
            .unwrap()
            .addresses_hidden());
    }

    #[test]
    fn debug_output_shows_no_address() {
        let shown = format!("{:?} {:?}", table(), Kallsyms::parse(BASIC, &["veth_poll"]));
        assert!(!shown.contains("ffff"), "{shown}");
        assert!(
            !shown.contains(&0xffffffff81000000u64.to_string()),
            "{shown}"
        );
    }
}
