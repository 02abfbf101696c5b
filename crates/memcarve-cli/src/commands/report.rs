//! `memcarve report`: replays one trace under one policy and writes one self-contained HTML page: live,
//! committed and PyTorch-reserved bytes over the trace, the memory map at memcarve's peak committed moment
//! (rebuilt from the replay's placement log, not asked of the allocator), fragmentation there, and the
//! headline figures. The page is inline SVG, CSS and a little JS (a hover readout); it loads nothing.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Context, Result, bail};
use clap::Args;
use memcarve_trace::TraceSummary;
use memcarve_trace::replay::{Placement, Policy, ReplayResult, Replayer, Sample, policies, policy};
use memcarve_trace::torch::ReservedStep;

/// Events handed to the replayer at a time (read before, so that reading is not timed).
const BATCH: usize = 1 << 16;
/// The timeline keeps between this many and twice as many points, however long the trace.
const TIMELINE_POINTS: usize = 2000;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Arguments of `memcarve report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The trace: a PyTorch snapshot (`.pickle`, `.pickle.gz`, `.pickle.xz`) or a memcarve trace (plain, gzip or xz).
    trace: PathBuf,
    /// The HTML file to write.
    #[arg(long, short)]
    out: PathBuf,
    /// The policy to replay with (see `memcarve replay --help`). Default: the default policy.
    #[arg(long)]
    policy: Option<String>,
}

/// Runs `memcarve report`.
pub fn run(args: &ReportArgs) -> Result<()> {
    let chosen = match args.policy.as_deref() {
        None => policies().into_iter().next().context("no replay policy is defined")?,
        Some(name) => match policy(name) {
            Some(policy) => policy,
            None => {
                let names: Vec<_> = policies().iter().map(|p| p.name).collect();
                bail!("unknown policy {name:?}; known: {} (a report shows one)", names.join(", "));
            }
        },
    };
    let replayed = replay(&args.trace, &chosen)
        .with_context(|| format!("replaying {} with {}", args.trace.display(), chosen.name))?;
    let name = args
        .trace
        .file_name()
        .map_or_else(|| args.trace.display().to_string(), |n| n.to_string_lossy().into());
    let page = render(&name, &chosen, &replayed);
    std::fs::write(&args.out, page).with_context(|| format!("writing {}", args.out.display()))?;
    let peak = &replayed.result;
    println!(
        "{}: {name} with {}: peak live {}, peak committed {} (overhead {:.3}), memory map at event {}",
        args.out.display(),
        chosen.name,
        bytes(peak.peak_live_bytes),
        bytes(peak.peak_committed_bytes),
        peak.overhead(),
        replayed.peak.map_or_else(|| "-".to_owned(), |p| p.event.to_string()),
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Replay and recording

/// What the page is drawn from.
struct Replayed {
    result: ReplayResult,
    summary: TraceSummary,
    /// Events replayed.
    events: u64,
    timeline: Timeline,
    /// Whether the timeline has PyTorch's reserved bytes (snapshots only).
    has_reserved: bool,
    /// memcarve's peak committed moment (`None` when nothing was ever committed).
    peak: Option<PeakMoment>,
    /// The memory at that moment.
    map: PeakMap,
}

#[derive(Debug, Clone, Copy)]
struct PeakMoment {
    event: u64,
    committed_bytes: u64,
    live_bytes: u64,
    reserved_bytes: Option<u64>,
}

fn replay(path: &Path, policy: &Policy) -> Result<Replayed> {
    let recorder = Rc::new(RefCell::new(Recorder::default()));
    let mut replayer = Replayer::new(policy)?;
    let sink = Rc::clone(&recorder);
    replayer = replayer.with_placements(move |placement| sink.borrow_mut().map.apply(placement));
    let sink = Rc::clone(&recorder);
    replayer = replayer.with_samples(move |sample| sink.borrow_mut().sample(sample));

    let summary;
    let has_reserved;
    if memcarve_trace::is_snapshot(path)? {
        // The importer keeps PyTorch's reserved bytes step by step; the generic reader only has the peak.
        let imported = memcarve_trace::torch::import(path)?;
        recorder.borrow_mut().reserved = Some(ReservedCursor::new(imported.reserved_steps));
        has_reserved = true;
        for batch in imported.events.chunks(BATCH) {
            replayer.replay(batch);
        }
        summary = imported.summary;
    } else {
        let mut trace = memcarve_trace::open(path)?;
        replayer.replay_all(trace.by_ref(), BATCH, |_| {})?;
        summary = trace.summary();
        has_reserved = false;
    }
    let result = replayer.finish(summary.pytorch);
    // The replayer (and with it the sinks' clones) is gone: the recorder has one owner again.
    let recorder = Rc::try_unwrap(recorder).map_or_else(|shared| shared.take(), RefCell::into_inner);
    let Recorder { timeline, peak, mut map, events, .. } = recorder;
    map.rewind();
    let mut map = PeakMap::new(&map);
    map.committed_bytes = peak.map_or(0, |peak| peak.committed_bytes);
    Ok(Replayed { result, summary, events, timeline, has_reserved, peak, map })
}

/// Collects the samples and placements of one replay.
#[derive(Default)]
struct Recorder {
    timeline: Timeline,
    reserved: Option<ReservedCursor>,
    peak: Option<PeakMoment>,
    map: MapState,
    events: u64,
}

impl Recorder {
    fn sample(&mut self, sample: Sample) {
        let reserved = self.reserved.as_mut().map(|cursor| cursor.at(sample.event));
        self.timeline.push(sample, reserved);
        self.events = sample.event + 1;
        if sample.committed_bytes > self.peak.map_or(0, |peak| peak.committed_bytes) {
            self.peak = Some(PeakMoment {
                event: sample.event,
                committed_bytes: sample.committed_bytes,
                live_bytes: sample.live_bytes,
                reserved_bytes: reserved,
            });
            // The state now is the state at the peak: nothing before needs undoing.
            self.map.journal.clear();
        }
    }
}

/// Walks PyTorch's reserved-bytes steps along the events.
struct ReservedCursor {
    steps: Vec<ReservedStep>,
    next: usize,
    current: u64,
}

impl ReservedCursor {
    fn new(steps: Vec<ReservedStep>) -> ReservedCursor {
        ReservedCursor { steps, next: 0, current: 0 }
    }

    /// PyTorch's reserved bytes while `event` ran: the most it held since the previous event (segments
    /// reserved and released between two events count).
    fn at(&mut self, event: u64) -> u64 {
        let mut most = None;
        while let Some(step) = self.steps.get(self.next).filter(|step| step.event <= event) {
            self.current = step.reserved_bytes;
            most = Some(most.map_or(self.current, |m: u64| m.max(self.current)));
            self.next += 1;
        }
        most.unwrap_or(self.current)
    }
}

/// One point of the timeline: the most of each series over a run of events.
#[derive(Debug, Clone, Copy)]
struct Point {
    /// The first event of the run.
    event: u64,
    live: u64,
    committed: u64,
    reserved: u64,
}

/// Live, committed and reserved bytes over the trace, downsampled as it grows: runs of events merge pairwise
/// whenever there are too many points, keeping the maxima (peaks never vanish).
struct Timeline {
    /// Events per point.
    stride: u64,
    points: Vec<Point>,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline { stride: 1, points: Vec::new() }
    }
}

impl Timeline {
    fn push(&mut self, sample: Sample, reserved: Option<u64>) {
        let reserved = reserved.unwrap_or(0);
        if let Some(last) = self.points.last_mut()
            && sample.event < last.event + self.stride
        {
            last.live = last.live.max(sample.live_bytes);
            last.committed = last.committed.max(sample.committed_bytes);
            last.reserved = last.reserved.max(reserved);
            return;
        }
        self.points.push(Point {
            event: sample.event,
            live: sample.live_bytes,
            committed: sample.committed_bytes,
            reserved,
        });
        if self.points.len() >= 2 * TIMELINE_POINTS {
            self.points = self
                .points
                .chunks(2)
                .map(|pair| {
                    pair.iter().skip(1).fold(pair[0], |a, b| Point {
                        event: a.event,
                        live: a.live.max(b.live),
                        committed: a.committed.max(b.committed),
                        reserved: a.reserved.max(b.reserved),
                    })
                })
                .collect();
            self.stride *= 2;
        }
    }
}

/// How to undo one placement (to go back from the end of the replay to its peak).
#[derive(Debug, Clone, Copy)]
enum Undo {
    Alloc { id: u64 },
    Free { id: u64, offset: u64, size: u64 },
    Map { offset: u64, size: u64 },
    Unmap { offset: u64, size: u64 },
}

/// The memory as the placement log describes it: live allocations and mapped ranges, with a journal of the
/// placements since the last peak so that the state at the peak can be had back without keeping the log.
#[derive(Default)]
struct MapState {
    /// Live allocations: id to (offset, size).
    live: HashMap<u64, (u64, u64)>,
    /// Mapped ranges, disjoint and coalesced: start to end.
    mapped: BTreeMap<u64, u64>,
    journal: Vec<Undo>,
}

impl MapState {
    fn apply(&mut self, placement: Placement) {
        match placement {
            Placement::Alloc { id, offset, size } => {
                self.live.insert(id, (offset, size));
                self.journal.push(Undo::Alloc { id });
            }
            Placement::Free { id } => {
                if let Some((offset, size)) = self.live.remove(&id) {
                    self.journal.push(Undo::Free { id, offset, size });
                }
            }
            Placement::Map { offset, size } => {
                add_range(&mut self.mapped, offset, offset + size);
                self.journal.push(Undo::Map { offset, size });
            }
            Placement::Unmap { offset, size } => {
                remove_range(&mut self.mapped, offset, offset + size);
                self.journal.push(Undo::Unmap { offset, size });
            }
            // The map shows addresses; which physical pages they show, or a tier's page size, does not change it.
            Placement::Pages { .. } | Placement::Tier { .. } => {}
        }
    }

    /// Undoes the journal: back to the state at the last peak.
    fn rewind(&mut self) {
        while let Some(undo) = self.journal.pop() {
            match undo {
                Undo::Alloc { id } => {
                    self.live.remove(&id);
                }
                Undo::Free { id, offset, size } => {
                    self.live.insert(id, (offset, size));
                }
                Undo::Map { offset, size } => remove_range(&mut self.mapped, offset, offset + size),
                Undo::Unmap { offset, size } => add_range(&mut self.mapped, offset, offset + size),
            }
        }
    }
}

/// Adds `[start, end)` to a set of disjoint, coalesced ranges.
fn add_range(ranges: &mut BTreeMap<u64, u64>, mut start: u64, mut end: u64) {
    if start >= end {
        return;
    }
    // A range that starts before and reaches `start` joins.
    if let Some((&before, &before_end)) = ranges.range(..=start).next_back()
        && before_end >= start
    {
        start = before;
        end = end.max(before_end);
        ranges.remove(&before);
    }
    // Ranges that start inside or right at the end join.
    while let Some((&next, &next_end)) = ranges.range(start..=end).next() {
        end = end.max(next_end);
        ranges.remove(&next);
    }
    ranges.insert(start, end);
}

/// Removes `[start, end)` from a set of disjoint, coalesced ranges.
fn remove_range(ranges: &mut BTreeMap<u64, u64>, start: u64, end: u64) {
    if start >= end {
        return;
    }
    let touched: Vec<(u64, u64)> = ranges
        .range(..end)
        .rev()
        .take_while(|&(_, &range_end)| range_end > start)
        .map(|(&s, &e)| (s, e))
        .collect();
    for (range_start, range_end) in touched {
        ranges.remove(&range_start);
        if range_start < start {
            ranges.insert(range_start, start);
        }
        if range_end > end {
            ranges.insert(end, range_end);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// The memory at the peak

/// Allocation size classes, as coloured on the page.
const SIZE_CLASSES: [(u64, &str, &str); 5] = [
    (64 * KIB, "< 64 KiB", "#4e79a7"),
    (MIB, "64 KiB\u{2013}1 MiB", "#59a14f"),
    (16 * MIB, "1\u{2013}16 MiB", "#edc948"),
    (128 * MIB, "16\u{2013}128 MiB", "#f28e2b"),
    (u64::MAX, "\u{2265} 128 MiB", "#e15759"),
];
const FREE_COLOUR: &str = "#dcdcdc";

fn size_class(size: u64) -> usize {
    SIZE_CLASSES.iter().position(|&(below, _, _)| size < below).unwrap_or(SIZE_CLASSES.len() - 1)
}

/// One mapped range at the peak with the allocations in it.
struct CommittedRange {
    start: u64,
    end: u64,
    /// (offset, size, size class, trace id), by offset.
    allocations: Vec<(u64, u64, usize, u64)>,
    free_ranges: u64,
    free_bytes: u64,
    largest_free: (u64, u64),
}

/// The memory at the peak, rebuilt from the placement log.
#[derive(Default)]
struct PeakMap {
    ranges: Vec<CommittedRange>,
    /// Bytes of the mapped ranges.
    mapped_bytes: u64,
    /// Bytes committed at the peak (the device's count): less than `mapped_bytes` where a physical page shows
    /// at several addresses.
    committed_bytes: u64,
    used_bytes: u64,
    allocations: u64,
    free_ranges: u64,
    free_bytes: u64,
    /// The largest free range: (start, size).
    largest_free: (u64, u64),
    /// Allocations and bytes per size class.
    classes: [(u64, u64); SIZE_CLASSES.len()],
    /// Live allocations outside every committed range (none unless the log is inconsistent).
    outside: u64,
}

impl PeakMap {
    fn new(state: &MapState) -> PeakMap {
        let mut map = PeakMap::default();
        let mut ranges: Vec<CommittedRange> = state
            .mapped
            .iter()
            .map(|(&start, &end)| CommittedRange {
                start,
                end,
                allocations: Vec::new(),
                free_ranges: 0,
                free_bytes: 0,
                largest_free: (start, 0),
            })
            .collect();
        for (&id, &(offset, size)) in &state.live {
            let class = size_class(size);
            map.classes[class].0 += 1;
            map.classes[class].1 += size;
            map.allocations += 1;
            map.used_bytes += size;
            let index = ranges.partition_point(|range| range.start <= offset);
            match index.checked_sub(1).map(|i| &mut ranges[i]) {
                Some(range) if offset + size <= range.end => {
                    range.allocations.push((offset, size, class, id))
                }
                _ => map.outside += 1,
            }
        }
        for range in &mut ranges {
            range.allocations.sort_unstable();
            let mut cursor = range.start;
            let note_free = |from: u64, to: u64, range: &mut CommittedRange| {
                if to > from {
                    range.free_ranges += 1;
                    range.free_bytes += to - from;
                    if to - from > range.largest_free.1 {
                        range.largest_free = (from, to - from);
                    }
                }
            };
            let allocations = std::mem::take(&mut range.allocations);
            for &(offset, size, _, _) in &allocations {
                note_free(cursor, offset, range);
                cursor = cursor.max(offset + size);
            }
            note_free(cursor, range.end, range);
            range.allocations = allocations;
            map.mapped_bytes += range.end - range.start;
            map.free_ranges += range.free_ranges;
            map.free_bytes += range.free_bytes;
            if range.largest_free.1 > map.largest_free.1 {
                map.largest_free = range.largest_free;
            }
        }
        map.ranges = ranges;
        map
    }
}

// ---------------------------------------------------------------------------------------------------------
// The page

/// Width of the drawings, in CSS pixels.
const WIDTH: u32 = 1320;

fn render(name: &str, policy: &Policy, replayed: &Replayed) -> String {
    let result = &replayed.result;
    let pytorch = result.pytorch;
    let mut page = String::with_capacity(1 << 20);
    let title = format!("memcarve report: {name}");
    let _ = writeln!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n\
         <style>{STYLE}</style>\n</head>\n<body>",
        escape(&title)
    );
    let _ = writeln!(
        page,
        "<header><h1>{}</h1><p>Replayed with the <b>{}</b> policy ({}) on memcarve's host backend, simulated \
         H200: {} events, {} allocations, {} frees, {} allocations live at the end{}.</p></header>",
        escape(name),
        escape(policy.name),
        escape(policy.description),
        replayed.events,
        result.allocations,
        result.frees,
        replayed.summary.live_at_end,
        if replayed.summary.dropped_frees > 0 {
            format!(
                ", {} frees of allocations made before the recording dropped",
                replayed.summary.dropped_frees
            )
        } else {
            String::new()
        }
    );

    // Headline figures.
    page.push_str("<section class=\"cards\">\n");
    card(
        &mut page,
        "peak live (requested)",
        &bytes(result.peak_live_bytes),
        "the limit: no allocator needs less",
    );
    card(
        &mut page,
        "memcarve peak committed",
        &bytes(result.peak_committed_bytes),
        &format!("overhead {:.3} \u{d7} live", result.overhead()),
    );
    if let Some(split) = result.peak_split {
        card(
            &mut page,
            "where the peak's overhead is",
            &format!("{} + {}", bytes(split.partly_used_bytes), bytes(split.empty_bytes)),
            &format!(
                "free inside pages live allocations use (placement) + pages none uses (kept or mapped ahead by the \
                 release policy), with {} live",
                bytes(split.live_bytes)
            ),
        );
    }
    match pytorch {
        Some(pytorch) => {
            let overhead = pytorch.overhead(result.peak_live_bytes).unwrap_or(0.0);
            card(
                &mut page,
                "PyTorch peak reserved",
                &bytes(pytorch.peak_reserved_bytes),
                &format!("overhead {overhead:.3} \u{d7} live"),
            );
            let saved = pytorch.peak_reserved_bytes as i128 - result.peak_committed_bytes as i128;
            let share = if pytorch.peak_reserved_bytes == 0 {
                0.0
            } else {
                saved as f64 / pytorch.peak_reserved_bytes as f64 * 100.0
            };
            let (label, figure) = if saved >= 0 {
                ("memcarve saves", bytes(saved as u64))
            } else {
                ("memcarve needs more", bytes(saved.unsigned_abs() as u64))
            };
            card(&mut page, label, &figure, &format!("{:.1} % of PyTorch's peak reserved", share.abs()));
            card(
                &mut page,
                "driver operations",
                &format!("{} vs {}", result.driver_ops, pytorch.segment_ops),
                "memcarve's maps, unmaps, block creations and destructions vs PyTorch's segment operations",
            );
        }
        None => {
            card(&mut page, "PyTorch peak reserved", "\u{2013}", "the trace has no PyTorch figures");
            card(
                &mut page,
                "driver operations",
                &result.driver_ops.to_string(),
                "maps, unmaps, block creations and destructions",
            );
        }
    }
    let map = &replayed.map;
    card(
        &mut page,
        "free ranges at the peak",
        &map.free_ranges.to_string(),
        &format!("largest {} of {} free", bytes(map.largest_free.1), bytes(map.free_bytes)),
    );
    page.push_str("</section>\n");
    if result.failures > 0 || result.unmatched_frees > 0 || map.outside > 0 {
        let _ = writeln!(
            page,
            "<p class=\"warning\">{} allocations were refused, {} frees named no live allocation, {} live \
             allocations lay outside committed memory at the peak.</p>",
            result.failures, result.unmatched_frees, map.outside
        );
    }

    // Timeline.
    page.push_str("<section><h2>Memory over the trace</h2>\n<div class=\"legend\">");
    legend_swatch(&mut page, LIVE_COLOUR, "live (requested) bytes", "area");
    legend_swatch(&mut page, COMMITTED_COLOUR, "memcarve committed", "line");
    if replayed.has_reserved {
        legend_swatch(&mut page, RESERVED_COLOUR, "PyTorch reserved", "dash");
    }
    page.push_str("<span id=\"readout\" class=\"readout\"></span></div>\n");
    timeline_svg(&mut page, replayed);
    page.push_str("</section>\n");

    // Memory map.
    let _ = write!(page, "<section><h2>Memory map at memcarve's peak committed moment");
    match replayed.peak {
        Some(peak) => {
            let _ = writeln!(
                page,
                " (event {} of {}: {} committed, {} live)</h2>",
                peak.event,
                replayed.events,
                bytes(peak.committed_bytes),
                bytes(peak.live_bytes)
            );
        }
        None => page.push_str("</h2>\n"),
    }
    map_section(&mut page, map);
    page.push_str("</section>\n");
    page.push_str(
        "<footer>Written by <code>memcarve report</code>. Every figure comes from the replay; the map \
                   is rebuilt from its placement log.</footer>\n",
    );
    // The figures again, for programs (and tests) that read the page; `<` escaped so no string can end the
    // script element.
    let figures = figures(name, policy, replayed).to_string().replace('<', "\\u003c");
    let _ = writeln!(
        page,
        "<script type=\"application/json\" id=\"memcarve-figures\">{figures}</script>\n\
         <script>{}</script>\n</body>\n</html>",
        script(replayed)
    );
    page
}

/// The page's figures as JSON.
fn figures(name: &str, policy: &Policy, replayed: &Replayed) -> serde_json::Value {
    let result = &replayed.result;
    let map = &replayed.map;
    serde_json::json!({
        "trace": name,
        "policy": policy.name,
        "events": replayed.events,
        "allocations": result.allocations,
        "peak_live_bytes": result.peak_live_bytes,
        "peak_committed_bytes": result.peak_committed_bytes,
        "overhead": result.overhead(),
        "driver_ops": result.driver_ops,
        "at_peak_live_bytes": result.peak_split.map(|split| split.live_bytes),
        "at_peak_partly_used_bytes": result.peak_split.map(|split| split.partly_used_bytes),
        "at_peak_empty_bytes": result.peak_split.map(|split| split.empty_bytes),
        "pytorch_peak_reserved_bytes": result.pytorch.map(|p| p.peak_reserved_bytes),
        "pytorch_segment_ops": result.pytorch.map(|p| p.segment_ops),
        "pytorch_timeline": replayed.has_reserved,
        "timeline_points": replayed.timeline.points.len(),
        "peak_event": replayed.peak.map(|peak| peak.event),
        "map": {
            "committed_bytes": map.committed_bytes,
            "mapped_bytes": map.mapped_bytes,
            "mapped_ranges": map.ranges.len(),
            "allocations": map.allocations,
            "used_bytes": map.used_bytes,
            "free_ranges": map.free_ranges,
            "free_bytes": map.free_bytes,
            "largest_free_range": map.largest_free.1,
            "outside_committed": map.outside,
        },
    })
}

const LIVE_COLOUR: &str = "#4e79a7";
const COMMITTED_COLOUR: &str = "#d1495b";
const RESERVED_COLOUR: &str = "#6a3d9a";

const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', Arial, sans-serif; margin: 16px 28px;
  color: #1d1d1f; background: #fff; }
h1 { font-size: 22px; margin: 0 0 2px; }
h2 { font-size: 16px; margin: 14px 0 6px; }
header p { margin: 0; color: #555; font-size: 13px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 12px; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 6px 12px; min-width: 150px; flex: 1; }
.card .label { font-size: 12px; color: #555; }
.card .figure { font-size: 21px; font-weight: 600; margin: 2px 0; }
.card .note { font-size: 11px; color: #777; }
.legend { font-size: 13px; display: flex; gap: 14px; align-items: center; flex-wrap: wrap; }
.swatch { display: inline-block; width: 22px; height: 11px; margin-right: 5px; vertical-align: -1px; }
.swatch.line { height: 3px; vertical-align: 3px; }
.swatch.dash { height: 0; border-top: 3px dashed; vertical-align: 3px; background: none !important; }
.readout { margin-left: auto; color: #333; font-variant-numeric: tabular-nums; }
svg text { font-size: 11px; fill: #444; }
.figures { font-size: 13px; margin: 6px 0 0; color: #333; }
.figures b { font-variant-numeric: tabular-nums; }
.caption { font-size: 12px; color: #666; margin: 4px 0; }
.warning { color: #a00; font-size: 13px; }
footer { font-size: 11px; color: #888; margin-top: 14px; }
";

fn card(page: &mut String, label: &str, figure: &str, note: &str) {
    let _ = writeln!(
        page,
        "<div class=\"card\"><div class=\"label\">{}</div><div class=\"figure\">{}</div><div class=\"note\">{}</div></div>",
        escape(label),
        escape(figure),
        escape(note)
    );
}

fn legend_swatch(page: &mut String, colour: &str, label: &str, kind: &str) {
    let style = if kind == "dash" {
        format!("border-color:{colour}")
    } else if kind == "area" {
        format!("background:{colour}66;border-top:2px solid {colour}")
    } else {
        format!("background:{colour}")
    };
    let _ =
        write!(page, "<span><span class=\"swatch {kind}\" style=\"{style}\"></span>{}</span>", escape(label));
}

/// Geometry of the timeline plot.
const PLOT_LEFT: f64 = 72.0;
const PLOT_RIGHT: f64 = 16.0;
const PLOT_TOP: f64 = 8.0;
const PLOT_HEIGHT: f64 = 230.0;
const PLOT_BOTTOM: f64 = 34.0;

fn timeline_svg(page: &mut String, replayed: &Replayed) {
    let points = &replayed.timeline.points;
    let width = f64::from(WIDTH);
    let height = PLOT_TOP + PLOT_HEIGHT + PLOT_BOTTOM;
    let plot_width = width - PLOT_LEFT - PLOT_RIGHT;
    let events = replayed.events.max(1);
    let top_value = points.iter().map(|p| p.live.max(p.committed).max(p.reserved)).max().unwrap_or(0).max(1);
    let (unit, unit_name) = unit_for(top_value);
    // Bytes are whole: no step below one of the unit.
    let step = nice_step(top_value as f64 / unit as f64, 5.0).max(if unit == 1 { 1.0 } else { 0.0 });
    let y_max = ((top_value as f64 / unit as f64 / step).ceil() * step).max(step) * unit as f64;
    let x = |event: u64| PLOT_LEFT + event as f64 / events as f64 * plot_width;
    let y = |value: u64| PLOT_TOP + PLOT_HEIGHT - value as f64 / y_max * PLOT_HEIGHT;
    let _ = writeln!(
        page,
        "<svg id=\"timeline\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" \
         role=\"img\" aria-label=\"live, committed and reserved bytes over the trace\">"
    );
    // Grid and axes.
    let mut tick = 0.0;
    while tick <= y_max / unit as f64 + step / 2.0 {
        let ty = y((tick * unit as f64) as u64);
        let _ = writeln!(
            page,
            "<line x1=\"{PLOT_LEFT}\" x2=\"{:.1}\" y1=\"{ty:.1}\" y2=\"{ty:.1}\" stroke=\"#e4e4e4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{} {unit_name}</text>",
            width - PLOT_RIGHT,
            PLOT_LEFT - 6.0,
            ty + 4.0,
            trim_number(tick)
        );
        tick += step;
    }
    let x_step = nice_step(events as f64, 8.0).max(1.0);
    let mut event_tick = 0.0;
    while event_tick <= events as f64 {
        let tx = x(event_tick as u64);
        let _ = writeln!(
            page,
            "<line x1=\"{tx:.1}\" x2=\"{tx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#999\"/>\
             <text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            PLOT_TOP + PLOT_HEIGHT,
            PLOT_TOP + PLOT_HEIGHT + 5.0,
            PLOT_TOP + PLOT_HEIGHT + 17.0,
            trim_number(event_tick)
        );
        event_tick += x_step;
    }
    let _ = writeln!(
        page,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">event index (allocations and frees in trace order)\
         </text>\n<line x1=\"{PLOT_LEFT}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#999\"/>",
        PLOT_LEFT + plot_width / 2.0,
        height - 4.0,
        width - PLOT_RIGHT,
        PLOT_TOP + PLOT_HEIGHT,
        PLOT_TOP + PLOT_HEIGHT
    );
    if !points.is_empty() {
        // Each point covers `stride` events: draw it as a step across them, so the series line up with the
        // event axis however coarse the downsampling.
        let stride = replayed.timeline.stride;
        let path = |value: fn(&Point) -> u64| {
            let mut path = String::new();
            for (index, point) in points.iter().enumerate() {
                let end = (point.event + stride).min(events);
                let command = if index == 0 { 'M' } else { 'L' };
                let vy = y(value(point));
                let _ = write!(path, "{command}{:.1},{vy:.1}L{:.1},{vy:.1}", x(point.event), x(end));
            }
            path
        };
        let live = path(|p| p.live);
        let base = PLOT_TOP + PLOT_HEIGHT;
        let _ = writeln!(
            page,
            "<path d=\"{live}L{:.1},{base:.1}L{PLOT_LEFT},{base:.1}Z\" fill=\"{LIVE_COLOUR}\" fill-opacity=\"0.3\" \
             stroke=\"none\"/>\n<path d=\"{live}\" fill=\"none\" stroke=\"{LIVE_COLOUR}\" stroke-width=\"1.2\"/>",
            x(events)
        );
        if replayed.has_reserved {
            let _ = writeln!(
                page,
                "<path d=\"{}\" fill=\"none\" stroke=\"{RESERVED_COLOUR}\" stroke-width=\"2\" \
                 stroke-dasharray=\"6 4\"/>",
                path(|p| p.reserved)
            );
        }
        let _ = writeln!(
            page,
            "<path d=\"{}\" fill=\"none\" stroke=\"{COMMITTED_COLOUR}\" stroke-width=\"2\"/>",
            path(|p| p.committed)
        );
    }
    if let Some(peak) = replayed.peak {
        let px = x(peak.event);
        let anchor = if px > PLOT_LEFT + plot_width * 0.7 { "end" } else { "start" };
        let dx = if anchor == "end" { -5.0 } else { 5.0 };
        let _ = writeln!(
            page,
            "<line x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{PLOT_TOP}\" y2=\"{:.1}\" stroke=\"#333\" \
             stroke-dasharray=\"2 3\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" \
             style=\"fill:#222\">memcarve's peak: {} (map below)</text>",
            PLOT_TOP + PLOT_HEIGHT,
            px + dx,
            PLOT_TOP + 12.0,
            bytes(peak.committed_bytes)
        );
    }
    let _ = writeln!(
        page,
        "<line id=\"cursor\" x1=\"0\" x2=\"0\" y1=\"{PLOT_TOP}\" y2=\"{:.1}\" stroke=\"#000\" stroke-opacity=\"0.5\" \
         visibility=\"hidden\"/>\n<rect id=\"hover\" x=\"{PLOT_LEFT}\" y=\"{PLOT_TOP}\" width=\"{plot_width:.1}\" \
         height=\"{PLOT_HEIGHT}\" fill=\"transparent\"/>\n</svg>",
        PLOT_TOP + PLOT_HEIGHT
    );
}

/// Geometry of the memory map.
const MAP_ROW_HEIGHT: u32 = 16;
const MAP_ROW_GAP: u32 = 6;
const MAP_RANGE_GAP: u64 = 4;
const MAP_MAX_ROWS: u64 = 22;
/// Allocations at least this many pixels wide get a boundary line and a tooltip of their own.
const MAP_MARKED_PIXELS: u64 = 3;

fn map_section(page: &mut String, map: &PeakMap) {
    page.push_str("<div class=\"legend\">");
    for (index, &(_, label, colour)) in SIZE_CLASSES.iter().enumerate() {
        let (count, total) = map.classes[index];
        let _ = write!(
            page,
            "<span><span class=\"swatch\" style=\"background:{colour}\"></span>{}: {count} \u{b7} {}</span>",
            escape(label),
            bytes(total)
        );
    }
    let _ = writeln!(
        page,
        "<span><span class=\"swatch\" style=\"background:{FREE_COLOUR}\"></span>mapped, free</span>\
         <span><span class=\"swatch\" style=\"background:none;border:2px solid #000\"></span>largest free range\
         </span></div>"
    );
    let fragmentation =
        if map.free_bytes == 0 { 0.0 } else { 1.0 - map.largest_free.1 as f64 / map.free_bytes as f64 };
    let _ = writeln!(
        page,
        "<p class=\"figures\">Mapped ranges <b>{}</b> \u{b7} mapped <b>{}</b> (committed <b>{}</b>: a physical page \
         may show at several addresses) \u{b7} live allocations <b>{}</b> using <b>{}</b> \u{b7} free inside \
         mapped memory <b>{}</b> in <b>{}</b> ranges \u{b7} largest free range <b>{}</b> \u{b7} fragmentation \
         (1 \u{2212} largest free / free) <b>{:.2}</b></p>",
        map.ranges.len(),
        bytes(map.mapped_bytes),
        bytes(map.committed_bytes),
        map.allocations,
        bytes(map.used_bytes),
        bytes(map.free_bytes),
        map.free_ranges,
        bytes(map.largest_free.1),
        fragmentation
    );
    if map.ranges.is_empty() {
        page.push_str("<p class=\"caption\">Nothing was committed.</p>\n");
        return;
    }
    let width = u64::from(WIDTH);
    let length = |scale: u64| -> u64 {
        map.ranges.iter().map(|r| (r.end - r.start).div_ceil(scale).max(1) + MAP_RANGE_GAP).sum::<u64>()
    };
    let mut scale = 512u64;
    while length(scale).div_ceil(width) > MAP_MAX_ROWS && scale < (1 << 50) {
        scale *= 2;
    }
    let rows = length(scale).div_ceil(width).max(1);
    let _ = writeln!(
        page,
        "<p class=\"caption\">Committed memory in address order, wrapped across rows: 1 pixel = {}; a gap \
         separates committed ranges (blocks, or runs of committed pages); hover a range for its figures. A \
         pixel takes the colour of what fills most of it.</p>",
        bytes(scale)
    );
    let height = rows as u32 * (MAP_ROW_HEIGHT + MAP_ROW_GAP);
    let _ = writeln!(
        page,
        "<svg id=\"memory-map\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" \
         shape-rendering=\"crispEdges\" role=\"img\" aria-label=\"memory map at the peak\">"
    );
    let mut cursor = 0u64; // position along the wrapped strip, in pixels
    let mut overlays = String::new();
    for (index, range) in map.ranges.iter().enumerate() {
        let size = range.end - range.start;
        let pixels = size.div_ceil(scale).max(1);
        let colours = pixel_colours(range, scale, pixels);
        // Runs of one colour become one rectangle; a run never crosses a row's end.
        let mut start = 0u64;
        while start < pixels {
            let colour = colours[start as usize];
            let row_end = (cursor + start) / width * width + width - cursor;
            let mut end = start + 1;
            while end < pixels && end < row_end && colours[end as usize] == colour {
                end += 1;
            }
            let (x, y) = strip_position(cursor + start, width);
            let _ = write!(
                page,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{MAP_ROW_HEIGHT}\" fill=\"{}\"/>",
                end - start,
                colour_of(colour)
            );
            start = end;
        }
        page.push('\n');
        let used: u64 = range.allocations.iter().map(|&(_, size, _, _)| size).sum();
        let tooltip = format!(
            "committed range {} of {}: {} at offset {:#x}\n{} allocations using {}\n{} free in {} ranges, \
             largest {}",
            index + 1,
            map.ranges.len(),
            bytes(size),
            range.start,
            range.allocations.len(),
            bytes(used),
            bytes(range.free_bytes),
            range.free_ranges,
            bytes(range.largest_free.1)
        );
        for (x, y, length) in strip_segments(cursor, pixels, width) {
            let _ = writeln!(
                overlays,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{length}\" height=\"{MAP_ROW_HEIGHT}\" fill=\"transparent\" \
                 stroke=\"#555\" stroke-width=\"0.6\"><title>{}</title></rect>",
                escape(&tooltip)
            );
        }
        // Allocations wide enough to point at: a light line where each starts, and its own tooltip.
        for &(offset, size, _, id) in &range.allocations {
            let first = (offset - range.start) / scale;
            let last = (offset - range.start + size).div_ceil(scale).min(pixels);
            if last - first < MAP_MARKED_PIXELS {
                continue;
            }
            let (x, y) = strip_position(cursor + first, width);
            let _ = write!(
                page,
                "<rect x=\"{x}\" y=\"{y}\" width=\"1\" height=\"{MAP_ROW_HEIGHT}\" fill=\"#fff\" \
                 fill-opacity=\"0.85\"/>"
            );
            let tooltip = format!("allocation {id}: {} at offset {:#x}", bytes(size), offset);
            for (x, y, length) in strip_segments(cursor + first, last - first, width) {
                let _ = writeln!(
                    overlays,
                    "<rect x=\"{x}\" y=\"{y}\" width=\"{length}\" height=\"{MAP_ROW_HEIGHT}\" \
                     fill=\"transparent\"><title>{}</title></rect>",
                    escape(&tooltip)
                );
            }
        }
        if map.largest_free.1 > 0 && range.largest_free == map.largest_free {
            let first = (map.largest_free.0 - range.start) / scale;
            let last = (map.largest_free.0 - range.start + map.largest_free.1).div_ceil(scale).min(pixels);
            for (x, y, length) in strip_segments(cursor + first, (last - first).max(1), width) {
                let _ = writeln!(
                    overlays,
                    "<rect x=\"{x}\" y=\"{}\" width=\"{length}\" height=\"{}\" fill=\"none\" stroke=\"#000\" \
                     stroke-width=\"2\" pointer-events=\"none\"/>",
                    y.saturating_sub(1),
                    MAP_ROW_HEIGHT + 2
                );
            }
        }
        cursor += pixels + MAP_RANGE_GAP;
    }
    page.push_str(&overlays);
    page.push_str("</svg>\n");
}

/// Where pixel `position` of the wrapped strip is drawn.
fn strip_position(position: u64, width: u64) -> (u64, u32) {
    (position % width, (position / width) as u32 * (MAP_ROW_HEIGHT + MAP_ROW_GAP))
}

/// The row pieces of `length` pixels from `start` on the wrapped strip: (x, y, length).
fn strip_segments(start: u64, length: u64, width: u64) -> Vec<(u64, u32, u64)> {
    let mut segments = Vec::new();
    let mut position = start;
    let end = start + length;
    while position < end {
        let row_end = (position / width + 1) * width;
        let piece = row_end.min(end) - position;
        let (x, y) = strip_position(position, width);
        segments.push((x, y, piece));
        position += piece;
    }
    segments
}

/// Pixel colours of one committed range: the size class filling most of each pixel, or free
/// (`SIZE_CLASSES.len()`).
fn pixel_colours(range: &CommittedRange, scale: u64, pixels: u64) -> Vec<usize> {
    let free = SIZE_CLASSES.len();
    let mut colours = Vec::with_capacity(pixels as usize);
    let mut first = 0usize; // the first allocation that may reach the current pixel
    for pixel in 0..pixels {
        let from = range.start + pixel * scale;
        let to = (from + scale).min(range.end);
        let mut filled = [0u64; SIZE_CLASSES.len()];
        while first < range.allocations.len() {
            let (offset, size, _, _) = range.allocations[first];
            if offset + size <= from {
                first += 1;
            } else {
                break;
            }
        }
        for &(offset, size, class, _) in &range.allocations[first..] {
            if offset >= to {
                break;
            }
            filled[class] += (offset + size).min(to) - offset.max(from);
        }
        let used: u64 = filled.iter().sum();
        let (class, most) =
            filled.iter().enumerate().max_by_key(|&(_, bytes)| *bytes).map_or((free, 0), |(c, b)| (c, *b));
        colours.push(if most == 0 || (to - from).saturating_sub(used) > most { free } else { class });
    }
    colours
}

fn colour_of(class: usize) -> &'static str {
    SIZE_CLASSES.get(class).map_or(FREE_COLOUR, |&(_, _, colour)| colour)
}

/// The hover readout: the timeline's points as arrays, and a handler that shows the values under the cursor.
fn script(replayed: &Replayed) -> String {
    let points = &replayed.timeline.points;
    let join =
        |value: fn(&Point) -> u64| points.iter().map(|p| value(p).to_string()).collect::<Vec<_>>().join(",");
    let peak = replayed.peak.map_or_else(
        || "null".to_owned(),
        |peak| {
            format!(
                "{{event:{},live:{},committed:{},reserved:{}}}",
                peak.event,
                peak.live_bytes,
                peak.committed_bytes,
                peak.reserved_bytes.map_or_else(|| "null".to_owned(), |r| r.to_string())
            )
        },
    );
    format!(
        "(function () {{
  'use strict';
  var data = {{events: [{}], live: [{}], committed: [{}], reserved: [{}], hasReserved: {}, stride: {},
    total: {}, peak: {peak}, left: {PLOT_LEFT}, plotWidth: {}}};
  function fmt(b) {{
    var units = [['GiB', 1073741824], ['MiB', 1048576], ['KiB', 1024]];
    for (var i = 0; i < units.length; i++) {{
      if (b >= units[i][1]) {{ return (b / units[i][1]).toFixed(units[i][0] === 'GiB' ? 2 : 1) + ' ' + units[i][0]; }}
    }}
    return b + ' B';
  }}
  function describe(label, live, committed, reserved) {{
    var text = label + ': live ' + fmt(live) + ', memcarve committed ' + fmt(committed);
    if (data.hasReserved) {{ text += ', PyTorch reserved ' + fmt(reserved); }}
    return text;
  }}
  var readout = document.getElementById('readout');
  var svg = document.getElementById('timeline');
  var cursor = document.getElementById('cursor');
  var atPeak = data.peak ? describe('at memcarve\\'s peak (event ' + data.peak.event + ')', data.peak.live,
    data.peak.committed, data.peak.reserved || 0) : 'no memory was committed';
  readout.textContent = atPeak;
  svg.addEventListener('mousemove', function (event) {{
    var box = svg.getBoundingClientRect();
    var x = (event.clientX - box.left) * (svg.viewBox.baseVal.width / box.width);
    var at = (x - data.left) / data.plotWidth * data.total;
    if (at < 0 || at > data.total || data.events.length === 0) {{ return; }}
    var low = 0, high = data.events.length - 1;
    while (low < high) {{
      var middle = (low + high + 1) >> 1;
      if (data.events[middle] <= at) {{ low = middle; }} else {{ high = middle - 1; }}
    }}
    var first = data.events[low], last = Math.min(first + data.stride, data.total) - 1;
    var label = last > first ? 'events ' + first + '\\u2013' + last + ' (highest)' : 'event ' + first;
    readout.textContent = describe(label, data.live[low], data.committed[low], data.reserved[low]);
    cursor.setAttribute('x1', x);
    cursor.setAttribute('x2', x);
    cursor.setAttribute('visibility', 'visible');
  }});
  svg.addEventListener('mouseleave', function () {{
    readout.textContent = atPeak;
    cursor.setAttribute('visibility', 'hidden');
  }});
  document.documentElement.setAttribute('data-memcarve-ready', '1');
}})();",
        points.iter().map(|p| p.event.to_string()).collect::<Vec<_>>().join(","),
        join(|p| p.live),
        join(|p| p.committed),
        join(|p| p.reserved),
        replayed.has_reserved,
        replayed.timeline.stride,
        replayed.events.max(1),
        f64::from(WIDTH) - PLOT_LEFT - PLOT_RIGHT,
    )
}

// ---------------------------------------------------------------------------------------------------------
// Formatting

/// Bytes in binary units.
fn bytes(value: u64) -> String {
    if value >= GIB {
        format!("{:.2} GiB", value as f64 / GIB as f64)
    } else if value >= MIB {
        format!("{:.1} MiB", value as f64 / MIB as f64)
    } else if value >= KIB {
        format!("{:.1} KiB", value as f64 / KIB as f64)
    } else {
        format!("{value} B")
    }
}

/// The unit an axis up to `value` bytes is labelled in.
fn unit_for(value: u64) -> (u64, &'static str) {
    if value >= 2 * GIB {
        (GIB, "GiB")
    } else if value >= 2 * MIB {
        (MIB, "MiB")
    } else if value >= 2 * KIB {
        (KIB, "KiB")
    } else {
        (1, "B")
    }
}

/// A step of 1, 2 or 5 times a power of ten that cuts `range` into about `count` pieces.
fn nice_step(range: f64, count: f64) -> f64 {
    let raw = (range / count).max(f64::MIN_POSITIVE);
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// A tick label: no trailing zeros.
fn trim_number(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Text for HTML (content and attribute values).
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(character),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(list: &[(u64, u64)]) -> BTreeMap<u64, u64> {
        list.iter().copied().collect()
    }

    #[test]
    fn ranges_coalesce_and_split() {
        let mut set = BTreeMap::new();
        add_range(&mut set, 10, 20);
        add_range(&mut set, 30, 40);
        add_range(&mut set, 20, 30);
        assert_eq!(set, ranges(&[(10, 40)]));
        remove_range(&mut set, 15, 25);
        assert_eq!(set, ranges(&[(10, 15), (25, 40)]));
        add_range(&mut set, 0, 100);
        assert_eq!(set, ranges(&[(0, 100)]));
        remove_range(&mut set, 0, 10);
        remove_range(&mut set, 90, 100);
        assert_eq!(set, ranges(&[(10, 90)]));
    }

    #[test]
    fn rewinding_the_journal_gives_back_the_state_at_the_peak() {
        let mut state = MapState::default();
        state.apply(Placement::Map { offset: 0, size: 100 });
        state.apply(Placement::Alloc { id: 1, offset: 0, size: 40 });
        state.apply(Placement::Alloc { id: 2, offset: 40, size: 40 });
        let at_peak = (state.live.clone(), state.mapped.clone());
        state.journal.clear();
        state.apply(Placement::Free { id: 1 });
        state.apply(Placement::Unmap { offset: 0, size: 40 });
        state.apply(Placement::Alloc { id: 3, offset: 60, size: 10 });
        state.apply(Placement::Map { offset: 200, size: 50 });
        state.rewind();
        assert_eq!((state.live, state.mapped), at_peak);
    }

    #[test]
    fn timeline_keeps_maxima_while_downsampling() {
        let mut timeline = Timeline::default();
        let events = 10 * TIMELINE_POINTS as u64 + 7;
        for event in 0..events {
            let live = if event == 12_345 { 999 } else { event % 10 };
            timeline.push(Sample { event, live_bytes: live, committed_bytes: 100 }, Some(5));
        }
        assert!(timeline.points.len() < 2 * TIMELINE_POINTS && timeline.points.len() >= TIMELINE_POINTS / 2);
        assert_eq!(timeline.points.iter().map(|p| p.live).max(), Some(999));
        assert!(timeline.points.windows(2).all(|w| w[1].event == w[0].event + timeline.stride));
        assert!(timeline.points.iter().all(|p| p.committed == 100 && p.reserved == 5));
    }

    #[test]
    fn reserved_cursor_keeps_spikes_between_events() {
        let steps = vec![
            ReservedStep { event: 0, reserved_bytes: 10 },
            ReservedStep { event: 2, reserved_bytes: 50 },
            ReservedStep { event: 2, reserved_bytes: 20 },
        ];
        let mut cursor = ReservedCursor::new(steps);
        assert_eq!([cursor.at(0), cursor.at(1), cursor.at(2), cursor.at(3)], [10, 10, 50, 20]);
    }

    #[test]
    fn peak_map_counts_free_ranges() {
        let mut state = MapState::default();
        state.apply(Placement::Map { offset: 0, size: 100 });
        state.apply(Placement::Map { offset: 1000, size: 100 });
        state.apply(Placement::Alloc { id: 1, offset: 10, size: 20 });
        state.apply(Placement::Alloc { id: 2, offset: 50, size: 50 });
        state.apply(Placement::Alloc { id: 3, offset: 1000, size: 100 });
        let map = PeakMap::new(&state);
        assert_eq!((map.ranges.len(), map.mapped_bytes, map.used_bytes), (2, 200, 170));
        assert_eq!((map.free_ranges, map.free_bytes, map.largest_free), (2, 30, (30, 20)));
        assert_eq!(map.outside, 0);
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }
}
