//! /proc/kallsyms, parsed. Addresses read here are used to configure the
//! BPF side and never printed (KASLR).

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum KallsymsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

/// Name -> address of the kernel's (and loaded modules') symbols.
#[derive(Debug, Default)]
pub struct Kallsyms {
    by_name: HashMap<String, u64>,
    hidden: bool,
}

impl Kallsyms {
    pub fn load() -> Result<Self, KallsymsError> {
        Self::from_file(Path::new("/proc/kallsyms"))
    }

    pub fn from_file(path: &Path) -> Result<Self, KallsymsError> {
        let text = fs::read_to_string(path).map_err(|source| KallsymsError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Self::parse(&text))
    }

    pub fn parse(text: &str) -> Self {
        let mut by_name = HashMap::new();
        let mut any_address = false;
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let (Some(addr), Some(_kind), Some(name)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            any_address |= addr != 0;
            by_name.entry(name.to_owned()).or_insert(addr);
        }
        Kallsyms {
            hidden: !by_name.is_empty() && !any_address,
            by_name,
        }
    }

    /// Address of `name`, if the kernel has it and shows addresses.
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied().filter(|&addr| addr != 0)
    }

    /// Whether the kernel has a symbol of that name, addresses shown or not.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// True when every address reads as zero: kptr_restrict hides them from
    /// this process, so nothing can be resolved.
    pub fn addresses_hidden(&self) -> bool {
        self.hidden
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

    #[test]
    fn resolves_kernel_and_module_symbols() {
        let syms = Kallsyms::parse(FIXTURE);
        assert_eq!(syms.address_of("tcp_pace_kick"), Some(0xffffffff8202a140));
        assert_eq!(syms.address_of("br_handle_frame"), Some(0xffffffffc0a01000));
        assert_eq!(syms.address_of("missing"), None);
        assert!(!syms.addresses_hidden());
    }

    #[test]
    fn detects_hidden_addresses() {
        let syms = Kallsyms::parse("0000000000000000 T tcp_pace_kick\n0000000000000000 t x\n");
        assert!(syms.addresses_hidden());
        assert_eq!(syms.address_of("tcp_pace_kick"), None);
        assert!(syms.contains("tcp_pace_kick"));
    }
}
