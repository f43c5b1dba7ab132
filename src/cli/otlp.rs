//! `serve`'s OTLP options: where to push each window's profiles, and how.
//! Checked here, so that a bad URL is one line and exit 2 before anything
//! loads.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use clap::Args;
use hyper::Uri;
use thiserror::Error;

use crate::frontends::flame::otlp::Measured;
use crate::frontends::web::otlp::{read_roots, ExportSettings, Headers, Protocol, TransportError};

/// Shortest and longest `--otlp-interval`: a window is drawn from the kept
/// history, so it can be no longer than the longest `--history`.
pub const MIN_OTLP_INTERVAL_S: f64 = 1.0;
pub const MAX_OTLP_INTERVAL_S: f64 = 3600.0;

#[derive(Debug, Clone, Args)]
pub struct OtlpArgs {
    /// Push each window's profiles to this OpenTelemetry receiver (an
    /// OpenTelemetry Collector, Pyroscope...): http://HOST:PORT in
    /// plaintext, https://HOST:PORT over TLS. With http/protobuf, a path
    /// is posted to as given, else /v1development/profiles. The host is
    /// resolved once, at start.
    #[arg(long, value_name = "URL", value_parser = parse_endpoint)]
    pub otlp_endpoint: Option<String>,
    /// The window each push covers: seconds, optionally followed by s
    /// (no longer than --history).
    #[arg(long, value_name = "SECONDS", default_value = "60s", requires = "otlp_endpoint", value_parser = parse_otlp_interval)]
    pub otlp_interval: f64,
    /// How the profiles travel, as OTEL_EXPORTER_OTLP_PROTOCOL names it.
    #[arg(
        long,
        value_name = "PROTOCOL",
        default_value = "grpc",
        requires = "otlp_endpoint"
    )]
    pub otlp_protocol: Protocol,
    /// The CAs an https endpoint's certificate is checked against (PEM)
    /// instead of the system's.
    #[arg(long, value_name = "FILE", requires = "otlp_endpoint")]
    pub otlp_ca_file: Option<PathBuf>,
    /// Headers sent with every push, for the receiver's authentication: a
    /// file of `name: value` lines (such as `authorization: Bearer
    /// TOKEN`; blank lines and # comments skipped), read once at start,
    /// so that no secret is on a command line. Names go in lower case.
    #[arg(long, value_name = "FILE", requires = "otlp_endpoint")]
    pub otlp_headers_file: Option<PathBuf>,
    /// Most CPU the exporter may take over a window, in percent of one
    /// CPU: past it, the next window is dropped (counted, reason
    /// over_budget) instead of drawn and sent. Apart from --budget
    /// (measuring) and --serve-budget (serving): it never makes
    /// measuring step down.
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_OTLP_BUDGET, requires = "otlp_endpoint", allow_negative_numbers = true, value_parser = super::values::parse_serve_budget)]
    pub otlp_budget: f64,
}

/// `--otlp-budget` unless told: a window every minute costs far less
/// (docs/src/performance.md).
pub const DEFAULT_OTLP_BUDGET: f64 = 1.0;

/// OTLP options that clap cannot judge alone: bad input all the same.
#[derive(Debug, Error)]
pub enum OtlpOptionError {
    #[error("--otlp-interval {interval_s} s is longer than --history {history_s} s, which its windows are drawn from")]
    LongerThanHistory { interval_s: f64, history_s: f64 },
    #[error("cannot resolve --otlp-endpoint's host {0}: {1}")]
    Resolve(String, std::io::Error),
    #[error("--otlp-ca-file: {0}")]
    CaFile(TransportError),
    #[error("--otlp-headers-file {0}: {1}")]
    HeadersFile(String, String),
}

impl OtlpArgs {
    /// What the serving process needs to push profiles, checked now: the
    /// receiver's host resolved (the confined process cannot), the window
    /// within the kept history, the CA file's certificates readable, the
    /// headers file's headers read.
    pub fn settings(
        &self,
        history_s: f64,
        measured: Measured,
    ) -> Result<Option<ExportSettings>, OtlpOptionError> {
        let Some(endpoint) = &self.otlp_endpoint else {
            return Ok(None);
        };
        if self.otlp_interval > history_s {
            return Err(OtlpOptionError::LongerThanHistory {
                interval_s: self.otlp_interval,
                history_s,
            });
        }
        // parse_endpoint took it.
        let uri: Uri = endpoint.parse().unwrap_or_default();
        let host = uri.host().unwrap_or_default();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let https = uri.scheme_str() == Some("https");
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let addresses: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|e| OtlpOptionError::Resolve(host.to_owned(), e))?
            .collect();
        if let Some(file) = &self.otlp_ca_file {
            read_roots(file).map_err(OtlpOptionError::CaFile)?;
        }
        let headers = match &self.otlp_headers_file {
            Some(file) => {
                let fail =
                    |why: String| OtlpOptionError::HeadersFile(file.display().to_string(), why);
                Headers::parse(&std::fs::read_to_string(file).map_err(|e| fail(e.to_string()))?)
                    .map_err(fail)?
            }
            None => Headers::default(),
        };
        Ok(Some(ExportSettings {
            endpoint: endpoint.clone(),
            protocol: self.otlp_protocol,
            interval_s: self.otlp_interval,
            addresses,
            ca_file: self.otlp_ca_file.clone(),
            measured,
            budget_percent: self.otlp_budget,
            headers,
        }))
    }
}

/// An http:// or https:// URL with a host: what the exporter can reach.
fn parse_endpoint(text: &str) -> Result<String, String> {
    let uri: Uri = text
        .parse()
        .map_err(|_| format!("'{text}' is not a URL (http://HOST:PORT or https://HOST:PORT)"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(format!("'{text}' is not an http:// or https:// URL")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(format!("'{text}' names no host"));
    }
    let port = uri
        .authority()
        .and_then(|a| a.as_str().rsplit_once(':'))
        .map(|(_, port)| port)
        .filter(|port| !port.ends_with(']'));
    if port.is_some_and(|port| port.parse::<u16>().is_err() || port == "0") {
        return Err(format!("'{text}' has no valid port (1 to 65535)"));
    }
    if uri.query().is_some() {
        return Err(format!("'{text}' has a query; OTLP takes none"));
    }
    Ok(text.to_owned())
}

fn parse_otlp_interval(text: &str) -> Result<f64, String> {
    let number = text.strip_suffix('s').unwrap_or(text);
    super::values::parse_seconds(number, MIN_OTLP_INTERVAL_S, MAX_OTLP_INTERVAL_S)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_urls_with_a_host() {
        for good in [
            "http://localhost:4317",
            "https://collector.example:4318/v1development/profiles",
            "http://[::1]:4317",
        ] {
            assert_eq!(parse_endpoint(good).as_deref(), Ok(good));
        }
        for bad in [
            "localhost:4317",
            "ftp://x:1",
            "http://",
            "http://x:99999",
            "http://x:1/?a=b",
            "not a url",
        ] {
            assert!(parse_endpoint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn intervals_are_seconds() {
        assert_eq!(parse_otlp_interval("60s"), Ok(60.0));
        assert_eq!(parse_otlp_interval("2.5"), Ok(2.5));
        for bad in ["0s", "-1", "1m", "3601s", "s", ""] {
            assert!(parse_otlp_interval(bad).is_err(), "{bad}");
        }
    }
}
