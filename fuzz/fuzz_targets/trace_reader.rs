//! Fuzzes the readers of memcarve-trace with arbitrary bytes: the trace-format reader (plain, or gzip or xz when
//! the bytes start with their magic) and the PyTorch snapshot importer. Neither may panic, and a trace that
//! reads without error must write back to the same events.
//!
//! `cargo +nightly fuzz run trace_reader` from the repository root (see docs/FUZZING.md).
#![no_main]

use libfuzzer_sys::fuzz_target;
use memcarve_trace::format::{TraceReader, TraceWriter};
use memcarve_trace::torch;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut reader) = TraceReader::new(data, "fuzz") {
        let events: Result<Vec<_>, _> = reader.by_ref().collect();
        if let Ok(events) = events {
            assert!(reader.is_finished());
            let mut writer =
                TraceWriter::new(Vec::new(), "fuzz", reader.header()).expect("a read header writes");
            for event in &events {
                writer.write(event).expect("a read event writes");
            }
            let written = writer.finish().expect("writing to memory");
            let again: Vec<_> = TraceReader::new(written.as_slice(), "again")
                .expect("a written header reads")
                .collect::<Result<_, _>>()
                .expect("written events read");
            assert_eq!(again, events);
        }
    }
    if let Ok(imported) = torch::import_bytes(data, "fuzz") {
        assert_eq!(imported.summary.allocations + imported.summary.frees, imported.events.len() as u64);
    }
});
