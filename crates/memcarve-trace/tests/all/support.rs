//! Shared helpers: the shipped traces, snapshot pickles built from Python-like values, temporary files.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use serde_pickle::{HashableValue, SerOptions, Value};

/// A file in the repository's `traces/` folder.
pub fn shipped(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces").join(name)
}

/// The bytes of a file, gzip or xz undone if it is compressed.
pub fn pickle_bytes(name: &str) -> Vec<u8> {
    let bytes = std::fs::read(shipped(name)).unwrap();
    let mut pickle = Vec::new();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(bytes.as_slice()).read_to_end(&mut pickle).unwrap();
    } else if bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        liblzma::read::XzDecoder::new_multi_decoder(bytes.as_slice()).read_to_end(&mut pickle).unwrap();
    } else {
        return bytes;
    }
    pickle
}

/// A path for a temporary file of this test process.
pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("memcarve-trace-test-{}-{name}", std::process::id()))
}

pub fn string(text: &str) -> Value {
    Value::String(text.to_owned())
}

pub fn dict(fields: Vec<(&str, Value)>) -> Value {
    let fields: BTreeMap<HashableValue, Value> =
        fields.into_iter().map(|(key, value)| (HashableValue::String(key.to_owned()), value)).collect();
    Value::Dict(fields)
}

/// A trace entry as PyTorch records it.
pub fn entry(action: &str, addr: i64, size: i64) -> Value {
    dict(vec![
        ("action", string(action)),
        ("addr", Value::I64(addr)),
        ("size", Value::I64(size)),
        ("stream", Value::I64(0)),
        ("time_us", Value::I64(1000 + addr)),
        ("compile_context", string("N/A")),
        ("user_metadata", string("")),
    ])
}

/// A pickled snapshot with these per-device trace entries.
pub fn snapshot(devices: Vec<Vec<Value>>) -> Vec<u8> {
    let traces = Value::List(devices.into_iter().map(Value::List).collect());
    pickle(&dict(vec![("segments", Value::List(Vec::new())), ("device_traces", traces)]))
}

pub fn pickle(value: &Value) -> Vec<u8> {
    serde_pickle::value_to_vec(value, SerOptions::new()).unwrap()
}
