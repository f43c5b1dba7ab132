//! Where test traffic may go.

use std::net::{IpAddr, SocketAddr};

use super::TrafficError;

/// Loopback, or 198.18.0.0/15 where [`crate::workload::netns::VethPair`] puts its namespaces.
/// Senders refuse anything else so that a typo can never aim a flood at a real host.
fn is_allowed_destination(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback() || (a == 198 && b & 0xfe == 18)
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_allowed_destination(v4.into()))
        }
    }
}

pub(crate) fn check_destination(dest: SocketAddr) -> Result<(), TrafficError> {
    if is_allowed_destination(dest.ip()) {
        Ok(())
    } else {
        Err(TrafficError::Destination(dest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_only_loopback_and_the_benchmark_range() {
        for ok in [
            "127.0.0.1",
            "198.18.0.2",
            "198.19.255.254",
            "::1",
            "::ffff:198.18.1.1",
        ] {
            assert!(is_allowed_destination(ok.parse().unwrap()), "{ok}");
        }
        for bad in [
            "198.20.0.1",
            "198.17.0.1",
            "10.0.0.1",
            "8.8.8.8",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_allowed_destination(bad.parse().unwrap()), "{bad}");
        }
    }
}
