//! Headers sent with every push (`--otlp-headers-file`): what a receiver
//! authenticates by (`authorization`, a tenant's `x-scope-orgid`). They
//! are read from a file at the command's edge and handed to the serving
//! process over its feed, never on a command line, and their values are
//! never printed: `Debug` shows the names only.

use std::fmt;

use serde::{Deserialize, Serialize};
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};

/// Names netto sets itself, or that HTTP/2 and gRPC keep to themselves.
const RESERVED: &[&str] = &[
    "connection",
    "content-encoding",
    "content-length",
    "content-type",
    "host",
    "te",
    "transfer-encoding",
    "user-agent",
];

#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Headers(Vec<(String, String)>);

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

impl Headers {
    /// A file's `name: value` lines; blank lines and lines that start
    /// with `#` are skipped. Names are sent in lower case (HTTP/2 and gRPC
    /// take no other). An error names the line, never a value.
    pub fn parse(text: &str) -> Result<Headers, String> {
        let mut headers = Vec::new();
        for (at, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = at + 1;
            let Some((name, value)) = line.split_once(':') else {
                return Err(format!("line {n} is not `name: value`"));
            };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if AsciiMetadataKey::from_bytes(name.as_bytes()).is_err() {
                return Err(format!("line {n}: {name:?} is not a header name"));
            }
            if RESERVED.contains(&name.as_str()) || name.starts_with("grpc-") {
                return Err(format!("line {n}: netto sets {name} itself"));
            }
            let printable = value.bytes().all(|b| b == b' ' || b.is_ascii_graphic());
            if value.is_empty() || !printable || AsciiMetadataValue::try_from(value).is_err() {
                return Err(format!(
                    "line {n}: the value of {name} is empty or not printable ASCII"
                ));
            }
            headers.push((name, value.to_owned()));
        }
        if headers.is_empty() {
            return Err("holds no `name: value` line".to_owned());
        }
        Ok(Headers(headers))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_value_lines_in_lower_case_comments_skipped() {
        let headers =
            Headers::parse("# for the collector\n\nAuthorization: Bearer a:b\n x-scope-orgid:t1\n")
                .unwrap();
        assert_eq!(
            headers.iter().collect::<Vec<_>>(),
            [("authorization", "Bearer a:b"), ("x-scope-orgid", "t1")]
        );
        assert_eq!(
            format!("{headers:?}"),
            r#"["authorization", "x-scope-orgid"]"#
        );
    }

    #[test]
    fn a_bad_line_is_named_without_its_value() {
        for (text, says) in [
            ("", "holds no"),
            ("# only\n", "holds no"),
            ("authorization Bearer secret\n", "line 1 is not"),
            ("a: 1\nbad name: secret\n", "line 2: \"bad name\""),
            ("content-type: secret\n", "netto sets content-type"),
            ("grpc-timeout: secret\n", "netto sets grpc-timeout"),
            ("x-key:\n", "empty or not printable"),
            ("x-key: sécret\n", "empty or not printable"),
        ] {
            let err = Headers::parse(text).unwrap_err();
            assert!(err.contains(says), "{text:?}: {err}");
            assert!(!err.contains("secret") && !err.contains("sécret"), "{err}");
        }
    }
}
