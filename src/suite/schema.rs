//! The JSON schema of `results.json`, generated from the types the suite serialises (with
//! `schemars`): every field of every experiment's result is there, typed and described by its
//! doc comment, so the schema cannot drift from what is written. docs/results.schema.json is
//! this output; a test fails when they differ (`IOLAB_BLESS=1 cargo test results_schema`
//! rewrites it).

use super::{REGISTRY, SCHEMA, SuiteResult};
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

const DESCRIPTION: &str = "One suite run. Every experiment of the suite's registry is an outcome under its name: `result` (the experiment's own result, as its --format json prints it) or `error` (why it was not measured) with its `kind` (failed, usage, unsupported, unsuited), and `seconds`. Durations are seconds (numbers); XORs are 8-digit lowercase hex strings; rates are `mib_s` (MiB/s) and `kiops`; sizes are bytes. Every command's --format json carries `schema` (`iolab-COMMAND/1`), `host` and `interference` beside its result. Generated from iolab's types.";

/// The schema of a suite's `results.json`.
pub fn results_schema() -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    // Each experiment's result first, so that its types are among the definitions.
    let results: Vec<(&str, Value)> = REGISTRY
        .iter()
        .map(|e| (e.name(), e.result_schema(&mut g).to_value()))
        .collect();
    let mut v = g.root_schema_for::<SuiteResult>().to_value();
    // The experiments are flattened into the top level: one property each, its result typed.
    let outcome = v["$defs"]["Outcome"].clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("additionalProperties");
        o.insert("$id".into(), json!(SCHEMA));
        o.insert(
            "title".into(),
            json!("results.json written by `iolab suite`"),
        );
        o.insert("description".into(), json!(DESCRIPTION));
    }
    for (name, result) in results {
        let mut o = outcome.clone();
        o["properties"]["result"] = json!({"anyOf": [result, {"type": "null"}]});
        v["properties"][name] = o;
        if let Some(r) = v["required"].as_array_mut() {
            r.push(json!(name));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_results_schema_is_the_one_the_types_make() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/results.schema.json");
        let made = results_schema();
        let text = serde_json::to_string_pretty(&made).unwrap() + "\n";
        if std::env::var_os("IOLAB_BLESS").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        let kept: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(
            kept == made,
            "docs/results.schema.json is not what the types make: run `IOLAB_BLESS=1 cargo test results_schema` and commit it"
        );
        // Every experiment is there with its own result's fields.
        for e in REGISTRY {
            let result = &made["properties"][e.name()]["properties"]["result"]["anyOf"][0];
            assert!(result.is_object(), "{}: {result}", e.name());
        }
    }
}
