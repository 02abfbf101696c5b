//! Bad input of every kind gives a typed error naming the file and the position, never a panic.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use liblzma::write::XzEncoder;
use memcarve_trace::format::{TraceHeader, TraceReader, TraceWriter};
use memcarve_trace::model::{Alloc, AllocationId, Event, EventFault, Free};
use memcarve_trace::{TraceError, torch};
use serde_pickle::Value;

use crate::support::{dict, entry, pickle, pickle_bytes, shipped, snapshot, string};

fn read_trace(name: &str, bytes: &[u8]) -> Result<Vec<Event>, TraceError> {
    TraceReader::new(bytes, name)?.collect()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn a_missing_file_is_named() {
    let missing = "no/such/trace.pickle.gz";
    for error in [
        torch::import(missing).unwrap_err(),
        TraceReader::open(missing).err().unwrap(),
        memcarve_trace::open(missing).err().unwrap(),
    ] {
        assert!(matches!(&error, TraceError::Open { file, .. } if file == missing), "{error}");
        assert!(error.to_string().starts_with(missing));
    }
}

#[test]
fn a_truncated_compressed_snapshot_names_the_format_and_offset() {
    let gz = std::fs::read(shipped("resnet50_train.pickle.gz")).unwrap();
    let mut xz = XzEncoder::new(Vec::new(), 6);
    xz.write_all(&pickle_bytes("resnet50_train.pickle.gz")).unwrap();
    let xz = xz.finish().unwrap();
    // Whole, both import to the same events.
    let from_gz = torch::import_bytes(&gz, "whole.pickle.gz").unwrap();
    let from_xz = torch::import_bytes(&xz, "whole.pickle.xz").unwrap();
    assert!(from_gz.events == from_xz.events && from_gz.summary == from_xz.summary);
    for (bytes, name, compression) in [(&gz, "cut.pickle.gz", "gzip"), (&xz, "cut.pickle.xz", "xz")] {
        let cut = &bytes[..bytes.len() / 2];
        let error = torch::import_bytes(cut, name).unwrap_err();
        let TraceError::Decompress { file, format, offset, .. } = &error else { panic!("{error}") };
        assert_eq!((file.as_str(), *format), (name, compression));
        assert!(*offset > 0);
        assert!(error.to_string().contains(&format!("{compression} data is corrupt")), "{error}");
        // The same through open(): the pickle is decompressed as it is read.
        let path = crate::support::temp_path(name);
        std::fs::write(&path, cut).unwrap();
        assert!(memcarve_trace::is_snapshot(&path).unwrap());
        let error = memcarve_trace::open(&path).err().unwrap();
        assert!(matches!(error, TraceError::Decompress { format, .. } if format == compression), "{error}");
        std::fs::remove_file(&path).unwrap();
    }
}

/// An xz stream whose block header asks for a dictionary of 4 GiB, with the CRCs right: the decoder refuses it at
/// its memory limit instead of reserving the dictionary.
fn xz_asking_for_4_gib() -> Vec<u8> {
    let crc = |bytes: &[u8]| {
        let mut crc = flate2::Crc::new();
        crc.update(bytes);
        crc.sum().to_le_bytes()
    };
    let mut bytes = vec![0xfd, b'7', b'z', b'X', b'Z', 0x00];
    let flags = [0x00, 0x01]; // CRC32 check
    bytes.extend(flags);
    bytes.extend(crc(&flags));
    // Block header: 12 bytes, one filter (LZMA2, one property byte: dictionary 4 GiB - 1), padding, CRC32.
    let header = [0x02, 0x00, 0x21, 0x01, 40, 0x00, 0x00, 0x00];
    bytes.extend(header);
    bytes.extend(crc(&header));
    bytes.extend([0u8; 64]);
    bytes
}

#[test]
fn an_xz_stream_asking_for_too_much_memory_is_an_error() {
    let bytes = xz_asking_for_4_gib();
    for error in [
        torch::import_bytes(&bytes, "huge.pickle.xz").unwrap_err(),
        TraceReader::new(bytes.as_slice(), "huge.trace.xz").err().unwrap(),
    ] {
        let source = std::error::Error::source(&error).map(ToString::to_string).unwrap_or_default();
        assert!(source.contains("memory limit"), "{error}: {source}");
    }
    let error = torch::import_bytes(&bytes, "huge.pickle.xz").unwrap_err();
    assert!(matches!(error, TraceError::Decompress { format: "xz", offset: 0, .. }), "{error}");
    // Not taken for a snapshot (its first byte cannot be read), and open() gives the same typed error.
    let path = crate::support::temp_path("huge.pickle.xz");
    std::fs::write(&path, &bytes).unwrap();
    assert!(!memcarve_trace::is_snapshot(&path).unwrap());
    let error = memcarve_trace::open(&path).err().unwrap();
    assert!(matches!(error, TraceError::Decompress { format: "xz", .. }), "{error}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn short_and_empty_files_are_not_snapshots() {
    for (name, bytes) in [("empty", &b""[..]), ("one", &[0xfd][..]), ("magic", &[0x1f, 0x8b][..])] {
        let path = crate::support::temp_path(name);
        std::fs::write(&path, bytes).unwrap();
        assert!(!memcarve_trace::is_snapshot(&path).unwrap(), "{name}");
        assert!(memcarve_trace::open(&path).is_err(), "{name}");
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_truncated_pickle_names_the_offset() {
    let bytes = pickle_bytes("tiny_expandable_segments.pickle");
    for cut in [1, 2, 11, bytes.len() / 2, bytes.len() - 1] {
        let error = torch::import_bytes(&bytes[..cut], "cut.pickle").unwrap_err();
        let TraceError::Pickle { offset, .. } = &error else { panic!("{error}") };
        assert_eq!(*offset, Some(cut as u64), "{error}");
        assert!(error.to_string().starts_with(&format!("cut.pickle: bad pickle at byte {cut}: ")), "{error}");
    }
}

#[test]
fn a_pickle_that_is_not_a_snapshot_says_why() {
    let cases = [
        (pickle(&Value::List(vec![Value::I64(1)])), "a list, not a dict"),
        (pickle(&dict(vec![("segments", Value::List(Vec::new()))])), "no `device_traces`"),
        (pickle(&dict(vec![("device_traces", Value::I64(3))])), "not a list"),
        (
            pickle(&dict(vec![("device_traces", Value::List(vec![Value::None]))])),
            "`device_traces[0]` is None",
        ),
    ];
    for (bytes, reason) in cases {
        let error = torch::import_bytes(&bytes, "other.pickle").unwrap_err();
        assert!(matches!(&error, TraceError::NotSnapshot { .. }), "{error}");
        assert!(error.to_string().contains(reason), "{error} should say {reason}");
    }
}

#[test]
fn a_bad_entry_names_device_and_index() {
    let no_size = dict(vec![("action", string("alloc")), ("addr", Value::I64(512))]);
    let negative = entry("alloc", -512, 8);
    let unknown = entry("teleport", 0, 8);
    let not_a_dict = Value::I64(5);
    for (bad, reason) in [
        (no_size, "no `size`"),
        (negative, "negative"),
        (unknown, "unknown action `teleport`"),
        (not_a_dict, "not a dict"),
    ] {
        let bytes = snapshot(vec![vec![], vec![entry("alloc", 512, 8), bad]]);
        let error = torch::import_bytes(&bytes, "bad.pickle").unwrap_err();
        assert!(matches!(&error, TraceError::Entry { device: 1, entry: 1, .. }), "{error}");
        assert!(error.to_string().contains(reason), "{error} should say {reason}");
    }
}

#[test]
fn foreign_and_hostile_pickles_are_refused() {
    // A global and a reduction (what `pickle` uses to run code): not builtin types.
    let global = b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00cos\nsystem\n\x8c\x02id\x85R.";
    let error = torch::import_bytes(global, "evil.pickle").unwrap_err();
    assert!(matches!(error, TraceError::Pickle { offset: Some(11), .. }), "{error}");
    assert!(error.to_string().contains("only builtin types"), "{error}");
    // Shared references that decode to 2^60 values from a few hundred bytes.
    let mut bomb = vec![0x80, 4, b']', 0x94];
    for id in 0..60u8 {
        bomb.extend([b'(', b'h', id, b'h', id, b'l', 0x94]);
    }
    bomb.push(b'.');
    let error = torch::import_bytes(&bomb, "bomb.pickle").unwrap_err();
    assert!(error.to_string().contains("decodes to more than"), "{error}");
    // A frozenset of NaNs and numbers: serde-pickle sorts set items with an order NaN breaks, which panics
    // (found by the trace_reader fuzz target).
    // serde-pickle 1.2 panics on exactly this one.
    let mut set = vec![0x80, 4, b'('];
    for i in 0..21u8 {
        match i % 3 {
            0 => set.extend([b'G', 0x7f, 0xf8, 0, 0, 0, 0, 0, 0]),
            1 => set.extend([b'K', i * 7 % 13]),
            _ => set.extend([b'J', i * 5 % 11, 0, 0, 0]),
        }
    }
    set.extend([0x91, b'.']);
    let error = torch::import_bytes(&set, "set.pickle").unwrap_err();
    assert!(error.to_string().contains("a set"), "{error}");
    // Not a pickle at all, and empty.
    for bytes in [&b"hello"[..], b""] {
        let error = torch::import_bytes(bytes, "text.pickle").unwrap_err();
        assert!(matches!(error, TraceError::Pickle { .. }), "{error}");
    }
}

#[test]
fn malformed_trace_lines_name_the_line() {
    let head = "# memcarve-trace v1\nm,source,test\n";
    let cases: &[(&str, u64, &str)] = &[
        ("a,0,100,512\nend,1\n", 3, "`stream` is missing"),
        ("a,0,1x0,512,0\nend,1\n", 3, "size: `1x0` is not an unsigned 64-bit integer"),
        ("a,0,100,512,0\na,1,99999999999999999999,1,0\nend,2\n", 4, "is not an unsigned 64-bit integer"),
        ("a,0,100,512,0,gpu\nend,1\n", 3, "location: `gpu` is not a location name"),
        ("a,0,100,512,0,,image\nend,1\n", 3, "class: `image`"),
        ("a,0,100,512,0,,,,bad \\t escape\nend,1\n", 3, "unknown escape"),
        ("a,0,100,512,0\nf,0,1,2\nend,2\n", 4, "at most two fields"),
        ("x,1\n", 3, "unknown record kind `x`"),
        ("a,0,100,512,0\nm,late,1\n", 4, "must come before the first event"),
        ("a,0,100,512,0\nend,2\n", 4, "counts 2 events, but the trace has 1"),
        ("end,0\na,0,100,512,0\n", 4, "data after the end record"),
        ("m,source,twice\nend,0\n", 3, "given twice"),
        ("m,pytorch.segment_ops,3\nend,0\n", 4, "not both"),
        ("m,Bad Key,3\nend,0\n", 3, "metadata key"),
    ];
    for &(body, line, reason) in cases {
        let text = format!("{head}{body}");
        let error = read_trace("bad.trace", text.as_bytes()).unwrap_err();
        assert!(matches!(&error, TraceError::Malformed { line: at, .. } if *at == line), "{body:?}: {error}");
        let message = error.to_string();
        assert!(message.starts_with(&format!("bad.trace: line {line}: ")), "{message}");
        assert!(message.contains(reason), "{message} should say {reason}");
        // The same inside gzip.
        let error = read_trace("bad.trace.gz", &gzip(text.as_bytes())).unwrap_err();
        assert!(matches!(&error, TraceError::Malformed { line: at, .. } if *at == line), "{body:?}: {error}");
    }
}

#[test]
fn inconsistent_events_name_the_line() {
    let cases: &[(&str, u64, EventFault)] = &[
        ("f,3\n", 2, EventFault::UnknownId { id: AllocationId(3) }),
        ("a,1,8,8,0\na,1,8,8,0\n", 3, EventFault::DuplicateId { id: AllocationId(1) }),
        ("a,1,0,8,0\n", 2, EventFault::ZeroSize { id: AllocationId(1) }),
        ("a,1,8,12,0\n", 2, EventFault::BadAlignment { id: AllocationId(1), alignment: 12 }),
    ];
    for &(body, line, expected) in cases {
        let text = format!("# memcarve-trace v1\n{body}end,9\n");
        let error = read_trace("bad.trace", text.as_bytes()).unwrap_err();
        assert!(
            matches!(&error, TraceError::InvalidEvent { line: at, fault, .. } if *at == line && *fault == expected),
            "{body:?}: {error}"
        );
    }
}

#[test]
fn a_cut_trace_is_truncated_not_short() {
    let imported = torch::import(shipped("tiny_expandable_segments.pickle")).unwrap();
    let bytes = imported.write(Vec::new(), "whole").unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    // Cut at a line boundary: every line parses, but the end record is missing.
    let cut = text.rfind("\nf,").unwrap() + 1;
    let error = read_trace("cut.trace", &bytes[..cut]).unwrap_err();
    let lines = text[..cut].lines().count() as u64;
    assert!(matches!(error, TraceError::Truncated { line, .. } if line == lines + 1), "{error}");
    // Cut gzip: the decompressor reports the cut where it is met.
    let compressed = gzip(&bytes);
    let error = read_trace("cut.trace.gz", &compressed[..compressed.len() - 9]).unwrap_err();
    assert!(matches!(error, TraceError::Read { .. } | TraceError::Truncated { .. }), "{error}");
    assert!(error.to_string().starts_with("cut.trace.gz: line "), "{error}");
    // Only the header.
    let error = read_trace("head.trace", b"# memcarve-trace v1\n").unwrap_err();
    assert!(matches!(error, TraceError::Truncated { line: 2, .. }), "{error}");
}

#[test]
fn other_files_are_not_traces() {
    let error = read_trace("empty.trace", b"").unwrap_err();
    assert!(matches!(error, TraceError::NotATrace { .. }), "{error}");
    let error = read_trace("v2.trace", b"# memcarve-trace v2\nend,0\n").unwrap_err();
    assert!(matches!(&error, TraceError::UnsupportedVersion { version, .. } if version == "2"), "{error}");
    let error = read_trace("data.csv", b"id,size\n1,2\n").unwrap_err();
    assert!(matches!(error, TraceError::NotATrace { hint: "", .. }), "{error}");
    let pickle = std::fs::read(shipped("resnet50_train.pickle.gz")).unwrap();
    let error = read_trace("resnet50_train.pickle.gz", &pickle).unwrap_err();
    assert!(error.to_string().contains("looks like a pickle"), "{error}");
    let long =
        format!("# memcarve-trace v1\n# {}\nend,0\n", "x".repeat(memcarve_trace::format::MAX_LINE_BYTES));
    let error = read_trace("long.trace", long.as_bytes()).unwrap_err();
    assert!(matches!(error, TraceError::Malformed { line: 2, .. }), "{error}");
    let error = read_trace("utf8.trace", b"# memcarve-trace v1\na,0,1,1,0,,,,\xff\xfe\nend,1\n").unwrap_err();
    assert!(error.to_string().contains("UTF-8"), "{error}");
}

#[test]
fn writers_refuse_what_readers_would_refuse() {
    let mut writer = TraceWriter::new(Vec::new(), "out.trace", &TraceHeader::default()).unwrap();
    writer.write(&Event::Alloc(Alloc::new(AllocationId(1), 8, 8, 0))).unwrap();
    let error = writer.write(&Event::Free(Free { id: AllocationId(2), time_us: None })).unwrap_err();
    assert!(matches!(error, TraceError::InvalidEvent { line: 3, .. }), "{error}");
    let header = TraceHeader { extra: vec![("source".into(), "again".into())], ..TraceHeader::default() };
    let error = TraceWriter::new(Vec::new(), "out.trace", &header).err().unwrap();
    assert!(matches!(error, TraceError::Write { .. }), "{error}");
    let error = TraceWriter::create("no/such/dir/out.trace", &TraceHeader::default()).err().unwrap();
    assert!(matches!(error, TraceError::Open { .. }), "{error}");
}
