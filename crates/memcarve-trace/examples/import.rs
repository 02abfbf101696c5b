//! Imports PyTorch snapshots and prints their figures, the import time, and the time to write and read
//! them back in the memcarve trace format (gzip):
//! `cargo run --release -p memcarve-trace --example import -- traces/resnet50_train.pickle.gz`.

use std::time::Instant;

use memcarve_trace::{TraceError, TraceReader, torch};

const MIB: f64 = (1u64 << 20) as f64;

fn main() -> Result<(), TraceError> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: import SNAPSHOT.pickle[.gz]...");
    }
    for path in paths {
        let start = Instant::now();
        let imported = torch::import(&path)?;
        let import_time = start.elapsed();
        let summary = imported.summary;
        let pytorch = summary.pytorch.unwrap_or_default();
        println!("{path}");
        println!(
            "  entries {}, devices {:?}, events {}",
            imported.entries,
            imported.devices,
            imported.events.len()
        );
        println!(
            "  allocs {}, frees {}, dropped frees {}, live at end {}, ooms {}",
            summary.allocations, summary.frees, summary.dropped_frees, summary.live_at_end, pytorch.ooms
        );
        println!(
            "  peak live {} B ({:.1} MiB), PyTorch peak reserved {} B ({:.1} MiB), segment ops {}, overhead {:.4}",
            summary.peak_live_bytes,
            summary.peak_live_bytes as f64 / MIB,
            pytorch.peak_reserved_bytes,
            pytorch.peak_reserved_bytes as f64 / MIB,
            pytorch.segment_ops,
            summary.pytorch_overhead().unwrap_or(f64::NAN)
        );
        let start = Instant::now();
        let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let bytes = imported
            .write(encoder, "memory")?
            .finish()
            .map_err(|source| TraceError::Write { file: "memory".into(), source })?;
        let write_time = start.elapsed();
        let start = Instant::now();
        let mut reader = TraceReader::new(bytes.as_slice(), "memory")?;
        let mut events = 0usize;
        for event in reader.by_ref() {
            event?;
            events += 1;
        }
        let read_time = start.elapsed();
        assert_eq!(reader.summary(), summary);
        println!(
            "  import {:.1} ms; as trace.gz: {} bytes, write {:.1} ms, read {:.1} ms ({events} events)",
            import_time.as_secs_f64() * 1e3,
            bytes.len(),
            write_time.as_secs_f64() * 1e3,
            read_time.as_secs_f64() * 1e3,
        );
    }
    Ok(())
}
