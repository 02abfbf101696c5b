//! `memcarve replay`: replays each trace under each chosen policy and prints one table.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use memcarve::virtual_heap::{
    HeapTier, PeakSlack, ReleaseImmediately, ReleasePolicy, RequestMix, RetainEmpty,
};
use memcarve::{AllocationSizes, AllocatorConfig, VirtualHeapConfig};
use memcarve_trace::Event;
use memcarve_trace::replay::{Placement, Policy, ReplayResult, Replayer, policies, policy};
use serde::{Deserialize, Serialize};

const MIB: f64 = (1u64 << 20) as f64;
/// Events read before each timed replay batch.
const BATCH: usize = 1 << 16;

/// Arguments of `memcarve replay`.
#[derive(Debug, Args)]
#[command(after_help = policy_help())]
pub struct ReplayArgs {
    /// Trace files: PyTorch snapshots (`.pickle`, `.pickle.gz`, `.pickle.xz`) or memcarve traces (plain, gzip or xz).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    /// Policy to replay with (see below), or `all` for every policy side by side. Default: the default policy.
    #[arg(long)]
    policy: Option<String>,
    /// A TOML file with allocator settings, replayed as the policy `config` (fields: see the README).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write every event of the replay as CSV (`event,id,offset,size`; see docs/TRACE_FORMAT.md) to this file
    /// (one trace, one policy).
    #[arg(long)]
    placements: Option<PathBuf>,
    /// Replay each trace this many times, each time on a fresh allocator, and report the median throughput
    /// (times on a shared machine are noisy); the other figures must come out the same every time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
}

fn policy_help() -> String {
    let mut help = String::from("Policies:\n");
    for (index, policy) in policies().iter().enumerate() {
        let default = if index == 0 { " (default)" } else { "" };
        help.push_str(&format!("  {}{default}: {}\n", policy.name, policy.description));
    }
    help
}

/// The allocator settings a `--config` file may set; absent fields keep the defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    device_block_initial: Option<u64>,
    device_block_max: Option<u64>,
    host_block_initial: Option<u64>,
    host_block_max: Option<u64>,
    max_memory_blocks: Option<u32>,
    dedicated_threshold: Option<u64>,
    max_empty_blocks_per_pool: Option<usize>,
    keep_blocks_within_peak: Option<bool>,
    virtual_heap: Option<VirtualHeapFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct VirtualHeapFile {
    reserve_size: Option<u64>,
    min_granularity: Option<u64>,
    /// `peak-slack` (the default), `immediate` or `retain`.
    release: Option<String>,
    retain_bytes: Option<u64>,
    retain_live_fraction: Option<f64>,
    /// For `peak-slack`: allowed committed bytes above the peak live bytes so far (fraction).
    slack: Option<f64>,
    /// For `peak-slack`: largest commit-ahead as a fraction of the committed bytes.
    max_ahead_fraction: Option<f64>,
    /// For `peak-slack`: allowed committed bytes above the peak live bytes, at least.
    min_spare_bytes: Option<u64>,
    /// For `peak-slack`: the spare applies until the heap has allocated this many times its peak live bytes.
    spare_until_allocated: Option<f64>,
    /// For `peak-slack`: the spare also ends once the heap has made more than this many allocations.
    spare_until_allocations: Option<u64>,
    /// For `peak-slack`: allocations without a free after which a mapping that raises the peak maps ahead.
    loading_run: Option<u64>,
    /// For `peak-slack`: in such a run, bytes mapped ahead past the budget at most (as many as the request).
    loading_ahead_bytes: Option<u64>,
    /// For `peak-slack`: requests of at least this many bytes map pages ahead within the slack only.
    spare_ahead_below_bytes: Option<u64>,
    /// Whether growing replacement series (KV caches) are watched for and placed to suit.
    growing_series: Option<bool>,
    /// Requests below this many bytes are placed apart from the others (0: none).
    small_below_bytes: Option<u64>,
    /// The heap's page size (a power of two, at least the device's granularity); absent: the granularity.
    page_size: Option<u64>,
    /// Tiers with larger pages, opened as the heap grows (`[]`: none); absent: the default tiers.
    tiers: Option<Vec<TierFile>>,
}

/// One `[[virtual_heap.tiers]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TierFile {
    /// Committed bytes of the heap at which the tier opens (absent: only by `request_mix`).
    opens_at_bytes: Option<u64>,
    /// The tier's page size.
    page_size: u64,
    /// For the first tier: opened early when large requests dominate (`VirtualHeapConfig`'s `RequestMix`).
    request_mix: Option<RequestMixFile>,
}

/// A tier's `request_mix` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestMixFile {
    decided_after_bytes: u64,
    large_request_bytes: u64,
    min_large_share: f64,
    /// The most the heap may have committed when the rule decides for the tier (absent: no bound).
    max_committed_bytes: Option<u64>,
}

impl TierFile {
    fn tier(&self) -> Result<HeapTier> {
        let Some(opens_at) = self.opens_at_bytes.or(self.request_mix.as_ref().map(|_| u64::MAX)) else {
            bail!("a tier needs opens_at_bytes, a request_mix, or both");
        };
        let tier = HeapTier::new(opens_at, self.page_size);
        Ok(match &self.request_mix {
            Some(rule) => tier.with_request_mix(
                RequestMix::new(rule.decided_after_bytes, rule.large_request_bytes, rule.min_large_share)
                    .with_max_committed_bytes(rule.max_committed_bytes.unwrap_or(u64::MAX)),
            ),
            None => tier,
        })
    }
}

fn config_policy(path: &PathBuf) -> Result<Policy> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: ConfigFile = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let defaults = AllocationSizes::default();
    let sizes = AllocationSizes::new(
        file.device_block_initial.unwrap_or(defaults.device_initial),
        file.device_block_max.unwrap_or(defaults.device_max),
        file.host_block_initial.unwrap_or(defaults.host_initial),
        file.host_block_max.unwrap_or(defaults.host_max),
    );
    let base = AllocatorConfig::default();
    let mut config = base
        .clone()
        .with_sizes(sizes)
        .with_max_memory_blocks(file.max_memory_blocks.unwrap_or(base.max_memory_blocks))
        .with_dedicated_threshold(file.dedicated_threshold.unwrap_or(base.dedicated_threshold))
        .with_max_empty_blocks_per_pool(
            file.max_empty_blocks_per_pool.unwrap_or(base.max_empty_blocks_per_pool),
        )
        .with_keep_blocks_within_peak(file.keep_blocks_within_peak.unwrap_or(base.keep_blocks_within_peak));
    if let Some(heap) = file.virtual_heap {
        let mut heap_config = VirtualHeapConfig::default();
        if let Some(size) = heap.reserve_size {
            heap_config = heap_config.with_reserve_size(size);
        }
        if let Some(granularity) = heap.min_granularity {
            heap_config = heap_config.with_min_granularity(granularity);
        }
        if let Some(on) = heap.growing_series {
            heap_config = heap_config.with_growing_series(on);
        }
        if let Some(bytes) = heap.small_below_bytes {
            heap_config = heap_config.with_small_below(bytes);
        }
        if let Some(bytes) = heap.page_size {
            heap_config = heap_config.with_page_size(bytes);
        }
        if let Some(tiers) = &heap.tiers {
            let tiers = tiers.iter().map(TierFile::tier).collect::<Result<Vec<_>>>();
            heap_config =
                heap_config.with_tiers(tiers.with_context(|| format!("{}: [virtual_heap]", path.display()))?);
        }
        let release = release_policy(&heap).with_context(|| format!("{}: [virtual_heap]", path.display()))?;
        heap_config = heap_config.with_release(release);
        config = config.with_virtual_heap(heap_config);
    }
    Ok(Policy { name: "config", description: "from --config", config })
}

/// The release policy a `[virtual_heap]` table asks for. The settings of `peak-slack` (the heap's default policy)
/// apply to it whether or not `release` names it, and the ones left out keep `PeakSlack::default()`'s values; a
/// setting of another policy than the one named, and a fraction that is negative or not a number, are errors rather
/// than ignored. `spare_until_allocated` may also be `inf`, which keeps the spare for good (as `f64::INFINITY` does
/// in `PeakSlack`).
fn release_policy(heap: &VirtualHeapFile) -> Result<Arc<dyn ReleasePolicy>> {
    let fractions = [
        ("slack", heap.slack, false),
        ("max_ahead_fraction", heap.max_ahead_fraction, false),
        ("retain_live_fraction", heap.retain_live_fraction, false),
        ("spare_until_allocated", heap.spare_until_allocated, true),
    ];
    for (name, value, infinite) in fractions {
        if let Some(value) = value
            && !((value.is_finite() || infinite) && value >= 0.0)
        {
            let or_inf = if infinite { " (or inf)" } else { "" };
            bail!("{name} must be a number of 0 or more{or_inf}, not {value}");
        }
    }
    let peak_slack_settings = heap.slack.is_some()
        || heap.max_ahead_fraction.is_some()
        || heap.min_spare_bytes.is_some()
        || heap.spare_until_allocated.is_some()
        || heap.spare_until_allocations.is_some()
        || heap.loading_run.is_some()
        || heap.loading_ahead_bytes.is_some()
        || heap.spare_ahead_below_bytes.is_some();
    let retain_settings = heap.retain_bytes.is_some() || heap.retain_live_fraction.is_some();
    // Built before the settings are checked against it, so that an unknown name is reported as such first.
    let release = heap.release.as_deref().unwrap_or("peak-slack");
    let policy: Arc<dyn ReleasePolicy> = match release {
        "peak-slack" => {
            let defaults = PeakSlack::default();
            Arc::new(PeakSlack {
                slack: heap.slack.unwrap_or(defaults.slack),
                max_ahead_fraction: heap.max_ahead_fraction.unwrap_or(defaults.max_ahead_fraction),
                min_spare_bytes: heap.min_spare_bytes.unwrap_or(defaults.min_spare_bytes),
                spare_until_allocated: heap.spare_until_allocated.unwrap_or(defaults.spare_until_allocated),
                spare_until_allocations: heap
                    .spare_until_allocations
                    .unwrap_or(defaults.spare_until_allocations),
                loading_run: heap.loading_run.unwrap_or(defaults.loading_run),
                loading_ahead_bytes: heap.loading_ahead_bytes.unwrap_or(defaults.loading_ahead_bytes),
                spare_ahead_below_bytes: heap
                    .spare_ahead_below_bytes
                    .unwrap_or(defaults.spare_ahead_below_bytes),
            })
        }
        "immediate" => Arc::new(ReleaseImmediately),
        "retain" => Arc::new(RetainEmpty {
            bytes: heap.retain_bytes.unwrap_or(64 << 20),
            live_fraction: heap.retain_live_fraction.unwrap_or(0.05),
        }),
        other => bail!("unknown release policy {other:?} (peak-slack, immediate or retain)"),
    };
    if peak_slack_settings && release != "peak-slack" {
        bail!(
            "slack, max_ahead_fraction, min_spare_bytes, spare_until_allocated, spare_until_allocations, loading_run, \
             loading_ahead_bytes and spare_ahead_below_bytes are settings of release = \"peak-slack\""
        );
    }
    if retain_settings && release != "retain" {
        bail!("retain_bytes and retain_live_fraction are settings of release = \"retain\"");
    }
    Ok(policy)
}

/// One row of the results, as `--json` writes it.
#[derive(Debug, Serialize)]
struct Row {
    name: String,
    policy: String,
    allocations: u64,
    /// Allocations the allocator refused (out of memory or blocks): the figures leave them out.
    refused: u64,
    peak_live_bytes: u64,
    peak_committed_bytes: u64,
    overhead: f64,
    driver_ops: u64,
    /// Virtual heaps (zero in block mode): the pages the driver operations mapped (at each address), the physical
    /// pages they created, the pages unmapped and the physical pages released: a driver that maps page by page
    /// (CUDA) pays per page (`scripts/check_placements.py --handles`).
    pages_mapped: u64,
    pages_created: u64,
    pages_unmapped: u64,
    pages_released: u64,
    pytorch_peak_reserved_bytes: Option<u64>,
    pytorch_overhead: Option<f64>,
    pytorch_segment_ops: Option<u64>,
    ops_per_sec: f64,
    /// The first replay's throughput (with `--repeat`, the others replay the trace decoded once, in memory).
    first_ops_per_sec: f64,
    /// When the committed bytes first reached their peak, in a virtual heap (null in block mode): the bytes of
    /// live allocations, the free bytes of pages they partly use (placement), and the pages none uses (kept or
    /// mapped ahead by the release policy). The three add up to `peak_committed_bytes`.
    at_peak_live_bytes: Option<u64>,
    at_peak_partly_used_bytes: Option<u64>,
    at_peak_empty_bytes: Option<u64>,
}

fn chosen_policies(args: &ReplayArgs) -> Result<Vec<Policy>> {
    let mut chosen = match args.policy.as_deref() {
        None if args.config.is_some() => Vec::new(),
        None => policies().into_iter().take(1).collect(),
        Some("all") => policies(),
        Some(name) => match policy(name) {
            Some(policy) => vec![policy],
            None => {
                let names: Vec<_> = policies().iter().map(|p| p.name).collect();
                bail!("unknown policy {name:?}; known: {}, all", names.join(", "));
            }
        },
    };
    if let Some(path) = &args.config {
        chosen.push(config_policy(path)?);
    }
    Ok(chosen)
}

/// Replays one trace under one policy, reading it as it goes; the events read are also kept in `keep`, if given.
fn replay_one(
    path: &PathBuf,
    policy: &Policy,
    placements: Option<&PathBuf>,
    mut keep: Option<&mut Vec<Event>>,
) -> Result<ReplayResult> {
    let mut trace = memcarve_trace::open(path)?;
    let mut replayer = Replayer::new(policy)?;
    let log: Option<std::rc::Rc<std::cell::RefCell<BufWriter<File>>>> = match placements {
        Some(out) => {
            let file = File::create(out).with_context(|| format!("creating {}", out.display()))?;
            let mut writer = BufWriter::new(file);
            writeln!(writer, "event,id,offset,size")?;
            Some(std::rc::Rc::new(std::cell::RefCell::new(writer)))
        }
        None => None,
    };
    if let Some(log) = &log {
        let log = std::rc::Rc::clone(log);
        replayer = replayer.with_placements(move |placement: Placement| {
            let _ = writeln!(log.borrow_mut(), "{placement}");
        });
    }
    let started = Instant::now();
    let mut progress: Option<ProgressBar> = None;
    let file = trace.file().to_string();
    let events = trace.by_ref().inspect(|event| {
        if let (Ok(event), Some(keep)) = (event, keep.as_mut()) {
            keep.push(event.clone());
        }
    });
    replayer.replay_all(events, BATCH, |done| {
        if progress.is_none() && started.elapsed() > Duration::from_secs(1) {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            progress = Some(bar);
        }
        if let Some(bar) = &progress {
            bar.set_message(format!("{file}: replaying with {}: {done} events", policy.name));
            bar.tick();
        }
    })?;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    if let Some(log) = &log {
        log.borrow_mut().flush().context("writing the placement log")?;
    }
    Ok(replayer.finish(trace.summary().pytorch))
}

/// Replays one trace under one policy `repeat` times (the placement log, if any, written the first time): the
/// first result, with the median replay time of all, and the first replay's throughput. The first replay reads
/// the trace as it goes and keeps the events; the others replay those, in memory (reading is not timed either way,
/// but decoding it again before each replay took time and left the caches to the decoder).
fn replay_repeated(
    path: &PathBuf,
    policy: &Policy,
    placements: Option<&PathBuf>,
    repeat: u32,
) -> Result<(ReplayResult, f64)> {
    let mut events = Vec::new();
    let mut first = replay_one(path, policy, placements, (repeat > 1).then_some(&mut events))?;
    let first_ops_per_sec = first.ops_per_sec();
    let mut times = vec![first.replay_time];
    for _ in 1..repeat {
        let mut replayer = Replayer::new(policy)?;
        replayer.replay(&events);
        let again = replayer.finish(first.pytorch);
        if !first.same_outcome(&again) {
            bail!("a repeated replay came out differently: {again:?} after {first:?}");
        }
        times.push(again.replay_time);
    }
    times.sort_unstable();
    first.replay_time = times[times.len() / 2];
    Ok((first, first_ops_per_sec))
}

/// Runs `memcarve replay`.
pub fn run(args: &ReplayArgs) -> Result<()> {
    let chosen = chosen_policies(args)?;
    if args.placements.is_some() && (args.traces.len() != 1 || chosen.len() != 1) {
        bail!("--placements needs exactly one trace and one policy");
    }
    let mut rows = Vec::new();
    for path in &args.traces {
        for policy in &chosen {
            let (result, first_ops_per_sec) =
                replay_repeated(path, policy, args.placements.as_ref(), args.repeat)
                    .with_context(|| format!("replaying {} with {}", path.display(), policy.name))?;
            let name =
                path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into());
            let pytorch = result.pytorch;
            rows.push(Row {
                name,
                policy: result.policy.clone(),
                allocations: result.allocations,
                refused: result.failures,
                peak_live_bytes: result.peak_live_bytes,
                peak_committed_bytes: result.peak_committed_bytes,
                overhead: result.overhead(),
                driver_ops: result.driver_ops,
                pages_mapped: result.pages.mapped,
                pages_created: result.pages.created,
                pages_unmapped: result.pages.unmapped,
                pages_released: result.pages.released,
                pytorch_peak_reserved_bytes: pytorch.map(|p| p.peak_reserved_bytes),
                pytorch_overhead: pytorch.and_then(|p| p.overhead(result.peak_live_bytes)),
                pytorch_segment_ops: pytorch.map(|p| p.segment_ops),
                ops_per_sec: result.ops_per_sec(),
                first_ops_per_sec,
                at_peak_live_bytes: result.peak_split.map(|split| split.live_bytes),
                at_peak_partly_used_bytes: result.peak_split.map(|split| split.partly_used_bytes),
                at_peak_empty_bytes: result.peak_split.map(|split| split.empty_bytes),
            });
            if result.failures > 0 {
                eprintln!(
                    "memcarve: {} allocations of {} were refused under {}",
                    result.failures,
                    path.display(),
                    policy.name
                );
            }
        }
    }
    if let Some(out) = &args.json {
        let json = serde_json::json!({ "traces": rows });
        std::fs::write(out, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    print_table(&rows);
    Ok(())
}

fn print_table(rows: &[Row]) {
    let width = rows.iter().map(|row| row.name.len()).max().unwrap_or(0).max("trace".len());
    println!(
        "{:<width$} {:<10} {:>9} {:>12} {:>14} {:>8} {:>10} {:>16} {:>8} {:>8} {:>10}",
        "trace",
        "policy",
        "allocs",
        "peak live",
        "peak committed",
        "overhead",
        "driver ops",
        "pytorch reserved",
        "pt over",
        "pt ops",
        "Mops/s"
    );
    for row in rows {
        let opt = |value: Option<String>| value.unwrap_or_else(|| "-".into());
        println!(
            "{:<width$} {:<10} {:>9} {:>8.1} MiB {:>10.1} MiB {:>8.3} {:>10} {:>16} {:>8} {:>8} {:>10.2}",
            row.name,
            row.policy,
            row.allocations,
            row.peak_live_bytes as f64 / MIB,
            row.peak_committed_bytes as f64 / MIB,
            row.overhead,
            row.driver_ops,
            opt(row.pytorch_peak_reserved_bytes.map(|b| format!("{:.1} MiB", b as f64 / MIB))),
            opt(row.pytorch_overhead.map(|o| format!("{o:.3}"))),
            opt(row.pytorch_segment_ops.map(|o| o.to_string())),
            row.ops_per_sec / 1e6,
        );
    }
}
