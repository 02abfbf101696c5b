//! The one error type of this crate. Every variant names the file (or the name the caller gave a byte
//! source) and, where the input is at fault, the position: a line of a trace, a byte offset of a pickle or of
//! decompressed data, or a device and entry index of a snapshot. Where an I/O or decompression error is the
//! cause, it is the variant's [`std::error::Error::source`] and not repeated in the message, so that printing the
//! chain (as `anyhow`'s `{:#}` does) says it once.

use std::io;

use crate::model::EventFault;

/// What went wrong reading, importing or writing a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{file}: cannot open or read it")]
    Open {
        /// The file.
        file: String,
        /// What the operating system said.
        #[source]
        source: io::Error,
    },
    /// Reading a trace failed part-way (an I/O error, or compressed data that is corrupt or cut short).
    #[error("{file}: line {line}: read failed")]
    Read {
        /// The file.
        file: String,
        /// The line (1-based) being read.
        line: u64,
        /// The I/O or decompression error.
        #[source]
        source: io::Error,
    },
    /// Compressed data is corrupt or cut short (whole-file reads, as of a snapshot).
    #[error("{file}: {format} data is corrupt or truncated after {offset} decompressed bytes")]
    Decompress {
        /// The file.
        file: String,
        /// The compression: "gzip" or "xz".
        format: &'static str,
        /// Decompressed bytes produced before the failure.
        offset: u64,
        /// The decompression error.
        #[source]
        source: io::Error,
    },
    /// The file is not a pickle this importer can read: malformed, truncated, or using more than builtin
    /// types.
    #[error("{file}: bad pickle{}: {reason}", at_offset(*.offset))]
    Pickle {
        /// The file.
        file: String,
        /// Byte offset in the (decompressed) pickle where the problem was found, when known (errors found
        /// while converting decoded values have none).
        offset: Option<u64>,
        /// What is wrong.
        reason: String,
    },
    /// The pickle is readable but not a PyTorch memory snapshot.
    #[error("{file}: not a PyTorch memory snapshot: {reason}")]
    NotSnapshot {
        /// The file.
        file: String,
        /// What is missing or of the wrong type.
        reason: String,
    },
    /// A snapshot's trace entry is malformed or inconsistent.
    #[error("{file}: device_traces[{device}][{entry}]: {reason}")]
    Entry {
        /// The file.
        file: String,
        /// Device index in `device_traces`.
        device: usize,
        /// Entry index (0-based) in that device's list.
        entry: usize,
        /// What is wrong.
        reason: String,
    },
    /// The file does not start with the trace format's header line.
    #[error("{file}: not a memcarve trace (the first line is not `# memcarve-trace v1`){hint}")]
    NotATrace {
        /// The file.
        file: String,
        /// A hint at what the file seems to be instead (may be empty).
        hint: &'static str,
    },
    /// The trace is of a version of the format this library does not read.
    #[error("{file}: trace format version {version} is not supported (this library reads v1)")]
    UnsupportedVersion {
        /// The file.
        file: String,
        /// The version the header names.
        version: String,
    },
    /// A line of a trace is malformed.
    #[error("{file}: line {line}: {reason}")]
    Malformed {
        /// The file.
        file: String,
        /// The line (1-based).
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// A well-formed event cannot follow the events before it (a free of an id that is not live, ...).
    #[error("{file}: line {line}: {fault}")]
    InvalidEvent {
        /// The file.
        file: String,
        /// The line (1-based) of the event; for a writer, the line it would have had.
        line: u64,
        /// What is wrong.
        fault: EventFault,
    },
    /// The trace ends without its `end` record: it was cut short.
    #[error("{file}: line {line}: the trace ends without its `end` record (truncated?)")]
    Truncated {
        /// The file.
        file: String,
        /// The line (1-based) where the data ended.
        line: u64,
    },
    /// Writing a trace failed.
    #[error("{file}: write failed")]
    Write {
        /// The file.
        file: String,
        /// What the writer said.
        #[source]
        source: io::Error,
    },
}

fn at_offset(offset: Option<u64>) -> String {
    offset.map(|offset| format!(" at byte {offset}")).unwrap_or_default()
}

impl TraceError {
    /// The file (or source name) the error is about.
    pub fn file(&self) -> &str {
        match self {
            TraceError::Open { file, .. }
            | TraceError::Read { file, .. }
            | TraceError::Decompress { file, .. }
            | TraceError::Pickle { file, .. }
            | TraceError::NotSnapshot { file, .. }
            | TraceError::Entry { file, .. }
            | TraceError::NotATrace { file, .. }
            | TraceError::UnsupportedVersion { file, .. }
            | TraceError::Malformed { file, .. }
            | TraceError::InvalidEvent { file, .. }
            | TraceError::Truncated { file, .. }
            | TraceError::Write { file, .. } => file,
        }
    }
}
