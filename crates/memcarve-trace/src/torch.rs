//! The PyTorch snapshot importer: turns a `torch.cuda.memory._dump_snapshot` pickle (plain, gzip or xz,
//! builtin types only) into trace events plus PyTorch's own figures.
//!
//! It walks `device_traces`, one list per device, devices in index order (their events are concatenated, as
//! if one device ran them all, and addresses are told apart per device):
//! - `alloc` opens an allocation of `size` requested bytes at `addr`, with a fresh [`AllocationId`] (PyTorch
//!   reuses addresses, never ids);
//! - `free_completed` at the same device and `addr` closes it; one with no open allocation there predates
//!   the recording (the trace buffer dropped its `alloc`) and is dropped and counted;
//! - `free_requested`, `snapshot` and `user_defined` entries are skipped; `oom` entries are counted;
//! - `segment_alloc`/`segment_map` add `size` to PyTorch's reserved bytes and `segment_free`/`segment_unmap`
//!   subtract it; the peak of that running sum is PyTorch's peak reserved, and these four actions are its
//!   segment operations. Each change is also kept as a [`ReservedStep`], so that PyTorch's reserved bytes can
//!   be drawn beside a replay, event by event.
//!
//! Every allocation gets alignment [`DEFAULT_ALIGNMENT`], location `gpu-only` and class `buffer` (CUDA
//! device memory holding tensors); `stream` and `time_us` come from the entry, and a non-empty
//! `user_metadata` becomes the allocation's name.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde_pickle::{DeOptions, HashableValue, Value};

use crate::error::TraceError;
use crate::format::{Decoded, TraceHeader, TraceWriter};
use crate::model::{
    Alloc, AllocationId, Class, Event, Free, LiveAllocations, Location, PyTorchFigures, TraceSummary,
};
use crate::pickle_scan;

/// The alignment given to imported allocations: 512 bytes. PyTorch's CUDA caching allocator rounds every
/// block to `kMinBlockSize` = 512 bytes and carves blocks from segments aligned to at least that, so every
/// address it hands out is 512-aligned (true of every `alloc` in the shipped traces), and code written
/// against it may rely on that alignment and no more.
pub const DEFAULT_ALIGNMENT: u64 = 512;

/// A snapshot turned into a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedTrace {
    /// The file it came from (or the name given to [`import_bytes`]).
    pub file: String,
    /// The events, in order.
    pub events: Vec<Event>,
    /// Counts, peaks and PyTorch's figures (always `Some` here).
    pub summary: TraceSummary,
    /// The indices of the devices whose trace had entries, in order.
    pub devices: Vec<usize>,
    /// Trace entries read, of every action.
    pub entries: u64,
    /// PyTorch's reserved bytes over the trace: one step per segment operation, in order, several with the
    /// same event index where segments changed between two events (see [`ImportedTrace::pytorch_reserved_at`]).
    pub reserved_steps: Vec<ReservedStep>,
}

/// PyTorch's reserved bytes after one segment operation of a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReservedStep {
    /// The index of the first event this value applies to: the number of events imported before the segment
    /// operation (a segment is reserved just before the allocation that needed it).
    pub event: u64,
    /// PyTorch's reserved bytes from then on (0 where the trace released segments reserved before it began).
    pub reserved_bytes: u64,
}

impl ImportedTrace {
    /// PyTorch's reserved bytes while event `event` (an index into [`ImportedTrace::events`]) ran: the value of
    /// the last step at or before it, 0 before the first. For a walk over every event, step through
    /// [`ImportedTrace::reserved_steps`] instead (it also has the values between two events).
    pub fn pytorch_reserved_at(&self, event: u64) -> u64 {
        let after = self.reserved_steps.partition_point(|step| step.event <= event);
        after.checked_sub(1).map_or(0, |index| self.reserved_steps[index].reserved_bytes)
    }

    /// The header a trace file of this import carries: its source, the dropped frees and PyTorch's figures.
    pub fn header(&self) -> TraceHeader {
        let name = Path::new(&self.file)
            .file_name()
            .map_or(Cow::Borrowed(self.file.as_str()), |name| name.to_string_lossy());
        TraceHeader {
            source: Some(format!("pytorch snapshot {name}")),
            dropped_frees: Some(self.summary.dropped_frees),
            pytorch: self.summary.pytorch,
            extra: Vec::new(),
        }
    }

    /// Writes the whole trace (header, events, end record) to `out`, named `name` in errors; returns `out`.
    pub fn write<W: Write>(&self, out: W, name: impl Into<String>) -> Result<W, TraceError> {
        let mut writer = TraceWriter::new(out, name, &self.header())?;
        for event in &self.events {
            writer.write(event)?;
        }
        writer.finish()
    }
}

/// Imports a snapshot file, plain, gzip- or xz-compressed.
pub fn import(path: impl AsRef<Path>) -> Result<ImportedTrace, TraceError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| TraceError::Open { file: file.clone(), source })?;
    import_bytes(&bytes, &file)
}

/// Imports a snapshot from memory (plain, gzip- or xz-compressed); `file` names it in errors.
pub fn import_bytes(bytes: &[u8], file: &str) -> Result<ImportedTrace, TraceError> {
    // Reading a slice cannot fail; making an xz decoder can, if its state cannot be allocated.
    let mut input =
        Decoded::new(bytes).map_err(|source| TraceError::Open { file: file.to_owned(), source })?;
    if let Decoded::Plain(_) = input {
        return import_pickle(bytes, file);
    }
    import_pickle(&input.read_all(file)?, file)
}

/// Imports the snapshot file `input` and writes it to `output` in the trace format (header with PyTorch's
/// figures, events, end record); returns `output`, to finish a compressor on it if there is one.
pub fn convert<W: Write>(input: impl AsRef<Path>, output: W) -> Result<W, TraceError> {
    import(input)?.write(output, "output")
}

/// Imports the snapshot file `input` and writes it as the trace file `output` (gzip-compressed if its name
/// ends in `.gz`); returns the trace's summary.
pub fn convert_to_file(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
) -> Result<TraceSummary, TraceError> {
    let imported = import(input)?;
    let mut writer = TraceWriter::create(output, &imported.header())?;
    for event in &imported.events {
        writer.write(event)?;
    }
    writer.close()?;
    Ok(imported.summary)
}

/// Imports an already decompressed pickle.
pub(crate) fn import_pickle(pickle: &[u8], file: &str) -> Result<ImportedTrace, TraceError> {
    pickle_scan::scan(pickle).map_err(|error| TraceError::Pickle {
        file: file.to_owned(),
        offset: Some(error.offset),
        reason: error.reason,
    })?;
    let value = serde_pickle::value_from_slice(pickle, DeOptions::new()).map_err(|error| {
        let (offset, reason) = match error {
            serde_pickle::Error::Eval(code, offset) => (Some(offset as u64), code.to_string()),
            serde_pickle::Error::Syntax(code) => (None, code.to_string()),
            serde_pickle::Error::Io(error) => (None, error.to_string()),
        };
        TraceError::Pickle { file: file.to_owned(), offset, reason }
    })?;
    Importer::new(file).run(&value)
}

/// What a snapshot's trace entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Alloc,
    FreeCompleted,
    Reserve,
    Release,
    Oom,
    Skip,
}

impl Action {
    fn from_name(name: &str) -> Option<Action> {
        Some(match name {
            "alloc" => Action::Alloc,
            "free_completed" => Action::FreeCompleted,
            "segment_alloc" | "segment_map" => Action::Reserve,
            "segment_free" | "segment_unmap" => Action::Release,
            "oom" => Action::Oom,
            "free_requested" | "snapshot" | "user_defined" => Action::Skip,
            _ => return None,
        })
    }
}

/// The fields of a trace entry the importer reads.
#[derive(Default)]
struct Entry<'a> {
    action: Option<&'a Value>,
    addr: Option<&'a Value>,
    size: Option<&'a Value>,
    stream: Option<&'a Value>,
    time_us: Option<&'a Value>,
    user_metadata: Option<&'a Value>,
}

struct Importer<'a> {
    file: &'a str,
    events: Vec<Event>,
    live: LiveAllocations,
    /// Open allocations by (device, address): addresses of different devices are different memory.
    open: HashMap<(usize, u64), AllocationId>,
    next_id: u64,
    dropped_frees: u64,
    /// PyTorch's reserved bytes now; signed, as a trace may release segments reserved before it began.
    reserved: i128,
    peak_reserved: u64,
    segment_ops: u64,
    ooms: u64,
    devices: Vec<usize>,
    entries: u64,
    reserved_steps: Vec<ReservedStep>,
}

impl<'a> Importer<'a> {
    fn new(file: &'a str) -> Importer<'a> {
        Importer {
            file,
            events: Vec::new(),
            live: LiveAllocations::new(),
            open: HashMap::new(),
            next_id: 0,
            dropped_frees: 0,
            reserved: 0,
            peak_reserved: 0,
            segment_ops: 0,
            ooms: 0,
            devices: Vec::new(),
            entries: 0,
            reserved_steps: Vec::new(),
        }
    }

    fn not_snapshot(&self, reason: String) -> TraceError {
        TraceError::NotSnapshot { file: self.file.to_owned(), reason }
    }

    fn run(mut self, root: &Value) -> Result<ImportedTrace, TraceError> {
        let Value::Dict(root) = root else {
            return Err(self.not_snapshot(format!("the pickle holds {}, not a dict", kind(root))));
        };
        let traces = root
            .get(&HashableValue::String("device_traces".to_owned()))
            .ok_or_else(|| self.not_snapshot("the dict has no `device_traces`".to_owned()))?;
        let Value::List(devices) = traces else {
            return Err(self.not_snapshot(format!("`device_traces` is {}, not a list", kind(traces))));
        };
        for (device, entries) in devices.iter().enumerate() {
            let Value::List(entries) = entries else {
                return Err(
                    self.not_snapshot(format!("`device_traces[{device}]` is {}, not a list", kind(entries)))
                );
            };
            if !entries.is_empty() {
                self.devices.push(device);
            }
            for (index, entry) in entries.iter().enumerate() {
                self.entry(device, entry).map_err(|reason| TraceError::Entry {
                    file: self.file.to_owned(),
                    device,
                    entry: index,
                    reason,
                })?;
                self.entries += 1;
            }
        }
        let stats = self.live.stats();
        let summary = TraceSummary {
            allocations: stats.allocations,
            frees: stats.frees,
            dropped_frees: self.dropped_frees,
            live_at_end: stats.live,
            peak_live_bytes: stats.peak_live_bytes,
            pytorch: Some(PyTorchFigures {
                peak_reserved_bytes: self.peak_reserved,
                segment_ops: self.segment_ops,
                ooms: self.ooms,
            }),
        };
        Ok(ImportedTrace {
            file: self.file.to_owned(),
            events: self.events,
            summary,
            devices: self.devices,
            entries: self.entries,
            reserved_steps: self.reserved_steps,
        })
    }

    /// Handles one entry of `device`'s trace.
    fn entry(&mut self, device: usize, entry: &Value) -> Result<(), String> {
        let Value::Dict(fields) = entry else {
            return Err(format!("the entry is {}, not a dict", kind(entry)));
        };
        let mut entry = Entry::default();
        for (key, value) in fields {
            let HashableValue::String(key) = key else { continue };
            let slot = match key.as_str() {
                "action" => &mut entry.action,
                "addr" => &mut entry.addr,
                "size" => &mut entry.size,
                "stream" => &mut entry.stream,
                "time_us" => &mut entry.time_us,
                "user_metadata" => &mut entry.user_metadata,
                _ => continue,
            };
            *slot = Some(value);
        }
        let action = match entry.action {
            Some(Value::String(action)) => {
                Action::from_name(action).ok_or_else(|| format!("unknown action `{}`", shorten(action)))?
            }
            Some(other) => return Err(format!("`action` is {}, not a string", kind(other))),
            None => return Err("the entry has no `action`".to_owned()),
        };
        match action {
            Action::Alloc => {
                let addr = required_u64(entry.addr, "addr")?;
                let size = required_u64(entry.size, "size")?;
                if size == 0 {
                    return Err("an alloc of 0 bytes".to_owned());
                }
                let id = AllocationId(self.next_id);
                if self.open.insert((device, addr), id).is_some() {
                    return Err(format!(
                        "alloc at {addr:#x}, where an allocation is still open (no free_completed in between)"
                    ));
                }
                self.next_id += 1;
                let name = match entry.user_metadata {
                    Some(Value::String(name)) if !name.is_empty() => Some(name.clone()),
                    _ => None,
                };
                let alloc = Alloc {
                    id,
                    size,
                    alignment: DEFAULT_ALIGNMENT,
                    stream: optional_u64(entry.stream, "stream")?.unwrap_or(0),
                    location: Some(Location::GpuOnly),
                    class: Some(Class::Buffer),
                    name,
                    time_us: optional_u64(entry.time_us, "time_us")?,
                };
                self.push(Event::Alloc(alloc))?;
            }
            Action::FreeCompleted => {
                let addr = required_u64(entry.addr, "addr")?;
                let time_us = optional_u64(entry.time_us, "time_us")?;
                match self.open.remove(&(device, addr)) {
                    Some(id) => self.push(Event::Free(Free { id, time_us }))?,
                    None => self.dropped_frees += 1,
                }
            }
            Action::Reserve | Action::Release => {
                let size = i128::from(required_u64(entry.size, "size")?);
                self.reserved += if action == Action::Reserve { size } else { -size };
                let reserved_bytes = u64::try_from(self.reserved).unwrap_or(0);
                self.peak_reserved = self.peak_reserved.max(reserved_bytes);
                self.segment_ops += 1;
                self.reserved_steps.push(ReservedStep { event: self.events.len() as u64, reserved_bytes });
            }
            Action::Oom => self.ooms += 1,
            Action::Skip => {}
        }
        Ok(())
    }

    fn push(&mut self, event: Event) -> Result<(), String> {
        // Fresh ids and the open-address map keep events consistent; checked all the same.
        self.live.apply(&event).map_err(|fault| fault.to_string())?;
        self.events.push(event);
        Ok(())
    }
}

fn required_u64(value: Option<&Value>, name: &str) -> Result<u64, String> {
    optional_u64(value, name)?.ok_or_else(|| format!("the entry has no `{name}`"))
}

/// A non-negative integer field; `None` when absent or Python's `None`.
fn optional_u64(value: Option<&Value>, name: &str) -> Result<Option<u64>, String> {
    match value {
        None | Some(Value::None) => Ok(None),
        Some(Value::I64(number)) => {
            u64::try_from(*number).map(Some).map_err(|_| format!("`{name}` is negative ({number})"))
        }
        Some(Value::Int(number)) => {
            number.to_string().parse().map(Some).map_err(|_| format!("`{name}` does not fit in 64 bits"))
        }
        Some(other) => Err(format!("`{name}` is {}, not an integer", kind(other))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::None => "None",
        Value::Bool(_) => "a bool",
        Value::I64(_) | Value::Int(_) => "an integer",
        Value::F64(_) => "a float",
        Value::Bytes(_) => "bytes",
        Value::String(_) => "a string",
        Value::List(_) => "a list",
        Value::Tuple(_) => "a tuple",
        Value::Set(_) => "a set",
        Value::FrozenSet(_) => "a frozenset",
        Value::Dict(_) => "a dict",
    }
}

fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn shipped(name: &str) -> ImportedTrace {
        import(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces").join(name)).unwrap()
    }

    /// The steps walk PyTorch's reserved bytes: one per segment operation, in event order, peaking at the
    /// summary's peak.
    #[test]
    fn reserved_steps_follow_the_segment_operations() {
        for name in ["resnet50_train.pickle.gz", "gpt2_train.pickle.gz", "tiny_expandable_segments.pickle"] {
            let trace = shipped(name);
            let pytorch = trace.summary.pytorch.unwrap();
            assert_eq!(trace.reserved_steps.len() as u64, pytorch.segment_ops, "{name}");
            assert!(trace.reserved_steps.windows(2).all(|w| w[0].event <= w[1].event), "{name}");
            assert!(trace.reserved_steps.iter().all(|step| step.event <= trace.events.len() as u64));
            let peak = trace.reserved_steps.iter().map(|step| step.reserved_bytes).max();
            assert_eq!(peak, Some(pytorch.peak_reserved_bytes), "{name}");
        }
    }

    #[test]
    fn reserved_at_an_event_is_the_last_step_before_it() {
        let trace = shipped("tiny_expandable_segments.pickle");
        assert_eq!(trace.pytorch_reserved_at(0), {
            trace.reserved_steps.iter().take_while(|s| s.event == 0).last().map_or(0, |s| s.reserved_bytes)
        });
        for step in &trace.reserved_steps {
            let last_at_event =
                trace.reserved_steps.iter().rev().find(|s| s.event <= step.event).unwrap().reserved_bytes;
            assert_eq!(trace.pytorch_reserved_at(step.event), last_at_event);
        }
        let end = trace.reserved_steps.last().unwrap().reserved_bytes;
        assert_eq!(trace.pytorch_reserved_at(u64::MAX), end);
    }
}
