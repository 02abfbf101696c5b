//! memcarve-trace: allocation traces for memcarve.
//!
//! - [`model`]: the events of a trace ([`Event`]: allocations and frees) and the figures beside them
//!   ([`TraceSummary`], with PyTorch's own in [`PyTorchFigures`]).
//! - [`format`](mod@format): the memcarve trace format (docs/TRACE_FORMAT.md), a versioned line-based text format, plain
//!   or compressed (gzip or xz), with a streaming [`TraceReader`] and [`TraceWriter`].
//! - [`torch`]: the importer of PyTorch CUDA caching-allocator snapshots (`torch.cuda.memory._dump_snapshot`).
//! - [`open`]: either kind of file, told apart by its content, as one stream of events.
//!
//! ```no_run
//! let mut trace = memcarve_trace::open("traces/resnet50_train.pickle.gz")?;
//! for event in trace.by_ref() {
//!     let event = event?;
//!     // hand it to an allocator ...
//! #   let _ = event;
//! }
//! let summary = trace.summary();
//! println!("{} allocations, peak live {} bytes", summary.allocations, summary.peak_live_bytes);
//! # Ok::<(), memcarve_trace::TraceError>(())
//! ```
#![forbid(unsafe_code)]

mod error;
pub mod format;
pub mod model;
mod pickle_scan;
pub mod replay;
pub mod torch;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

pub use error::TraceError;
pub use format::{TraceHeader, TraceReader, TraceWriter};
pub use model::{
    Alloc, AllocationId, Class, Event, EventFault, Free, LiveAllocations, Location, PyTorchFigures,
    TraceStats, TraceSummary,
};
pub use torch::ImportedTrace;

use format::{Decoded, PICKLE_PROTO};

/// What kind of file [`open`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// A PyTorch memory snapshot (a pickle), imported whole.
    PyTorchSnapshot,
    /// A memcarve trace, streamed.
    Trace,
}

enum Source {
    Snapshot { summary: TraceSummary, events: std::vec::IntoIter<Event> },
    Trace(Box<TraceReader<BufReader<File>>>),
}

/// A trace file opened by [`open`]: an iterator over its events, whichever its format.
///
/// The iteration ends after the last event or at the first error (yielded once).
pub struct OpenTrace {
    file: String,
    source: Source,
}

impl OpenTrace {
    /// What kind of file it is.
    pub fn kind(&self) -> TraceKind {
        match self.source {
            Source::Snapshot { .. } => TraceKind::PyTorchSnapshot,
            Source::Trace(_) => TraceKind::Trace,
        }
    }

    /// The file, as named in errors.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The trace's summary. For a snapshot it is complete at once; for a memcarve trace its counts cover the
    /// events read so far, and it is complete once the iteration has ended without an error.
    pub fn summary(&self) -> TraceSummary {
        match &self.source {
            Source::Snapshot { summary, .. } => *summary,
            Source::Trace(reader) => reader.summary(),
        }
    }
}

impl Iterator for OpenTrace {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Result<Event, TraceError>> {
        match &mut self.source {
            Source::Snapshot { events, .. } => events.next().map(Ok),
            Source::Trace(reader) => reader.next(),
        }
    }
}

/// Whether the file holds a PyTorch snapshot (a pickle; plain, gzip or xz) rather than a memcarve trace, from its
/// first decompressed byte. Compressed data that cannot be read says no: the trace reader then names what is wrong.
pub fn is_snapshot(path: impl AsRef<Path>) -> Result<bool, TraceError> {
    let (_, mut input) = open_decoded(path.as_ref())?;
    Ok(matches!(input.fill_buf(), Ok(bytes) if bytes.first() == Some(&PICKLE_PROTO)))
}

/// The file at `path` with its compression undone, and its name for errors.
fn open_decoded(path: &Path) -> Result<(String, Decoded<BufReader<File>>), TraceError> {
    let file = path.display().to_string();
    let input = File::open(path).map_err(|source| TraceError::Open { file: file.clone(), source })?;
    let input = Decoded::new(BufReader::new(input))
        .map_err(|source| TraceError::Open { file: file.clone(), source })?;
    Ok((file, input))
}

/// Opens a trace file of either kind, plain or compressed (gzip or xz): a PyTorch snapshot (a pickle) is imported
/// whole, a memcarve trace is streamed.
pub fn open(path: impl AsRef<Path>) -> Result<OpenTrace, TraceError> {
    let (file, mut input) = open_decoded(path.as_ref())?;
    let first = match input.fill_buf() {
        Ok(bytes) => bytes.first().copied(),
        Err(source) => return Err(input.read_error(file, 0, source)),
    };
    if first == Some(PICKLE_PROTO) {
        let pickle = input.read_all(&file)?;
        let imported = torch::import_pickle(&pickle, &file)?;
        let source = Source::Snapshot { summary: imported.summary, events: imported.events.into_iter() };
        return Ok(OpenTrace { file, source });
    }
    let reader = TraceReader::from_decoded(input, file.clone())?;
    Ok(OpenTrace { file, source: Source::Trace(Box::new(reader)) })
}
