//! The memcarve trace format, version 1 (docs/TRACE_FORMAT.md): a line-based text format, one record per
//! line, gzip or xz accepted on read. [`TraceReader`] streams it one event at a time and [`TraceWriter`] writes
//! it one event at a time: memory is proportional to the live allocations, never to the length of the trace.
//! Both check every event with [`LiveAllocations`], so a trace that reads without error is well formed.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Chain, Cursor, Read, Write};
use std::path::Path;

use flate2::Compression;
use flate2::bufread::MultiGzDecoder;
use flate2::write::GzEncoder;
use liblzma::bufread::XzDecoder;
use liblzma::stream::Stream;
use liblzma::write::XzEncoder;

use crate::error::TraceError;
use crate::model::{
    Alloc, AllocationId, Class, Event, Free, LiveAllocations, Location, PyTorchFigures, TraceStats,
    TraceSummary,
};

/// The first line of every version-1 trace.
pub const HEADER_LINE: &str = "# memcarve-trace v1";

/// The format version this library reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// The longest line a reader accepts, in bytes (a guard against unbounded memory on bad input).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Bytes a writer gathers before writing them to its output.
const WRITE_BUFFER_BYTES: usize = 64 << 10;

const VERSION_PREFIX: &str = "# memcarve-trace v";
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const XZ_MAGIC: [u8; 6] = [0xfd, b'7', b'z', b'X', b'Z', 0x00];
/// The most memory an xz stream may take to decode: `xz -9e` needs 65 MiB, and a hostile header must not make a
/// reader reserve gigabytes.
pub const XZ_MEMORY_LIMIT: u64 = 256 << 20;
/// The first byte of a pickle of protocol 2 or later: how a snapshot is told from a trace.
pub(crate) const PICKLE_PROTO: u8 = 0x80;

const KEY_SOURCE: &str = "source";
const KEY_DROPPED_FREES: &str = "import.dropped_frees";
const KEY_PEAK_RESERVED: &str = "pytorch.peak_reserved_bytes";
const KEY_SEGMENT_OPS: &str = "pytorch.segment_ops";
const KEY_OOMS: &str = "pytorch.ooms";
const KNOWN_KEYS: [&str; 5] = [KEY_SOURCE, KEY_DROPPED_FREES, KEY_PEAK_RESERVED, KEY_SEGMENT_OPS, KEY_OOMS];

/// The metadata lines of a trace, before its first event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceHeader {
    /// Where the trace came from (free text: a tool, a file name).
    pub source: Option<String>,
    /// Frees an importer dropped because their allocation predates the recording.
    pub dropped_frees: Option<u64>,
    /// PyTorch's own figures, for traces imported from a PyTorch snapshot.
    pub pytorch: Option<PyTorchFigures>,
    /// Metadata with keys this version does not know, kept in order so that a copy keeps them.
    pub extra: Vec<(String, String)>,
}

impl TraceHeader {
    /// The summary of a trace with this header whose events have `stats`.
    pub fn summary(&self, stats: &TraceStats) -> TraceSummary {
        TraceSummary {
            allocations: stats.allocations,
            frees: stats.frees,
            dropped_frees: self.dropped_frees.unwrap_or(0),
            live_at_end: stats.live,
            peak_live_bytes: stats.peak_live_bytes,
            pytorch: self.pytorch,
        }
    }
}

type Prefixed<R> = Chain<Cursor<Vec<u8>>, R>;

/// A byte source with its compression undone: gzip or xz when it starts with that format's magic bytes, else
/// read as it is.
pub(crate) enum Decoded<R> {
    Plain(Prefixed<R>),
    Gzip(BufReader<MultiGzDecoder<Prefixed<R>>>),
    Xz(BufReader<XzDecoder<Prefixed<R>>>),
}

impl<R: BufRead> Decoded<R> {
    /// Looks at the first bytes (without losing them) and undoes gzip or xz if they are its magic. Concatenated
    /// streams of either are read one after another, as their command-line tools do. An xz stream that would need
    /// more than [`XZ_MEMORY_LIMIT`] to decode (a header can ask for a 4 GiB dictionary) is an error when read.
    pub(crate) fn new(mut input: R) -> io::Result<Decoded<R>> {
        let mut magic = Vec::with_capacity(XZ_MAGIC.len());
        while magic.len() < XZ_MAGIC.len() {
            let available = match input.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if available.is_empty() {
                break;
            }
            let take = available.len().min(XZ_MAGIC.len() - magic.len());
            magic.extend(available.iter().take(take));
            input.consume(take);
        }
        let gzip = magic.starts_with(&GZIP_MAGIC);
        let xz = magic == XZ_MAGIC;
        let prefixed = Cursor::new(magic).chain(input);
        Ok(if gzip {
            Decoded::Gzip(BufReader::new(MultiGzDecoder::new(prefixed)))
        } else if xz {
            let stream = Stream::new_stream_decoder(XZ_MEMORY_LIMIT, liblzma::stream::CONCATENATED)
                .map_err(io::Error::from)?;
            Decoded::Xz(BufReader::new(XzDecoder::new_stream(prefixed, stream)))
        } else {
            Decoded::Plain(prefixed)
        })
    }

    /// The error for a read of the whole file that failed after `offset` bytes came out: a decompression error
    /// naming the compression, or, for a plain file, the read itself.
    pub(crate) fn read_error(&self, file: String, offset: u64, source: io::Error) -> TraceError {
        let format = match self {
            Decoded::Plain(_) => return TraceError::Open { file, source },
            Decoded::Gzip(_) => "gzip",
            Decoded::Xz(_) => "xz",
        };
        TraceError::Decompress { file, format, offset, source }
    }

    /// Everything left, read at once (a snapshot is imported whole); `file` names the source in errors.
    pub(crate) fn read_all(&mut self, file: &str) -> Result<Vec<u8>, TraceError> {
        let mut bytes = Vec::new();
        match self.read_to_end(&mut bytes) {
            Ok(_) => Ok(bytes),
            Err(source) => Err(self.read_error(file.to_owned(), bytes.len() as u64, source)),
        }
    }
}

impl<R: BufRead> Read for Decoded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Decoded::Plain(input) => input.read(buf),
            Decoded::Gzip(input) => input.read(buf),
            Decoded::Xz(input) => input.read(buf),
        }
    }
}

impl<R: BufRead> BufRead for Decoded<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Decoded::Plain(input) => input.fill_buf(),
            Decoded::Gzip(input) => input.fill_buf(),
            Decoded::Xz(input) => input.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match self {
            Decoded::Plain(input) => input.consume(amount),
            Decoded::Gzip(input) => input.consume(amount),
            Decoded::Xz(input) => input.consume(amount),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Events,
    Finished,
    Failed,
}

/// Reads a trace one event at a time from any [`BufRead`], plain or compressed (gzip or xz).
///
/// Iterating yields `Ok(event)` for each event and ends after the `end` record; an error ends the iteration
/// too (it is yielded once, then `None`). [`TraceReader::summary`] is complete once iteration has ended
/// without an error.
///
/// ```
/// use memcarve_trace::format::{TraceHeader, TraceReader, TraceWriter};
/// use memcarve_trace::model::{Alloc, AllocationId, Event, Free};
///
/// let mut writer = TraceWriter::new(Vec::new(), "example", &TraceHeader::default())?;
/// writer.write(&Event::Alloc(Alloc::new(AllocationId(0), 4096, 256, 0)))?;
/// writer.write(&Event::Free(Free { id: AllocationId(0), time_us: None }))?;
/// let bytes = writer.finish()?;
///
/// let mut reader = TraceReader::new(bytes.as_slice(), "example")?;
/// let events = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
/// assert_eq!(events.len(), 2);
/// assert_eq!(reader.summary().peak_live_bytes, 4096);
/// # Ok::<(), memcarve_trace::TraceError>(())
/// ```
pub struct TraceReader<R> {
    input: Decoded<R>,
    file: String,
    /// Lines read so far; the number of the line in `line`.
    line_number: u64,
    /// The current line, without its line ending.
    line: Vec<u8>,
    /// `line` holds a record not yet handled (the first event, read while looking for the header's end).
    pending: bool,
    header: TraceHeader,
    live: LiveAllocations,
    phase: Phase,
}

impl TraceReader<BufReader<File>> {
    /// Opens a trace file (plain, gzip or xz) and reads its header.
    pub fn open(path: impl AsRef<Path>) -> Result<TraceReader<BufReader<File>>, TraceError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let input = File::open(path).map_err(|source| TraceError::Open { file: file.clone(), source })?;
        TraceReader::new(BufReader::new(input), file)
    }
}

impl<R: BufRead> TraceReader<R> {
    /// Reads the header of a trace from `input` (plain, gzip or xz); `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>) -> Result<TraceReader<R>, TraceError> {
        let file = file.into();
        match Decoded::new(input) {
            Ok(input) => TraceReader::from_decoded(input, file),
            Err(source) => Err(TraceError::Read { file, line: 1, source }),
        }
    }

    pub(crate) fn from_decoded(input: Decoded<R>, file: String) -> Result<TraceReader<R>, TraceError> {
        let mut reader = TraceReader {
            input,
            file,
            line_number: 0,
            line: Vec::new(),
            pending: false,
            header: TraceHeader::default(),
            live: LiveAllocations::new(),
            phase: Phase::Events,
        };
        reader.read_header()?;
        Ok(reader)
    }

    /// The trace's metadata.
    pub fn header(&self) -> &TraceHeader {
        &self.header
    }

    /// The name of the file in errors.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Counts of the events read so far.
    pub fn stats(&self) -> TraceStats {
        self.live.stats()
    }

    /// The trace's summary: the header's figures and the counts of the events read so far (complete once
    /// [`TraceReader::is_finished`]).
    pub fn summary(&self) -> TraceSummary {
        self.header.summary(&self.live.stats())
    }

    /// Whether the `end` record has been read (and nothing but comments after it).
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// The next event, or `None` after the `end` record (and after an error).
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        if self.phase != Phase::Events {
            return Ok(None);
        }
        let next = self.read_event();
        match &next {
            Ok(None) => self.phase = Phase::Finished,
            Err(_) => self.phase = Phase::Failed,
            Ok(Some(_)) => {}
        }
        next
    }

    fn read_header(&mut self) -> Result<(), TraceError> {
        if !self.read_line()? {
            return Err(TraceError::NotATrace { file: self.file.clone(), hint: " (the file is empty)" });
        }
        if self.line.as_slice() != HEADER_LINE.as_bytes() {
            return Err(self.not_a_header());
        }
        let mut source = None;
        let mut dropped_frees = None;
        let mut peak_reserved = None;
        let mut segment_ops = None;
        let mut ooms = None;
        let mut extra: Vec<(String, String)> = Vec::new();
        loop {
            if !self.read_line()? {
                return Err(TraceError::Truncated { file: self.file.clone(), line: self.line_number + 1 });
            }
            if is_blank_or_comment(&self.line) {
                continue;
            }
            let Some(rest) = self.line.strip_prefix(b"m,") else { break };
            let (key, value) =
                split_once(rest, b',').ok_or_else(|| self.malformed("metadata needs `m,KEY,VALUE`"))?;
            let key = std::str::from_utf8(key)
                .ok()
                .filter(|key| is_valid_key(key))
                .ok_or_else(|| self.malformed("a metadata key is made of a-z, 0-9, `.`, `_` and `-`"))?;
            let value = unescape(value).map_err(|reason| self.malformed(reason))?;
            let slot = match key {
                KEY_SOURCE => {
                    set_once(&mut source, value).map_err(|()| self.duplicate_key(key))?;
                    continue;
                }
                KEY_DROPPED_FREES => &mut dropped_frees,
                KEY_PEAK_RESERVED => &mut peak_reserved,
                KEY_SEGMENT_OPS => &mut segment_ops,
                KEY_OOMS => &mut ooms,
                _ if extra.iter().any(|(known, _)| known == key) => return Err(self.duplicate_key(key)),
                _ => {
                    extra.push((key.to_owned(), value));
                    continue;
                }
            };
            let number = parse_u64(value.as_bytes()).ok_or_else(|| {
                let shown = value.chars().take(32).collect::<String>();
                self.malformed(format!("metadata `{key}`: `{shown}` is not an unsigned 64-bit integer"))
            })?;
            set_once(slot, number).map_err(|()| self.duplicate_key(key))?;
        }
        self.header.source = source;
        self.header.dropped_frees = dropped_frees;
        self.header.extra = extra;
        // The line just read is the first record after the header; the event loop handles it.
        self.pending = true;
        self.header.pytorch = match (peak_reserved, segment_ops, ooms) {
            (None, None, None) => None,
            (Some(peak_reserved_bytes), Some(segment_ops), ooms) => {
                Some(PyTorchFigures { peak_reserved_bytes, segment_ops, ooms: ooms.unwrap_or(0) })
            }
            _ => {
                return Err(self.malformed(format!(
                    "the header gives some PyTorch figures but not both `{KEY_PEAK_RESERVED}` and \
                     `{KEY_SEGMENT_OPS}`"
                )));
            }
        };
        Ok(())
    }

    fn duplicate_key(&self, key: &str) -> TraceError {
        self.malformed(format!("metadata `{key}` is given twice"))
    }

    fn not_a_header(&self) -> TraceError {
        let file = self.file.clone();
        match std::str::from_utf8(&self.line) {
            Ok(line) if line.starts_with(VERSION_PREFIX) => TraceError::UnsupportedVersion {
                file,
                version: line.trim_start_matches(VERSION_PREFIX).chars().take(32).collect(),
            },
            _ if self.line.first() == Some(&PICKLE_PROTO) => TraceError::NotATrace {
                file,
                hint: "; it looks like a pickle: import PyTorch snapshots with memcarve_trace::torch",
            },
            _ => TraceError::NotATrace { file, hint: "" },
        }
    }

    fn read_event(&mut self) -> Result<Option<Event>, TraceError> {
        loop {
            if self.pending {
                self.pending = false;
            } else if !self.read_line()? {
                return Err(TraceError::Truncated { file: self.file.clone(), line: self.line_number + 1 });
            }
            if is_blank_or_comment(&self.line) {
                continue;
            }
            let (kind, rest) = split_once(&self.line, b',').unwrap_or((&self.line, b""));
            let event = match kind {
                b"a" => Event::Alloc(self.parse_alloc(rest)?),
                b"f" => Event::Free(self.parse_free(rest)?),
                b"end" => {
                    let count = self.number("event count", rest)?;
                    self.check_end(count)?;
                    return Ok(None);
                }
                b"m" => return Err(self.malformed("metadata (`m`) must come before the first event")),
                _ => {
                    let kind = String::from_utf8_lossy(kind).chars().take(32).collect::<String>();
                    return Err(self.malformed(format!("unknown record kind `{kind}`")));
                }
            };
            self.live.apply(&event).map_err(|fault| TraceError::InvalidEvent {
                file: self.file.clone(),
                line: self.line_number,
                fault,
            })?;
            return Ok(Some(event));
        }
    }

    fn parse_alloc(&self, rest: &[u8]) -> Result<Alloc, TraceError> {
        // id, size, alignment, stream, location, class, time_us, name (the rest of the line)
        let mut fields = rest.splitn(8, |&byte| byte == b',');
        let mut required = |name: &str| -> Result<u64, TraceError> {
            let field = fields.next().ok_or_else(|| {
                self.malformed(format!(
                    "an alloc record needs `a,ID,SIZE,ALIGNMENT,STREAM`; `{name}` is missing"
                ))
            })?;
            self.number(name, field)
        };
        let id = AllocationId(required("id")?);
        let size = required("size")?;
        let alignment = required("alignment")?;
        let stream = required("stream")?;
        let location = match fields.next().filter(|field| !field.is_empty()) {
            None => None,
            Some(field) => Some(
                std::str::from_utf8(field)
                    .ok()
                    .and_then(Location::from_name)
                    .ok_or_else(|| self.bad_name("location", field))?,
            ),
        };
        let class = match fields.next().filter(|field| !field.is_empty()) {
            None => None,
            Some(field) => Some(
                std::str::from_utf8(field)
                    .ok()
                    .and_then(Class::from_name)
                    .ok_or_else(|| self.bad_name("class", field))?,
            ),
        };
        let time_us = self.optional_number("time_us", fields.next())?;
        let name = match fields.next().filter(|field| !field.is_empty()) {
            None => None,
            Some(field) => Some(unescape(field).map_err(|reason| self.malformed(format!("name: {reason}")))?),
        };
        Ok(Alloc { id, size, alignment, stream, location, class, name, time_us })
    }

    fn parse_free(&self, rest: &[u8]) -> Result<Free, TraceError> {
        let mut fields = rest.splitn(3, |&byte| byte == b',');
        let id = fields.next().ok_or_else(|| self.malformed("a free record needs `f,ID`"))?;
        let id = AllocationId(self.number("id", id)?);
        let time_us = self.optional_number("time_us", fields.next())?;
        if fields.next().is_some() {
            return Err(self.malformed("a free record has at most two fields: `f,ID,TIME_US`"));
        }
        Ok(Free { id, time_us })
    }

    /// Checks the `end` record's count and that only comments follow it.
    fn check_end(&mut self, count: u64) -> Result<(), TraceError> {
        let events = self.live.stats().events;
        if count != events {
            return Err(
                self.malformed(format!("the end record counts {count} events, but the trace has {events}"))
            );
        }
        while self.read_line()? {
            if !is_blank_or_comment(&self.line) {
                return Err(self.malformed("data after the end record"));
            }
        }
        Ok(())
    }

    fn number(&self, name: &str, field: &[u8]) -> Result<u64, TraceError> {
        parse_u64(field).ok_or_else(|| {
            let shown = String::from_utf8_lossy(field).chars().take(32).collect::<String>();
            self.malformed(format!("{name}: `{shown}` is not an unsigned 64-bit integer"))
        })
    }

    fn optional_number(&self, name: &str, field: Option<&[u8]>) -> Result<Option<u64>, TraceError> {
        match field.filter(|field| !field.is_empty()) {
            None => Ok(None),
            Some(field) => self.number(name, field).map(Some),
        }
    }

    fn bad_name(&self, what: &str, field: &[u8]) -> TraceError {
        let shown = String::from_utf8_lossy(field).chars().take(32).collect::<String>();
        self.malformed(format!("{what}: `{shown}` is not a {what} name"))
    }

    fn malformed(&self, reason: impl Into<String>) -> TraceError {
        TraceError::Malformed { file: self.file.clone(), line: self.line_number, reason: reason.into() }
    }

    /// Reads the next line into `self.line` without its line ending; false at the end of the input.
    fn read_line(&mut self) -> Result<bool, TraceError> {
        self.line.clear();
        let limit = MAX_LINE_BYTES as u64 + 1;
        let read = (&mut self.input).take(limit).read_until(b'\n', &mut self.line);
        let count = read.map_err(|source| TraceError::Read {
            file: self.file.clone(),
            line: self.line_number + 1,
            source,
        })?;
        if count == 0 {
            return Ok(false);
        }
        self.line_number += 1;
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
        }
        if self.line.len() > MAX_LINE_BYTES {
            return Err(self.malformed(format!("line longer than {MAX_LINE_BYTES} bytes")));
        }
        Ok(true)
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Result<Event, TraceError>> {
        self.next_event().transpose()
    }
}

impl<R: BufRead> std::iter::FusedIterator for TraceReader<R> {}

/// Writes a trace one event at a time: the header at creation, each event as it comes, and the `end` record
/// at [`TraceWriter::finish`]. Events are checked as a reader would check them, so what it writes reads back.
///
/// A writer dropped without `finish` leaves a trace that readers reject as truncated.
pub struct TraceWriter<W: Write> {
    out: W,
    /// Lines not yet written to `out` (many small writes to a compressor are slow).
    buffer: Vec<u8>,
    file: String,
    /// Lines written so far.
    lines: u64,
    live: LiveAllocations,
}

impl TraceWriter<FileSink> {
    /// Creates a trace file and writes its header; the file is gzip-compressed if its name ends in `.gz`, and
    /// xz-compressed (preset 6) if it ends in `.xz`.
    /// Finish it with [`TraceWriter::close`].
    pub fn create(path: impl AsRef<Path>, header: &TraceHeader) -> Result<TraceWriter<FileSink>, TraceError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let file = File::create(path).map_err(|source| TraceError::Open { file: name.clone(), source })?;
        let file = BufWriter::new(file);
        let sink = match path.extension().and_then(|extension| extension.to_str()) {
            Some("gz") => FileSink::Gzip(GzEncoder::new(file, Compression::default())),
            Some("xz") => FileSink::Xz(XzEncoder::new(file, 6)),
            _ => FileSink::Plain(file),
        };
        TraceWriter::new(sink, name, header)
    }

    /// Writes the `end` record and closes the file (finishing the gzip or xz stream if there is one).
    pub fn close(self) -> Result<(), TraceError> {
        let file = self.file.clone();
        let sink = self.finish()?;
        let closed = match sink {
            FileSink::Plain(mut out) => out.flush(),
            FileSink::Gzip(encoder) => encoder.finish().and_then(|mut out| out.flush()),
            FileSink::Xz(encoder) => encoder.finish().and_then(|mut out| out.flush()),
        };
        closed.map_err(|source| TraceError::Write { file, source })
    }
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace on `out` by writing its header; `file` names the output in errors.
    pub fn new(out: W, file: impl Into<String>, header: &TraceHeader) -> Result<TraceWriter<W>, TraceError> {
        let mut writer = TraceWriter {
            out,
            buffer: Vec::new(),
            file: file.into(),
            lines: 0,
            live: LiveAllocations::new(),
        };
        writer.write_header(header)?;
        Ok(writer)
    }

    fn write_header(&mut self, header: &TraceHeader) -> Result<(), TraceError> {
        for (key, _) in &header.extra {
            if !is_valid_key(key) || KNOWN_KEYS.contains(&key.as_str()) {
                return Err(self.invalid_input(format!("`{key}` cannot be an extra metadata key")));
            }
        }
        let mut text = format!("{HEADER_LINE}\n");
        if let Some(source) = &header.source {
            push_metadata(&mut text, KEY_SOURCE, source);
        }
        if let Some(pytorch) = &header.pytorch {
            push_metadata(&mut text, KEY_PEAK_RESERVED, &pytorch.peak_reserved_bytes.to_string());
            push_metadata(&mut text, KEY_SEGMENT_OPS, &pytorch.segment_ops.to_string());
            push_metadata(&mut text, KEY_OOMS, &pytorch.ooms.to_string());
        }
        if let Some(dropped) = header.dropped_frees {
            push_metadata(&mut text, KEY_DROPPED_FREES, &dropped.to_string());
        }
        for (key, value) in &header.extra {
            push_metadata(&mut text, key, value);
        }
        self.lines += text.bytes().filter(|&byte| byte == b'\n').count() as u64;
        self.buffer.extend_from_slice(text.as_bytes());
        self.drain()
    }

    /// Writes one event.
    pub fn write(&mut self, event: &Event) -> Result<(), TraceError> {
        self.live.apply(event).map_err(|fault| TraceError::InvalidEvent {
            file: self.file.clone(),
            line: self.lines + 1,
            fault,
        })?;
        // Writing to a Vec cannot fail.
        let _ = match event {
            Event::Alloc(alloc) => write_alloc(&mut self.buffer, alloc),
            Event::Free(free) => match free.time_us {
                Some(time_us) => writeln!(self.buffer, "f,{},{time_us}", free.id),
                None => writeln!(self.buffer, "f,{}", free.id),
            },
        };
        self.lines += 1;
        if self.buffer.len() >= WRITE_BUFFER_BYTES { self.drain() } else { Ok(()) }
    }

    /// Counts of the events written so far.
    pub fn stats(&self) -> TraceStats {
        self.live.stats()
    }

    /// Writes the `end` record, flushes, and hands back the output (finish a compressor yourself).
    pub fn finish(mut self) -> Result<W, TraceError> {
        let end = format!("end,{}\n", self.live.stats().events);
        self.buffer.extend_from_slice(end.as_bytes());
        self.drain()?;
        self.out.flush().map_err(|source| TraceError::Write { file: self.file.clone(), source })?;
        Ok(self.out)
    }

    /// Writes the buffered lines to `out`.
    fn drain(&mut self) -> Result<(), TraceError> {
        let written = self.out.write_all(&self.buffer);
        self.buffer.clear();
        written.map_err(|source| TraceError::Write { file: self.file.clone(), source })
    }

    fn invalid_input(&self, reason: String) -> TraceError {
        TraceError::Write {
            file: self.file.clone(),
            source: io::Error::new(io::ErrorKind::InvalidInput, reason),
        }
    }
}

fn write_alloc(out: &mut impl Write, alloc: &Alloc) -> io::Result<()> {
    write!(out, "a,{},{},{},{}", alloc.id, alloc.size, alloc.alignment, alloc.stream)?;
    let name = alloc.name.as_deref().filter(|name| !name.is_empty());
    // Trailing empty fields are left out.
    let present = [alloc.location.is_some(), alloc.class.is_some(), alloc.time_us.is_some(), name.is_some()];
    let fields = present.iter().rposition(|&present| present).map_or(0, |last| last + 1);
    if fields >= 1 {
        write!(out, ",{}", alloc.location.map_or("", Location::as_str))?;
    }
    if fields >= 2 {
        write!(out, ",{}", alloc.class.map_or("", Class::as_str))?;
    }
    if fields >= 3 {
        match alloc.time_us {
            Some(time_us) => write!(out, ",{time_us}")?,
            None => write!(out, ",")?,
        }
    }
    if let Some(name) = name {
        write!(out, ",{}", escape(name))?;
    }
    writeln!(out)
}

/// The output of [`TraceWriter::create`]: a file, plain, gzip- or xz-compressed.
pub enum FileSink {
    /// A plain text file.
    Plain(BufWriter<File>),
    /// A gzip-compressed file.
    Gzip(GzEncoder<BufWriter<File>>),
    /// An xz-compressed file.
    Xz(XzEncoder<BufWriter<File>>),
}

impl Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            FileSink::Plain(out) => out.write(buf),
            FileSink::Gzip(out) => out.write(buf),
            FileSink::Xz(out) => out.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            FileSink::Plain(out) => out.flush(),
            FileSink::Gzip(out) => out.flush(),
            FileSink::Xz(out) => out.flush(),
        }
    }
}

fn push_metadata(text: &mut String, key: &str, value: &str) {
    text.push_str("m,");
    text.push_str(key);
    text.push(',');
    text.push_str(&escape(value));
    text.push('\n');
}

/// Sets `slot` unless it is already set.
fn set_once<T>(slot: &mut Option<T>, value: T) -> Result<(), ()> {
    if slot.is_some() {
        return Err(());
    }
    *slot = Some(value);
    Ok(())
}

fn is_blank_or_comment(line: &[u8]) -> bool {
    line.iter().all(|byte| byte.is_ascii_whitespace()) || line.first() == Some(&b'#')
}

fn is_valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"._-".contains(&byte))
}

fn split_once(bytes: &[u8], separator: u8) -> Option<(&[u8], &[u8])> {
    let at = bytes.iter().position(|&byte| byte == separator)?;
    Some((bytes.get(..at)?, bytes.get(at + 1..)?))
}

/// A decimal `u64`: digits only, no sign, no spaces.
fn parse_u64(field: &[u8]) -> Option<u64> {
    if field.is_empty() {
        return None;
    }
    field.iter().try_fold(0u64, |value, &byte| {
        let digit = byte.checked_sub(b'0').filter(|&digit| digit <= 9)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// Escapes text for the last field of a line: `\` as `\\`, line feed as `\n`, carriage return as `\r`.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '\\' => escaped.push_str("\\\\"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            other => escaped.push(other),
        }
    }
    escaped
}

fn unescape(field: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(field).map_err(|_| "text is not valid UTF-8".to_owned())?;
    if !text.contains('\\') {
        return Ok(text.to_owned());
    }
    let mut unescaped = String::with_capacity(text.len());
    let mut characters = text.chars();
    while let Some(character) = characters.next() {
        if character != '\\' {
            unescaped.push(character);
            continue;
        }
        match characters.next() {
            Some('\\') => unescaped.push('\\'),
            Some('n') => unescaped.push('\n'),
            Some('r') => unescaped.push('\r'),
            Some(other) => return Err(format!("unknown escape `\\{other}` (known: `\\\\`, `\\n`, `\\r`)")),
            None => return Err("text ends with a lone `\\`".to_owned()),
        }
    }
    Ok(unescaped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_strictly() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        for bad in [&b""[..], b"-1", b"+1", b" 1", b"1 ", b"0x10", b"1.5"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn escapes_round_trip() {
        for text in ["plain", "a,b", "back\\slash", "two\nlines\r", "\\n literally", "ünïcödé"] {
            assert_eq!(unescape(escape(text).as_bytes()).as_deref(), Ok(text));
            assert!(!escape(text).contains('\n'));
        }
        assert!(unescape(b"bad \\t").is_err());
        assert!(unescape(b"ends \\").is_err());
        assert!(unescape(b"\xff").is_err());
    }

    #[test]
    fn trailing_empty_fields_are_left_out() {
        let mut alloc = Alloc::new(AllocationId(7), 100, 16, 2);
        let line = |alloc: &Alloc| {
            let mut out = Vec::new();
            write_alloc(&mut out, alloc).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(line(&alloc), "a,7,100,16,2\n");
        alloc.time_us = Some(5);
        assert_eq!(line(&alloc), "a,7,100,16,2,,,5\n");
        alloc.name = Some(String::new());
        assert_eq!(line(&alloc), "a,7,100,16,2,,,5\n");
        alloc.name = Some("x,y".into());
        alloc.class = Some(Class::OptimalImage);
        assert_eq!(line(&alloc), "a,7,100,16,2,,optimal-image,5,x,y\n");
    }
}
