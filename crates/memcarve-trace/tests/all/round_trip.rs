//! The trace format: write -> read gives back the same events, header and summary, plain, gzip and xz; readers
//! stream.

use std::io::{self, BufRead, Read, Write};

use flate2::Compression;
use flate2::write::GzEncoder;
use liblzma::write::XzEncoder;
use memcarve_trace::format::{TraceHeader, TraceReader, TraceWriter};
use memcarve_trace::model::{Alloc, AllocationId, Class, Event, Free, Location, PyTorchFigures};
use memcarve_trace::{TraceKind, torch};
use proptest::prelude::*;

use crate::support::{shipped, temp_path};

fn read_all(bytes: &[u8]) -> (Vec<Event>, TraceReader<&[u8]>) {
    let mut reader = TraceReader::new(bytes, "memory").unwrap();
    let events = reader.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
    assert!(reader.is_finished());
    (events, reader)
}

#[test]
fn an_imported_snapshot_round_trips_plain_gzip_and_xz() {
    let imported = torch::import(shipped("resnet50_train.pickle.gz")).unwrap();
    let plain = imported.write(Vec::new(), "plain").unwrap();
    assert!(plain.starts_with(b"# memcarve-trace v1\nm,source,pytorch snapshot resnet50_train.pickle.gz\n"));
    let gzip =
        imported.write(GzEncoder::new(Vec::new(), Compression::default()), "gzip").unwrap().finish().unwrap();
    assert!(gzip.len() < plain.len() / 4);
    let xz = imported.write(XzEncoder::new(Vec::new(), 9), "xz").unwrap().finish().unwrap();
    assert!(xz.len() < plain.len() / 4);
    for bytes in [&plain, &gzip, &xz] {
        let (events, reader) = read_all(bytes);
        assert!(events == imported.events);
        assert_eq!(reader.summary(), imported.summary);
        assert_eq!(reader.header(), &imported.header());
    }
}

#[test]
fn files_round_trip_through_create_and_open() {
    let imported = torch::import(shipped("tiny_expandable_segments.pickle")).unwrap();
    for name in ["tiny.trace", "tiny.trace.gz", "tiny.trace.xz"] {
        let path = temp_path(name);
        let mut writer = TraceWriter::create(&path, &imported.header()).unwrap();
        for event in &imported.events {
            writer.write(event).unwrap();
        }
        writer.close().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.starts_with(&[0x1f, 0x8b]), name.ends_with(".gz"));
        assert_eq!(bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]), name.ends_with(".xz"));
        assert!(!memcarve_trace::is_snapshot(&path).unwrap());
        let mut trace = memcarve_trace::open(&path).unwrap();
        assert_eq!(trace.kind(), TraceKind::Trace);
        let events = trace.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
        assert!(events == imported.events);
        assert_eq!(trace.summary(), imported.summary);
        std::fs::remove_file(&path).unwrap();
    }
    let summary =
        torch::convert_to_file(shipped("tiny_expandable_segments.pickle"), temp_path("c.trace.gz")).unwrap();
    assert_eq!(summary, imported.summary);
    let converted = torch::convert(shipped("tiny_expandable_segments.pickle"), Vec::new()).unwrap();
    let (events, reader) = read_all(&converted);
    assert!(events == imported.events);
    assert_eq!(reader.summary(), summary);
    std::fs::remove_file(temp_path("c.trace.gz")).unwrap();
}

#[test]
fn concatenated_xz_streams_read_as_one() {
    let imported = torch::import(shipped("resnet50_train.pickle.gz")).unwrap();
    let plain = imported.write(Vec::new(), "plain").unwrap();
    let half = plain.len() / 2;
    let mut joined = Vec::new();
    for part in [&plain[..half], &plain[half..]] {
        let mut encoder = XzEncoder::new(Vec::new(), 1);
        encoder.write_all(part).unwrap();
        joined.extend(encoder.finish().unwrap());
    }
    let (events, reader) = read_all(&joined);
    assert!(events == imported.events);
    assert_eq!(reader.summary(), imported.summary);
}

/// The code blocks of docs/TRACE_FORMAT.md.
fn documented_blocks() -> Vec<String> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/TRACE_FORMAT.md")).unwrap();
    doc.split("```\n").skip(1).step_by(2).map(str::to_owned).collect()
}

#[test]
fn the_documented_conversion_is_what_convert_writes() {
    let converted = torch::convert(shipped("tiny_expandable_segments.pickle"), Vec::new()).unwrap();
    let excerpt = &documented_blocks()[1];
    assert!(String::from_utf8(converted).unwrap().starts_with(excerpt.as_str()));
}

#[test]
fn the_documented_sample_reads() {
    let sample = documented_blocks()[0].clone();
    let (events, reader) = read_all(sample.as_bytes());
    let mut weights = Alloc::new(AllocationId(0), 1000, 512, 0);
    weights.location = Some(Location::GpuOnly);
    weights.class = Some(Class::Buffer);
    weights.time_us = Some(17);
    weights.name = Some("weights, layer 1".into());
    let mut image = Alloc::new(AllocationId(2), 4096, 4096, 0);
    image.class = Some(Class::OptimalImage);
    assert_eq!(
        events,
        vec![
            Event::Alloc(weights),
            Event::Alloc(Alloc::new(AllocationId(1), 64, 256, 7)),
            Event::Alloc(image),
            Event::Free(Free { id: AllocationId(0), time_us: Some(20) }),
            Event::Free(Free { id: AllocationId(1), time_us: None }),
        ]
    );
    let header = reader.header();
    assert_eq!(header.source.as_deref(), Some("hand-written example"));
    assert_eq!(
        header.pytorch,
        Some(PyTorchFigures { peak_reserved_bytes: 4 << 20, segment_ops: 2, ooms: 0 })
    );
    assert_eq!(header.extra, vec![("recorder.version".to_owned(), "2.11".to_owned())]);
    let summary = reader.summary();
    assert_eq!(
        (summary.allocations, summary.frees, summary.live_at_end, summary.dropped_frees),
        (3, 2, 1, 1)
    );
    assert_eq!(summary.peak_live_bytes, 5160);
}

/// Produces a trace of `pairs` alloc/free pairs on the fly, never holding it in memory.
struct GeneratedTrace {
    pairs: u64,
    next: u64,
    line: Vec<u8>,
    at: usize,
}

impl GeneratedTrace {
    fn new(pairs: u64) -> GeneratedTrace {
        GeneratedTrace { pairs, next: 0, line: b"# memcarve-trace v1\n".to_vec(), at: 0 }
    }
}

impl Read for GeneratedTrace {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let count = available.len().min(buf.len());
        buf[..count].copy_from_slice(&available[..count]);
        self.consume(count);
        Ok(count)
    }
}

impl BufRead for GeneratedTrace {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.at == self.line.len() && self.next <= self.pairs {
            self.line.clear();
            self.at = 0;
            if self.next == self.pairs {
                writeln!(self.line, "end,{}", 2 * self.pairs)?;
            } else {
                let id = self.next;
                write!(self.line, "a,{id},{},256,0\nf,{id}\n", 1 + id % 4096)?;
            }
            self.next += 1;
        }
        Ok(&self.line[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at += amount;
    }
}

/// Half a million events read from a source that never holds them: the reader keeps only the live
/// allocations (docs/TRACE_FORMAT.md gives the release-mode time for two million).
#[test]
fn a_long_trace_streams() {
    let mut reader = TraceReader::new(GeneratedTrace::new(250_000), "generated").unwrap();
    let mut largest = 0;
    for event in reader.by_ref() {
        if let Event::Alloc(alloc) = event.unwrap() {
            largest = largest.max(alloc.size);
        }
    }
    let summary = reader.summary();
    assert_eq!((summary.allocations, summary.frees, summary.live_at_end), (250_000, 250_000, 0));
    assert_eq!((summary.peak_live_bytes, largest), (4096, 4096));
}

fn arbitrary_name() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[a-z,\\\\\n\r é#]{1,12}")
}

fn arbitrary_header() -> impl Strategy<Value = TraceHeader> {
    (
        prop::option::of("[ -~\n\\\\]{0,20}"),
        prop::option::of(any::<u64>()),
        prop::option::of((any::<u64>(), any::<u64>(), any::<u64>())),
        prop::collection::vec(("[a-z][a-z0-9._-]{0,8}", "[ -~]{0,10}"), 0..3),
    )
        .prop_map(|(source, dropped_frees, pytorch, extra)| {
            let mut extra: Vec<(String, String)> =
                extra.into_iter().map(|(key, value)| (format!("x.{key}"), value)).collect();
            extra.sort();
            extra.dedup_by(|a, b| a.0 == b.0);
            TraceHeader {
                source,
                dropped_frees,
                pytorch: pytorch.map(|(peak_reserved_bytes, segment_ops, ooms)| PyTorchFigures {
                    peak_reserved_bytes,
                    segment_ops,
                    ooms,
                }),
                extra,
            }
        })
}

#[derive(Debug, Clone)]
enum Step {
    Alloc {
        size: u64,
        alignment_log2: u8,
        stream: u64,
        location: Option<u8>,
        class: Option<u8>,
        name: Option<String>,
        time_us: Option<u64>,
    },
    Free {
        index: usize,
        time_us: Option<u64>,
    },
}

fn arbitrary_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (
            1..u64::MAX,
            0..64u8,
            any::<u64>(),
            prop::option::of(0..4u8),
            prop::option::of(0..4u8),
            arbitrary_name(),
            prop::option::of(any::<u64>())
        )
            .prop_map(|(size, alignment_log2, stream, location, class, name, time_us)| Step::Alloc {
                size,
                alignment_log2,
                stream,
                location,
                class,
                name,
                time_us
            }),
        (any::<usize>(), prop::option::of(any::<u64>()))
            .prop_map(|(index, time_us)| Step::Free { index, time_us }),
    ]
}

/// Turns steps into a valid event sequence: ids are fresh or reused after their free, frees name live ids.
fn events_of(steps: Vec<Step>) -> Vec<Event> {
    let mut live: Vec<u64> = Vec::new();
    let mut freed: Vec<u64> = Vec::new();
    let mut next = 0;
    let mut events = Vec::new();
    for step in steps {
        match step {
            Step::Alloc { size, alignment_log2, stream, location, class, name, time_us } => {
                let id = freed.pop().unwrap_or_else(|| {
                    next += 1;
                    next * 1_000_003
                });
                live.push(id);
                events.push(Event::Alloc(Alloc {
                    id: AllocationId(id),
                    size,
                    alignment: 1 << alignment_log2,
                    stream,
                    location: location.map(|index| Location::ALL[index as usize]),
                    class: class.map(|index| Class::ALL[index as usize]),
                    name,
                    time_us,
                }));
            }
            Step::Free { index, time_us } if !live.is_empty() => {
                let id = live.swap_remove(index % live.len());
                freed.push(id);
                events.push(Event::Free(Free { id: AllocationId(id), time_us }));
            }
            Step::Free { .. } => {}
        }
    }
    events
}

proptest! {
    #[test]
    fn any_valid_trace_round_trips(
        header in arbitrary_header(),
        steps in prop::collection::vec(arbitrary_step(), 0..60),
        gzip in any::<bool>(),
    ) {
        let events = events_of(steps);
        let mut writer = TraceWriter::new(Vec::new(), "memory", &header).unwrap();
        for event in &events {
            writer.write(event).unwrap();
        }
        let written = writer.stats();
        let mut bytes = writer.finish().unwrap();
        if gzip {
            let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
            encoder.write_all(&bytes).unwrap();
            bytes = encoder.finish().unwrap();
        }
        let (read, reader) = read_all(&bytes);
        prop_assert_eq!(&read, &events);
        prop_assert_eq!(reader.header(), &header);
        prop_assert_eq!(reader.stats(), written);
    }
}
