//! A structural pre-check of a pickle before serde-pickle decodes it.
//!
//! serde-pickle decodes memo references by copying, recursively, so a few hundred crafted bytes can expand
//! into exponentially many values or nest deep enough to overflow the stack. This scan runs the pickle
//! machine on shapes only (which container holds which, through which memo entry), in time and memory
//! linear in the input, and rejects what real `torch.cuda.memory._snapshot()` pickles never contain:
//! non-builtin types (globals, reductions, objects), sets (serde-pickle sorts their items with an order
//! that NaN and mixed numbers break, which can panic), `DUP`, re-memoizing a memo reference, recursive
//! structures, nesting deeper than [`MAX_DEPTH`], and a decoded size out of proportion to the input. It also
//! finds where a truncated pickle ends, as a byte offset.

use std::collections::HashMap;

/// The deepest nesting of containers accepted (a snapshot nests 8 deep at most).
pub(crate) const MAX_DEPTH: u32 = 100;

/// The most marks open at once (Python's pickler opens one per container being filled).
const MAX_OPEN_MARKS: usize = 256;

/// Decoded values allowed per input byte, on top of [`BASE_VALUES`]. Real snapshots decode to fewer than 4
/// values per byte even when stack frames share memoized dictionaries.
const VALUES_PER_BYTE: u64 = 32;
const BASE_VALUES: u64 = 1 << 20;

/// Why a pickle was rejected, and at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanError {
    /// Byte offset of the opcode at fault (the input length when the pickle is cut short).
    pub(crate) offset: u64,
    /// What is wrong.
    pub(crate) reason: String,
}

/// A value on the pickle machine's stack, by shape only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    /// A number, string, bytes, bool or None.
    Scalar,
    /// A container: index into `Machine::containers`.
    Container(usize),
    /// A memo reference, resolved when serde-pickle converts the value (after the whole pickle is read).
    Memo(u32),
}

/// The memo: ids written in sequence (all of them, in pickles Python writes) in a vector, others in a map.
#[derive(Default)]
struct Memo {
    dense: Vec<Option<Item>>,
    sparse: HashMap<u32, Item>,
    /// Distinct ids written (serde-pickle numbers `MEMOIZE` entries by this count).
    len: usize,
}

impl Memo {
    fn get(&self, id: u32) -> Option<Item> {
        match self.dense.get(id as usize) {
            Some(Some(item)) => Some(*item),
            _ => self.sparse.get(&id).copied(),
        }
    }

    fn insert(&mut self, id: u32, item: Item) {
        let index = id as usize;
        let previous = if index <= self.dense.len() {
            if index == self.dense.len() {
                self.dense.push(None);
            }
            let dense = self.dense.get_mut(index).and_then(|slot| slot.replace(item));
            dense.or_else(|| self.sparse.remove(&id))
        } else {
            self.sparse.insert(id, item)
        };
        if previous.is_none() {
            self.len += 1;
        }
    }
}

struct Machine<'a> {
    bytes: &'a [u8],
    position: usize,
    /// Offset of the opcode being run.
    opcode_offset: usize,
    stack: Vec<Item>,
    marks: Vec<Vec<Item>>,
    memo: Memo,
    /// The items of each container.
    containers: Vec<Vec<Item>>,
}

/// Checks `bytes` (one pickle, decompressed) as described in the module documentation.
pub(crate) fn scan(bytes: &[u8]) -> Result<(), ScanError> {
    let mut machine = Machine {
        bytes,
        position: 0,
        opcode_offset: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Memo::default(),
        containers: Vec::new(),
    };
    let root = machine.run()?;
    let limit = VALUES_PER_BYTE.saturating_mul(bytes.len() as u64).saturating_add(BASE_VALUES);
    machine.measure(root, limit)
}

impl Machine<'_> {
    fn error(&self, reason: impl Into<String>) -> ScanError {
        ScanError { offset: self.opcode_offset as u64, reason: reason.into() }
    }

    fn truncated(&self) -> ScanError {
        ScanError {
            offset: self.bytes.len() as u64,
            reason: format!("the pickle ends inside the opcode at byte {}", self.opcode_offset),
        }
    }

    fn take(&mut self, count: usize) -> Result<&[u8], ScanError> {
        let end = self.position.checked_add(count).ok_or_else(|| self.truncated())?;
        let taken = self.bytes.get(self.position..end).ok_or_else(|| self.truncated())?;
        self.position = end;
        Ok(taken)
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], ScanError> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }

    fn take_line(&mut self) -> Result<&[u8], ScanError> {
        let rest = self.bytes.get(self.position..).unwrap_or_default();
        let length = rest.iter().position(|&byte| byte == b'\n').ok_or_else(|| self.truncated())?;
        let line = self.take(length + 1)?;
        Ok(line.strip_suffix(b"\n").unwrap_or(line))
    }

    /// Skips a byte string whose length is a little-endian prefix of `N` bytes.
    fn skip_counted<const N: usize>(&mut self, signed: bool) -> Result<(), ScanError> {
        let prefix = self.take_array::<N>()?;
        let mut wide = [0u8; 8];
        wide.iter_mut().zip(prefix).for_each(|(wide, byte)| *wide = byte);
        if signed && N == 4 && prefix.get(3).is_some_and(|&high| high & 0x80 != 0) {
            return Err(self.error("negative length"));
        }
        let length = usize::try_from(u64::from_le_bytes(wide)).map_err(|_| self.truncated())?;
        self.take(length).map(|_| ())
    }

    fn memo_id_from_line(&mut self) -> Result<u32, ScanError> {
        let line = self.take_line()?;
        let id = std::str::from_utf8(line).ok().and_then(|text| text.trim().parse().ok());
        id.ok_or_else(|| self.error("bad memo index"))
    }

    fn pop(&mut self) -> Result<Item, ScanError> {
        self.stack.pop().ok_or_else(|| self.error("stack underflow"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Item>, ScanError> {
        let outer = self.marks.pop().ok_or_else(|| self.error("no mark to pop to"))?;
        Ok(std::mem::replace(&mut self.stack, outer))
    }

    fn new_container(&mut self, items: Vec<Item>) {
        self.stack.push(Item::Container(self.containers.len()));
        self.containers.push(items);
    }

    /// The container on top of the stack, through a memo reference if need be.
    fn top_container(&mut self) -> Result<&mut Vec<Item>, ScanError> {
        let top = match self.stack.last() {
            Some(&Item::Memo(id)) => self.memo.get(id),
            other => other.copied(),
        };
        match top {
            Some(Item::Container(index)) => {
                let offset = self.opcode_offset as u64;
                let unknown = move || ScanError { offset, reason: "internal: unknown container".into() };
                self.containers.get_mut(index).ok_or_else(unknown)
            }
            Some(_) => Err(self.error("adding items to something that is not a container")),
            None => Err(self.error("stack underflow")),
        }
    }

    fn memoize(&mut self, id: u32) -> Result<(), ScanError> {
        let item = self.pop()?;
        if matches!(item, Item::Memo(_)) {
            return Err(self.error("memoizes a memo reference (Python's pickler never does)"));
        }
        self.memo.insert(id, item);
        self.stack.push(Item::Memo(id));
        Ok(())
    }

    fn get(&mut self, id: u32) -> Result<(), ScanError> {
        if self.memo.get(id).is_none() {
            return Err(self.error(format!("memo entry {id} is read before it is written")));
        }
        self.stack.push(Item::Memo(id));
        Ok(())
    }

    /// Runs the pickle up to its STOP opcode and returns the value it produces.
    fn run(&mut self) -> Result<Item, ScanError> {
        loop {
            self.opcode_offset = self.position;
            let [opcode] = self.take_array::<1>().map_err(|_| ScanError {
                offset: self.bytes.len() as u64,
                reason: "the pickle ends without its STOP opcode".into(),
            })?;
            match opcode {
                b'.' => return self.pop(), // STOP
                b'(' => {
                    // MARK
                    if self.marks.len() >= MAX_OPEN_MARKS {
                        return Err(self.error(format!("more than {MAX_OPEN_MARKS} marks open")));
                    }
                    let inner = std::mem::take(&mut self.stack);
                    self.marks.push(inner);
                }
                b'0' => {
                    // POP
                    if self.stack.is_empty() {
                        self.pop_mark()?;
                    } else {
                        self.pop()?;
                    }
                }
                b'1' => drop(self.pop_mark()?), // POP_MARK
                0x80 => drop(self.take(1)?),    // PROTO
                0x95 => drop(self.take(8)?),    // FRAME
                // Memo: PUT, BINPUT, LONG_BINPUT, MEMOIZE; GET, BINGET, LONG_BINGET.
                b'p' => {
                    let id = self.memo_id_from_line()?;
                    self.memoize(id)?;
                }
                b'q' => {
                    let [id] = self.take_array::<1>()?;
                    self.memoize(id.into())?;
                }
                b'r' => {
                    let id = u32::from_le_bytes(self.take_array::<4>()?);
                    self.memoize(id)?;
                }
                0x94 => {
                    let id = u32::try_from(self.memo.len).map_err(|_| self.error("memo too large"))?;
                    self.memoize(id)?;
                }
                b'g' => {
                    let id = self.memo_id_from_line()?;
                    self.get(id)?;
                }
                b'h' => {
                    let [id] = self.take_array::<1>()?;
                    self.get(id.into())?;
                }
                b'j' => {
                    let id = u32::from_le_bytes(self.take_array::<4>()?);
                    self.get(id)?;
                }
                // Scalars without an argument: NONE, NEWTRUE, NEWFALSE.
                b'N' | 0x88 | 0x89 => self.stack.push(Item::Scalar),
                // Scalars with a text line: INT, LONG, FLOAT, STRING, UNICODE.
                b'I' | b'L' | b'F' | b'S' | b'V' => {
                    self.take_line()?;
                    self.stack.push(Item::Scalar);
                }
                // Fixed-size scalars: BININT1, BININT2, BININT, BINFLOAT.
                b'K' | b'M' | b'J' | b'G' => {
                    let size = match opcode {
                        b'K' => 1,
                        b'M' => 2,
                        b'J' => 4,
                        _ => 8,
                    };
                    self.take(size)?;
                    self.stack.push(Item::Scalar);
                }
                // Counted scalars: LONG1, SHORT_BINBYTES, SHORT_BINSTRING, SHORT_BINUNICODE (1-byte length);
                // BINBYTES, BINUNICODE (4); LONG4, BINSTRING (signed 4); BINBYTES8, BINUNICODE8, BYTEARRAY8 (8).
                0x8a | b'C' | b'U' | 0x8c => {
                    self.skip_counted::<1>(false)?;
                    self.stack.push(Item::Scalar);
                }
                b'B' | b'X' => {
                    self.skip_counted::<4>(false)?;
                    self.stack.push(Item::Scalar);
                }
                0x8b | b'T' => {
                    self.skip_counted::<4>(true)?;
                    self.stack.push(Item::Scalar);
                }
                0x8e | 0x8d | 0x96 => {
                    self.skip_counted::<8>(false)?;
                    self.stack.push(Item::Scalar);
                }
                // Empty containers: EMPTY_LIST, EMPTY_DICT, EMPTY_TUPLE.
                b']' | b'}' | b')' => self.new_container(Vec::new()),
                // Containers from the items since the mark: LIST, DICT, TUPLE.
                b'l' | b'd' | b't' => {
                    let items = self.pop_mark()?;
                    self.new_container(items);
                }
                // TUPLE1, TUPLE2, TUPLE3.
                0x85..=0x87 => {
                    let count = usize::from(opcode - 0x84);
                    let split =
                        self.stack.len().checked_sub(count).ok_or_else(|| self.error("stack underflow"))?;
                    let items = self.stack.split_off(split);
                    self.new_container(items);
                }
                b'a' => {
                    // APPEND
                    let item = self.pop()?;
                    self.top_container()?.push(item);
                }
                b's' => {
                    // SETITEM
                    let value = self.pop()?;
                    let key = self.pop()?;
                    self.top_container()?.extend([key, value]);
                }
                // APPENDS, SETITEMS.
                b'e' | b'u' => {
                    let items = self.pop_mark()?;
                    self.top_container()?.extend(items);
                }
                b'2' => return Err(self.error("opcode DUP (Python's pickler never writes it)")),
                other => {
                    let what = match other {
                        b'c' | 0x93 => "a global (not a builtin type)",
                        b'R' | b'b' | b'i' | b'o' | 0x81 | 0x92 => "an object (not a builtin type)",
                        b'P' | b'Q' => "a persistent id",
                        0x82..=0x84 => "an extension code",
                        0x97 | 0x98 => "an out-of-band buffer",
                        // serde-pickle sorts set items with an order that is not total (NaN, mixed numbers),
                        // which can panic; snapshots hold no sets.
                        0x8f..=0x91 => "a set (a snapshot has none)",
                        _ => "an unknown opcode",
                    };
                    return Err(
                        self.error(format!("opcode 0x{other:02x} is {what}; only builtin types are read"))
                    );
                }
            }
        }
    }

    /// Checks that `root`, decoded with every memo reference copied in, is no deeper than [`MAX_DEPTH`], has at
    /// most `limit` values and contains no cycle.
    fn measure(&self, root: Item, limit: u64) -> Result<(), ScanError> {
        #[derive(Clone, Copy)]
        enum State {
            New,
            Open,
            Done { values: u64, depth: u32 },
        }
        struct Frame {
            container: usize,
            next: usize,
            values: u64,
            depth: u32,
        }
        let at_end = |reason: String| ScanError { offset: self.bytes.len() as u64, reason };
        let resolve = |item: Item| match item {
            Item::Memo(id) => self.memo.get(id).unwrap_or(Item::Scalar),
            other => other,
        };
        let Item::Container(root) = resolve(root) else { return Ok(()) };
        let mut states = vec![State::New; self.containers.len()];
        let mut frames = vec![Frame { container: root, next: 0, values: 1, depth: 1 }];
        if let Some(state) = states.get_mut(root) {
            *state = State::Open;
        }
        loop {
            let open_frames = frames.len();
            let Some(frame) = frames.last_mut() else { break };
            let items = self.containers.get(frame.container).map(Vec::as_slice).unwrap_or_default();
            let Some(&item) = items.get(frame.next) else {
                let (container, values, depth) = (frame.container, frame.values, frame.depth);
                frames.pop();
                if let Some(state) = states.get_mut(container) {
                    *state = State::Done { values, depth };
                }
                let (values, depth) = match frames.last_mut() {
                    Some(parent) => {
                        parent.values = parent.values.saturating_add(values);
                        parent.depth = parent.depth.max(depth.saturating_add(1));
                        (parent.values, parent.depth)
                    }
                    None => (values, depth),
                };
                if values > limit {
                    return Err(at_end(format!("the pickle decodes to more than {limit} values")));
                }
                if depth > MAX_DEPTH {
                    return Err(at_end(format!("values nest deeper than {MAX_DEPTH}")));
                }
                continue;
            };
            frame.next += 1;
            let mut descend = None;
            match resolve(item) {
                Item::Container(child) => match states.get(child).copied() {
                    Some(State::New) => descend = Some(child),
                    Some(State::Open) => return Err(at_end("a container contains itself".into())),
                    Some(State::Done { values, depth }) => {
                        frame.values = frame.values.saturating_add(values);
                        frame.depth = frame.depth.max(depth.saturating_add(1));
                    }
                    None => {}
                },
                _ => {
                    frame.values = frame.values.saturating_add(1);
                    frame.depth = frame.depth.max(2);
                }
            }
            if frame.values > limit {
                return Err(at_end(format!("the pickle decodes to more than {limit} values")));
            }
            if frame.depth > MAX_DEPTH {
                return Err(at_end(format!("values nest deeper than {MAX_DEPTH}")));
            }
            if let Some(child) = descend {
                if open_frames as u64 >= u64::from(MAX_DEPTH) {
                    return Err(at_end(format!("values nest deeper than {MAX_DEPTH}")));
                }
                if let Some(state) = states.get_mut(child) {
                    *state = State::Open;
                }
                frames.push(Frame { container: child, next: 0, values: 1, depth: 1 });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_a_small_snapshot_shaped_pickle() {
        // {'device_traces': [[{'action': 'alloc'}]]}, as Python 3 writes it with protocol 4.
        let pickle = b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\rdevice_traces\x94]\x94]\x94}\x94\x8c\x06action\x94\x8c\x05alloc\x94saas.";
        assert_eq!(scan(pickle), Ok(()));
    }

    #[test]
    fn rejects_exponential_sharing() {
        // l0 = []; l(n+1) = [ln, ln]: 2^40 values from a few hundred bytes.
        let mut pickle = vec![0x80, 4, b']', 0x94];
        for id in 0..40u8 {
            pickle.extend([b'(', b'h', id, b'h', id, b'l', 0x94]);
        }
        pickle.push(b'.');
        let error = scan(&pickle).unwrap_err();
        assert!(error.reason.contains("decodes to more than"), "{error:?}");
    }

    #[test]
    fn rejects_deep_nesting_and_cycles() {
        let mut deep = vec![b']'; 500];
        deep.extend([b'a'; 499]);
        deep.push(b'.');
        assert!(scan(&deep).unwrap_err().reason.contains("deeper"));
        let cycle = b"]\x94h\x00a.";
        assert!(scan(cycle).unwrap_err().reason.contains("contains itself"));
    }

    #[test]
    fn names_the_offset_of_truncation_and_foreign_opcodes() {
        let truncated = b"\x80\x04\x8c\x10short";
        assert_eq!(scan(truncated).unwrap_err().offset, truncated.len() as u64);
        let no_stop = b"\x80\x04N";
        assert!(scan(no_stop).unwrap_err().reason.contains("STOP"));
        let global = b"\x80\x04cos\nsystem\n.";
        let error = scan(global).unwrap_err();
        assert_eq!(error.offset, 2);
        assert!(error.reason.contains("global"));
    }
}
