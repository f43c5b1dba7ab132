//! The JSON schemas of a snapshot and of a recording, from the model types
//! (their doc comments are the schemas' descriptions), and the
//! compatibility policy that says what their `schema_version` promises.

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde_json::Value;

use crate::model::{Recording, Snapshot, SCHEMA_VERSION};

pub fn snapshot() -> String {
    schema_of::<Snapshot>()
}

pub fn recording() -> String {
    schema_of::<Recording>()
}

fn schema_of<T: JsonSchema>() -> String {
    let schema = SchemaSettings::draft2020_12()
        .with_transform(RecursiveTransform(|schema: &mut Schema| {
            if let Some(Value::String(doc)) = schema.get_mut("description") {
                *doc = description(doc);
            }
        }))
        .into_generator()
        .into_root_schema_for::<T>();
    let mut text = serde_json::to_string_pretty(&schema).expect("a schema serializes");
    text.push('\n');
    text
}

/// A doc comment as a description: its lines joined into paragraphs, and
/// rustdoc's links to Rust items (``[`Item`]``) left as the item's name.
fn description(doc: &str) -> String {
    let joined = doc
        .split("\n\n")
        .map(|paragraph| paragraph.replace('\n', " "))
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut out = String::with_capacity(joined.len());
    let mut rest = joined.as_str();
    while let Some(start) = rest.find("[`") {
        let (before, link) = rest.split_at(start);
        out.push_str(before);
        match link[2..].find("`]") {
            Some(end) if !link[2 + end + 2..].starts_with('(') => {
                out.push_str(&link[1..2 + end + 1]);
                rest = &link[2 + end + 2..];
            }
            _ => {
                out.push_str("[`");
                rest = &link[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The policy, with this netto's version filled in.
pub fn compatibility_page() -> String {
    include_str!("json-compatibility.md")
        .replace("{generated}", super::GENERATED)
        .replace("{schema_version}", &SCHEMA_VERSION.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_paragraphs_without_rustdoc_links() {
        assert_eq!(
            description("Says [`CpuTime::estimated`]\nand [`x`](http://e).\n\nNext."),
            "Says `CpuTime::estimated` and [`x`](http://e).\n\nNext."
        );
    }
}
