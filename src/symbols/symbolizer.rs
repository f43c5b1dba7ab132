//! Raw kernel stacks -> interned frames.
//!
//! Sampling sees the same few thousand return addresses over and over, so
//! every address is resolved once and then costs one hash lookup; function
//! names are interned so a stack is a small `Vec<FrameId>` until a front end asks
//! for strings. Addresses stay inside this module: frames, errors and
//! `Debug` output only ever carry names.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use libbpf_rs::libbpf_sys;

use super::kallsyms::{KallsymsError, SymbolTable};

/// The frame name of an address no known function contains.
pub const UNKNOWN_FRAME: &str = "[unknown]";

/// A multiply-rotate hasher for keys the kernel hands us: addresses, whole
/// stacks, function names. SipHash would dominate the per-sample cost and
/// its flooding resistance buys nothing here: the kernel, not an attacker,
/// picks these keys.
#[derive(Default, Clone, Copy)]
pub struct FastHasher {
    hash: u64,
}

impl FastHasher {
    /// Fibonacci hashing's multiplier: odd, so no input bit is lost, and
    /// spreads consecutive addresses across the high bits.
    const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(Self::MULTIPLIER);
    }
}

impl Hasher for FastHasher {
    /// Stacks are hashed once per sample, so long inputs run four
    /// independent lanes: the multiplies overlap instead of each waiting
    /// for the previous one.
    fn write(&mut self, bytes: &[u8]) {
        let word = |chunk: &[u8]| u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
        let mut blocks = bytes.chunks_exact(32);
        if bytes.len() >= 32 {
            let mut lanes = [self.hash, self.hash ^ 1, self.hash ^ 2, self.hash ^ 3];
            for block in &mut blocks {
                for (lane, chunk) in lanes.iter_mut().zip(block.chunks_exact(8)) {
                    *lane = (lane.rotate_left(5) ^ word(chunk)).wrapping_mul(Self::MULTIPLIER);
                }
            }
            for lane in lanes {
                self.add(lane);
            }
        }
        let mut words = blocks.remainder().chunks_exact(8);
        for chunk in &mut words {
            self.add(word(chunk));
        }
        let tail = words.remainder();
        if !tail.is_empty() {
            let mut last = [0u8; 8];
            last[..tail.len()].copy_from_slice(tail);
            self.add(u64::from_le_bytes(last));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.add(word);
    }

    fn write_usize(&mut self, word: usize) {
        self.add(word as u64);
    }

    /// The multiply mixes upwards only; hash tables index by the low bits,
    /// so the well-mixed high bits are rotated down.
    fn finish(&self) -> u64 {
        self.hash.rotate_left(26)
    }
}

/// `HashMap` state for [`FastHasher`].
pub type FastState = BuildHasherDefault<FastHasher>;

/// An interned function name; [`Symbolizer::name`] gives the text back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId(u32);

impl FrameId {
    pub const UNKNOWN: FrameId = FrameId(0);
}

/// The used part of a stack buffer: BPF stack buffers are zero-padded, and
/// no code lives at address zero, so the first zero ends the stack.
pub fn trim_stack(raw: &[u64]) -> &[u64] {
    let depth = raw.iter().position(|&addr| addr == 0).unwrap_or(raw.len());
    &raw[..depth]
}

/// Resolves raw stacks against a [`SymbolTable`], caching per address.
pub struct Symbolizer {
    table: SymbolTable,
    watch: Option<Watch>,
    names: Vec<Box<str>>,
    /// The module of each name in `names` (`None`: the core kernel).
    modules: Vec<Option<Box<str>>>,
    ids: HashMap<Box<str>, FrameId, FastState>,
    cache: HashMap<u64, FrameId, FastState>,
}

impl fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Symbolizer")
            .field("table", &self.table)
            .field("frames", &self.names.len())
            .field("cached_addresses", &self.cache.len())
            .field("reloads", &self.watch.is_some())
            .finish()
    }
}

/// Where the table came from, and what the code it describes looked like
/// then, so [`Symbolizer::refresh`] can tell when it went stale.
struct Watch {
    kallsyms: PathBuf,
    modules: PathBuf,
    bpf_programs: bool,
    fingerprint: CodeFingerprint,
}

/// Identity of the loaded code outside the core kernel: modules (name,
/// size, state, base) and BPF program ids. Reference counts are left out,
/// they change with every socket and would force pointless reloads.
#[derive(Clone, Copy, PartialEq, Eq)]
struct CodeFingerprint {
    modules: u64,
    bpf_programs: u64,
}

impl Watch {
    fn fingerprint(&self) -> Result<CodeFingerprint, KallsymsError> {
        Ok(CodeFingerprint {
            modules: modules_fingerprint(&self.modules)?,
            bpf_programs: if self.bpf_programs {
                bpf_programs_fingerprint()
            } else {
                0
            },
        })
    }
}

/// Kernels built without module support have no /proc/modules: nothing can
/// change there, which is the same as an empty file.
fn modules_fingerprint(path: &Path) -> Result<u64, KallsymsError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
        Err(source) => {
            return Err(KallsymsError::Read {
                path: path.display().to_string(),
                source,
            })
        }
    };
    let mut hasher = DefaultHasher::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        for i in [0, 1, 4, 5] {
            fields.get(i).hash(&mut hasher);
        }
    }
    Ok(hasher.finish())
}

/// BPF programs come and go without touching /proc/modules; walking their
/// ids costs one syscall per program. Without the privilege to list them
/// the walk stops at once and the fingerprint never changes.
fn bpf_programs_fingerprint() -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut id = 0u32;
    loop {
        let mut next = 0u32;
        // SAFETY: `next` is a valid, writable u32 for the call's duration.
        if unsafe { libbpf_sys::bpf_prog_get_next_id(id, &mut next) } != 0 {
            break;
        }
        next.hash(&mut hasher);
        id = next;
    }
    hasher.finish()
}

impl Symbolizer {
    /// A symbolizer over a fixed table, which [`refresh`](Self::refresh)
    /// never reloads (tests, replays).
    pub fn new(table: SymbolTable) -> Self {
        Symbolizer {
            table,
            watch: None,
            names: vec![UNKNOWN_FRAME.into()],
            modules: vec![None],
            ids: [(UNKNOWN_FRAME.into(), FrameId::UNKNOWN)]
                .into_iter()
                .collect(),
            cache: HashMap::default(),
        }
    }

    /// The running kernel's symbols, reloaded by [`refresh`](Self::refresh)
    /// when modules or BPF programs change.
    pub fn load() -> Result<Self, KallsymsError> {
        Self::watching(
            Path::new("/proc/kallsyms"),
            Path::new("/proc/modules"),
            true,
        )
    }

    /// Symbols from `kallsyms`, reloaded when the `modules` file changes.
    #[cfg(test)]
    pub fn from_files(kallsyms: &Path, modules: &Path) -> Result<Self, KallsymsError> {
        Self::watching(kallsyms, modules, false)
    }

    fn watching(
        kallsyms: &Path,
        modules: &Path,
        bpf_programs: bool,
    ) -> Result<Self, KallsymsError> {
        let mut watch = Watch {
            kallsyms: kallsyms.to_owned(),
            modules: modules.to_owned(),
            bpf_programs,
            fingerprint: CodeFingerprint {
                modules: 0,
                bpf_programs: 0,
            },
        };
        // Fingerprint first: code loaded while kallsyms is read then shows
        // as a change at the next refresh instead of being missed.
        watch.fingerprint = watch.fingerprint()?;
        let mut symbolizer = Self::new(SymbolTable::from_file(kallsyms)?);
        symbolizer.watch = Some(watch);
        Ok(symbolizer)
    }

    /// Reloads the table if modules or BPF programs changed since it was
    /// read; returns whether it did. Cheap when nothing changed (one small
    /// file read and a walk of BPF program ids), so callers can run it every
    /// interval. Interned frames stay valid across reloads.
    pub fn refresh(&mut self) -> Result<bool, KallsymsError> {
        let Some(watch) = &mut self.watch else {
            return Ok(false);
        };
        let now = watch.fingerprint()?;
        if now == watch.fingerprint {
            return Ok(false);
        }
        self.table = SymbolTable::from_file(&watch.kallsyms)?;
        watch.fingerprint = now;
        self.cache.clear();
        Ok(true)
    }

    /// Resolves a stack as `bpf_get_stack` returns it, leaf first, into
    /// `out`, outermost frame first (the order of `model::StackCount`).
    ///
    /// Every frame but the leaf is a return address: the instruction after a
    /// call, which for a call at the very end of a function is already the
    /// next function. Looking up one byte earlier lands inside the call.
    pub fn symbolize_into(&mut self, raw: &[u64], out: &mut Vec<FrameId>) {
        out.clear();
        let raw = trim_stack(raw);
        out.reserve(raw.len());
        for (depth, &addr) in raw.iter().enumerate().rev() {
            let lookup = if depth == 0 { addr } else { addr - 1 };
            out.push(self.frame_at(lookup));
        }
    }

    /// [`symbolize_into`](Self::symbolize_into) into a new vector.
    #[cfg(test)]
    pub fn symbolize(&mut self, raw: &[u64]) -> Vec<FrameId> {
        let mut frames = Vec::new();
        self.symbolize_into(raw, &mut frames);
        frames
    }

    fn frame_at(&mut self, addr: u64) -> FrameId {
        if let Some(&id) = self.cache.get(&addr) {
            return id;
        }
        let id = match self.table.resolve_with_module(addr) {
            Some((name, module)) => match self.ids.get(name) {
                Some(&id) => id,
                None => {
                    let id = FrameId(self.names.len() as u32);
                    self.names.push(name.into());
                    self.modules.push(module.map(Into::into));
                    self.ids.insert(name.into(), id);
                    id
                }
            },
            None => FrameId::UNKNOWN,
        };
        self.cache.insert(addr, id);
        id
    }

    /// The module (`veth`, `bpf` for BPF programs, ...) of a function
    /// this symbolizer named; `None` for the core kernel and names it never
    /// returned.
    pub fn module_of(&self, name: &str) -> Option<&str> {
        let &id = self.ids.get(name)?;
        self.modules[id.0 as usize].as_deref()
    }

    /// The function name of a frame this symbolizer returned.
    pub fn name(&self, id: FrameId) -> &str {
        &self.names[id.0 as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::kallsyms::Kallsyms;

    const BASIC: &str = include_str!("../../tests/fixtures/kallsyms/basic.txt");

    fn symbolizer() -> Symbolizer {
        Symbolizer::new(SymbolTable::parse(BASIC).unwrap())
    }

    fn names(s: &Symbolizer, frames: &[FrameId]) -> Vec<String> {
        frames.iter().map(|&f| s.name(f).to_owned()).collect()
    }

    fn resolve(s: &mut Symbolizer, raw: &[u64]) -> Vec<String> {
        let frames = s.symbolize(raw);
        names(s, &frames)
    }

    #[test]
    fn functions_of_modules_and_bpf_programs_know_their_module() {
        let mut s = symbolizer();
        let frames = resolve(
            &mut s,
            &[0xffffffffc0a01010, 0xffffffffa0001010, 0xffffffff81a10010],
        );
        assert_eq!(frames, ["tcp_ack", "xdp_pass_prog", "br_handle_frame"]);
        assert_eq!(s.module_of("br_handle_frame"), Some("bridge"));
        assert_eq!(s.module_of("xdp_pass_prog"), Some("bpf"));
        assert_eq!(s.module_of("tcp_ack"), None);
        assert_eq!(s.module_of(UNKNOWN_FRAME), None);
        assert_eq!(s.module_of("br_forward"), None, "never returned");
    }

    #[test]
    fn leaf_first_in_outermost_first_out() {
        let mut s = symbolizer();
        let raw = [
            0xffffffff81a10010, // leaf: tcp_ack
            0xffffffff81e66620, // netif_receive_skb
            0xffffffff81dbcf10, // veth_poll
            0xffffffff80000000, // nothing there
            0,
            0xffffffff81dbcf10, // after the end of the stack
        ];
        assert_eq!(
            resolve(&mut s, &raw),
            [UNKNOWN_FRAME, "veth_poll", "netif_receive_skb", "tcp_ack"]
        );
        assert!(s.symbolize(&[]).is_empty());
        assert!(s.symbolize(&[0, 0]).is_empty());
    }

    #[test]
    fn return_address_after_a_tail_call_is_the_caller() {
        let mut s = symbolizer();
        // A caller frame returning exactly to `netif_receive_skb`'s padding
        // start belongs to `__netif_receive_skb`, whose last call it follows;
        // as the leaf the same address is the padding of the next function.
        let frames = s.symbolize(&[0xffffffff81e665f0, 0xffffffff81e665f0]);
        assert_eq!(
            names(&s, &frames),
            ["__netif_receive_skb", "netif_receive_skb"]
        );
    }

    #[test]
    fn frames_are_interned_and_addresses_cached() {
        let mut s = symbolizer();
        let a = s.symbolize(&[0xffffffff81dbcef4, 0xffffffff81dbcf00]);
        assert_eq!(a[0], a[1]);
        let before = s.cache.len();
        let b = s.symbolize(&[0xffffffff81dbcef4, 0xffffffff81dbcf00]);
        assert_eq!(a, b);
        assert_eq!(s.cache.len(), before);
        assert_eq!(s.symbolize(&[0xffffffff80000000]), [FrameId::UNKNOWN]);
    }

    #[test]
    fn trims_zero_padding() {
        assert_eq!(trim_stack(&[3, 2, 1, 0, 0]), [3, 2, 1]);
        assert_eq!(trim_stack(&[0, 5]), [0u64; 0]);
        assert_eq!(trim_stack(&[7]), [7]);
    }

    #[test]
    fn refresh_reloads_when_modules_change() {
        let dir = tempfile::tempdir().unwrap();
        let kallsyms = dir.path().join("kallsyms");
        let modules = dir.path().join("modules");
        let core: String = BASIC
            .lines()
            .filter(|l| !l.contains('['))
            .map(|l| format!("{l}\n"))
            .collect();
        fs::write(&kallsyms, &core).unwrap();
        let mut s = Symbolizer::from_files(&kallsyms, &modules).unwrap();
        let br_handle_frame = 0xffffffffc0a01010;
        assert_eq!(s.symbolize(&[br_handle_frame]), [FrameId::UNKNOWN]);
        assert!(!s.refresh().unwrap(), "no modules file, nothing changed");

        fs::write(&kallsyms, BASIC).unwrap();
        fs::write(&modules, "bridge 413696 0 - Live 0x0000000000000000\n").unwrap();
        assert!(s.refresh().unwrap());
        assert_eq!(resolve(&mut s, &[br_handle_frame]), ["br_handle_frame"]);
        assert!(!s.refresh().unwrap());

        // A reference count changing is not a new module.
        fs::write(&modules, "bridge 413696 3 stp, Live 0x0000000000000000\n").unwrap();
        assert!(!s.refresh().unwrap());
    }

    #[test]
    fn hidden_addresses_refuse_to_load() {
        let dir = tempfile::tempdir().unwrap();
        let kallsyms = dir.path().join("kallsyms");
        fs::write(
            &kallsyms,
            include_str!("../../tests/fixtures/kallsyms/hidden.txt"),
        )
        .unwrap();
        let err = Symbolizer::from_files(&kallsyms, &dir.path().join("modules")).unwrap_err();
        assert!(matches!(err, KallsymsError::AddressesHidden));
    }

    #[test]
    fn nothing_printed_carries_an_address() {
        let mut s = symbolizer();
        s.symbolize(&[0xffffffff81a10010, 0xffffffff80000000]);
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("ffff") && !shown.contains("1844"),
            "{shown}"
        );
        let missing = Symbolizer::from_files(
            Path::new("/nonexistent/kallsyms"),
            Path::new("/nonexistent/modules"),
        )
        .unwrap_err()
        .to_string();
        assert!(!missing.contains("0x"), "{missing}");
    }

    #[test]
    fn same_names_as_the_name_table() {
        let names = ["veth_poll", "netif_receive_skb", "br_forward"];
        let by_name = Kallsyms::parse(BASIC, &names);
        let mut s = symbolizer();
        for name in names {
            let addr = by_name.address_of(name).unwrap();
            assert_eq!(resolve(&mut s, &[addr + 4]), [name]);
        }
    }

    #[test]
    fn hasher_spreads_nearby_addresses() {
        let low_bits = |addr: u64| {
            let mut h = FastHasher::default();
            h.write_u64(addr);
            h.finish() & 0xfff
        };
        let buckets: std::collections::HashSet<u64> = (0..256u64)
            .map(|i| low_bits(0xffffffff81000000 + i * 16))
            .collect();
        assert!(buckets.len() > 200, "{}", buckets.len());

        // Stacks long enough for the four-lane path still depend on every
        // word and on its position.
        let hash = |stack: &[u64]| {
            let mut h = FastHasher::default();
            stack.hash(&mut h);
            h.finish()
        };
        let stack: Vec<u64> = (0..37).map(|i| 0xffffffff81000000 + i * 0x40).collect();
        let mut swapped = stack.clone();
        swapped.swap(1, 2);
        let mut changed = stack.clone();
        changed[33] += 1;
        assert_ne!(hash(&stack), hash(&swapped));
        assert_ne!(hash(&stack), hash(&changed));
        assert_ne!(hash(&stack), hash(&stack[..36]));
    }
}
