//! Which names a request may give in its Host header. A page on another
//! site can point its own name at 127.0.0.1 (DNS rebinding) and then read
//! this server as if it were its own origin; the browser still sends that
//! name as Host, so only names this server answers to are served.
//!
//! Accepted: `localhost`, a loopback address, the names given with
//! `--allow-host`, and with `--allow-remote` any IP address, the bound one
//! among them (rebinding always goes through a name). The port is not checked: the
//! name alone defeats rebinding, and an SSH tunnel (`ssh -L 8080:...`)
//! arrives with its own local port.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCheck {
    /// Other hosts may connect (`--allow-remote`).
    remote: bool,
    /// Lower case, without a trailing dot.
    names: Vec<String>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum HostError {
    #[error("a Host header is required")]
    Missing,
    #[error("the Host header is not a host name or address")]
    Malformed,
    #[error(
        "{0} is not a name of this server (netto serve answers to localhost and its address; \
         --allow-host NAME adds a name)"
    )]
    Foreign(String),
}

/// Whether `name` can be a host name: letters, digits, `-` and `.`.
pub fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

impl HostCheck {
    pub fn new(remote: bool, names: &[String]) -> HostCheck {
        HostCheck {
            remote,
            names: names
                .iter()
                .map(|n| normalized(n).to_ascii_lowercase())
                .collect(),
        }
    }

    /// Checks a request's Host header (its raw bytes, if it has one).
    pub fn check(&self, host: Option<&[u8]>) -> Result<(), HostError> {
        let host = host.ok_or(HostError::Missing)?;
        let host = std::str::from_utf8(host).map_err(|_| HostError::Malformed)?;
        let name = without_port(host).ok_or(HostError::Malformed)?;
        if let Some(ip) = address(name) {
            return if ip.is_loopback() || self.remote {
                Ok(())
            } else {
                Err(HostError::Foreign(name.to_owned()))
            };
        }
        if !is_host_name(name) {
            return Err(HostError::Malformed);
        }
        let name = normalized(name).to_ascii_lowercase();
        if name == "localhost" || self.names.contains(&name) {
            Ok(())
        } else {
            Err(HostError::Foreign(name))
        }
    }
}

fn normalized(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

/// `host` without its `:port`, if the port is a number.
fn without_port(host: &str) -> Option<&str> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        (&host[..inside.len() + 2], after)
    } else {
        match host.rsplit_once(':') {
            Some((name, _)) => (name, &host[name.len()..]),
            None => (host, ""),
        }
    };
    let valid_port = match port.strip_prefix(':') {
        Some(digits) => !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
        None => port.is_empty(),
    };
    valid_port.then_some(name)
}

/// The address a Host names literally: dotted IPv4 or bracketed IPv6.
fn address(name: &str) -> Option<IpAddr> {
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse().ok().map(IpAddr::V6),
        None => name.parse().ok().map(IpAddr::V4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(hosts: &HostCheck, host: &str) -> Result<(), HostError> {
        hosts.check(Some(host.as_bytes()))
    }

    #[test]
    fn loopback_serving_answers_to_localhost_and_its_address_only() {
        let hosts = HostCheck::new(false, &[]);
        for good in [
            "localhost:9464",
            "LocalHost",
            "localhost.:9464",
            "127.0.0.1:9464",
            "127.0.0.1",
            "127.1.2.3:80",
            "[::1]:9464",
            "[::1]",
            // An SSH tunnel's own port.
            "localhost:8080",
        ] {
            assert_eq!(check(&hosts, good), Ok(()), "{good}");
        }
        for foreign in [
            "evil.example:9464",
            "evil.example",
            "localhost.evil.example",
            "10.0.0.1:9464",
            "[fe80::1]:9464",
        ] {
            assert!(
                matches!(check(&hosts, foreign), Err(HostError::Foreign(_))),
                "{foreign}"
            );
        }
        for malformed in [
            "",
            ":9464",
            "localhost:",
            "localhost:port",
            "[::1",
            "[::1]x",
            "a b",
            "a/b",
            "user@localhost",
        ] {
            assert_eq!(
                check(&hosts, malformed),
                Err(HostError::Malformed),
                "{malformed}"
            );
        }
        assert_eq!(hosts.check(None), Err(HostError::Missing));
        assert_eq!(hosts.check(Some(b"\xff")), Err(HostError::Malformed));
        assert_eq!(
            check(&hosts, "Evil.Example.").unwrap_err().to_string(),
            "evil.example is not a name of this server (netto serve answers to localhost and \
             its address; --allow-host NAME adds a name)"
        );
    }

    #[test]
    fn remote_serving_answers_to_addresses_and_the_allowed_names() {
        let names = ["Node1.".to_owned(), "node1.lan".to_owned()];
        let hosts = HostCheck::new(true, &names);
        for good in [
            "10.0.0.1:9464",
            "[2001:db8::1]:9464",
            "node1:9464",
            "NODE1.lan",
            "localhost",
        ] {
            assert_eq!(check(&hosts, good), Ok(()), "{good}");
        }
        assert!(matches!(
            check(&hosts, "evil.example:9464"),
            Err(HostError::Foreign(_))
        ));
    }

    #[test]
    fn host_names() {
        assert!(is_host_name("node-1.example"));
        assert!(!is_host_name(""));
        assert!(!is_host_name("a_b"));
        assert!(!is_host_name(&"a".repeat(254)));
    }
}
