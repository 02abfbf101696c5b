//! Issue 7's goal, measured: for each trace, the default policy's peak committed bytes against the peak live
//! bytes (at most 1.05 ×), its driver operations against PyTorch's segment operations in the same snapshot (at
//! most 1.5 ×, rounded down) and its replay throughput (at least 5 M operations per second).
//!
//! `cargo run --release -p memcarve-benches --bin replay-goal [-- [--runs N] [--repeat N] [--policy NAME] [--each PART]
//! TRACE...]`
//!
//! Without traces it takes `traces/*.pickle*` and, where it exists, `../shared/traces/gpt2_generate.pickle.gz`.
//! Every trace is decoded once, before anything is timed; then `--runs` passes (default 3) go over all the traces
//! one after another, each replaying every trace `--repeat` times (default 5) on fresh allocators and taking the
//! median replay time, so that a slow moment of the machine falls on one pass rather than on one trace. A trace's
//! throughput is the median of its passes. The overheads and operations are the same in every replay (checked).
//! Prints one markdown row per trace; the last line is `goal met on N of M traces`. With `--each PART`, every replay's
//! throughput, in the order they ran, goes to stderr for the traces whose name contains PART, a line per pass: a
//! short replay warms up over a pass's first replays (docs/BENCHMARKS.md, "Thirty-sixth session").

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use memcarve_trace::model::{Event, PyTorchFigures};
use memcarve_trace::replay::{Policy, ReplayResult, Replayer, policy};

/// A trace decoded once, with what each pass measured.
struct Loaded {
    name: String,
    events: Vec<Event>,
    pytorch: Option<PyTorchFigures>,
    /// The first replay's result, to compare every later one with.
    first: Option<ReplayResult>,
    /// Per pass: the median replay time.
    times: Vec<Duration>,
}

struct Options {
    runs: usize,
    repeat: usize,
    policy: Policy,
    traces: Vec<PathBuf>,
    /// Traces whose name contains this have every replay's throughput printed.
    each: Option<String>,
}

fn usage(message: &str) -> String {
    format!("{message}\nusage: replay-goal [--runs N] [--repeat N] [--policy NAME] [--each PART] [TRACE...]")
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        runs: 3,
        repeat: 5,
        policy: policy("vmm").ok_or("no default policy")?,
        traces: vec![],
        each: None,
    };
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| usage(&format!("{flag} needs a value")));
        match arg.as_str() {
            "--runs" | "--repeat" => {
                let count: usize =
                    value(&arg)?.parse().map_err(|_| usage(&format!("{arg} needs a number")))?;
                if count == 0 {
                    return Err(usage(&format!("{arg} must be at least 1")));
                }
                if arg == "--runs" {
                    options.runs = count;
                } else {
                    options.repeat = count;
                }
            }
            "--policy" => {
                let name = value(&arg)?;
                options.policy = policy(&name).ok_or_else(|| usage(&format!("unknown policy {name}")))?;
            }
            "--each" => options.each = Some(value(&arg)?),
            flag if flag.starts_with("--") => return Err(usage(&format!("unknown option {flag}"))),
            _ => options.traces.push(PathBuf::from(arg)),
        }
    }
    if options.traces.is_empty() {
        options.traces = default_traces().map_err(|error| format!("listing the shipped traces: {error}"))?;
    }
    Ok(options)
}

/// The shipped traces, and gpt2_generate from the shared folder where it is.
fn default_traces() -> std::io::Result<Vec<PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut traces: Vec<PathBuf> = std::fs::read_dir(root.join("traces"))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.file_name().is_some_and(|name| name.to_string_lossy().contains(".pickle")))
        .collect();
    traces.sort();
    let shared = root.join("../shared/traces/gpt2_generate.pickle.gz");
    if shared.exists() {
        traces.push(shared);
    }
    Ok(traces)
}

fn load(path: &Path) -> Result<Loaded, String> {
    let mut trace = memcarve_trace::open(path).map_err(|error| error.to_string())?;
    let events = trace.by_ref().collect::<Result<Vec<Event>, _>>().map_err(|error| error.to_string())?;
    let name =
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let name = name.split(".pickle").next().unwrap_or_default().to_string();
    Ok(Loaded { name, events, pytorch: trace.summary().pytorch, first: None, times: vec![] })
}

/// Replays `trace` `repeat` times on fresh allocators; the median replay time. With `each`, prints every replay's
/// throughput to stderr first.
fn pass(trace: &mut Loaded, policy: &Policy, repeat: usize, each: bool) -> Result<Duration, String> {
    let mut times = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let mut replayer = Replayer::new(policy).map_err(|error| error.to_string())?;
        replayer.replay(&trace.events);
        let result = replayer.finish(trace.pytorch);
        match &trace.first {
            Some(first) if !first.same_outcome(&result) => {
                return Err(format!(
                    "{}: a replay came out differently: {result:?} after {first:?}",
                    trace.name
                ));
            }
            Some(_) => {}
            None => trace.first = Some(result.clone()),
        }
        times.push(result.replay_time);
    }
    if each && let Some(first) = &trace.first {
        let ops = (first.allocations + first.frees) as f64;
        let speeds: Vec<String> =
            times.iter().map(|time| format!("{:.2}", ops / time.as_secs_f64() / 1e6)).collect();
        eprintln!("{}: {} M ops/s", trace.name, speeds.join(" "));
    }
    times.sort_unstable();
    Ok(times[times.len() / 2])
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn run(options: &Options) -> Result<(), String> {
    let mut traces = options.traces.iter().map(|path| load(path)).collect::<Result<Vec<Loaded>, String>>()?;
    for _ in 0..options.runs {
        for trace in &mut traces {
            let each = options.each.as_deref().is_some_and(|part| trace.name.contains(part));
            let time = pass(trace, &options.policy, options.repeat, each)?;
            trace.times.push(time);
        }
    }
    println!(
        "policy {}, {} passes of {} replays each (issue 7's goal: overhead <= 1.05, driver operations <= 1.5 x \
         PyTorch's segment operations, >= 5 M operations per second)",
        options.policy.name, options.runs, options.repeat
    );
    println!("| trace | overhead | driver ops (limit) | Mops/s (each pass) | goal |");
    println!("| --- | --- | --- | --- | --- |");
    let mut met = 0;
    for trace in &traces {
        let first = trace.first.as_ref().ok_or("no replay")?;
        let ops = (first.allocations + first.frees) as f64;
        let mut speeds: Vec<f64> = trace.times.iter().map(|time| ops / time.as_secs_f64() / 1e6).collect();
        let shown = speeds.iter().map(|speed| format!("{speed:.2}")).collect::<Vec<_>>().join(" / ");
        let speed = median(&mut speeds);
        let limit = first.pytorch.map(|pytorch| pytorch.segment_ops * 3 / 2);
        let mut missed = Vec::new();
        // A refused allocation leaves its bytes out of every figure: no goal is met around it.
        if first.failures > 0 {
            missed.push("refused allocations");
        }
        if first.overhead() > 1.05 {
            missed.push("overhead");
        }
        if limit.is_none_or(|limit| first.driver_ops > limit) {
            missed.push("operations");
        }
        if speed < 5.0 {
            missed.push("throughput");
        }
        let goal = if missed.is_empty() {
            met += 1;
            "met".to_string()
        } else {
            format!("**not met** ({})", missed.join(", "))
        };
        let limit = limit.map_or_else(|| "no PyTorch figures".to_string(), |limit| limit.to_string());
        println!(
            "| {} | {:.3} | {} ({limit}) | {speed:.1} ({shown}) | {goal} |",
            trace.name,
            first.overhead(),
            first.driver_ops
        );
    }
    println!("goal met on {met} of {} traces", traces.len());
    Ok(())
}

fn main() -> ExitCode {
    match parse(std::env::args().skip(1)).and_then(|options| run(&options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("replay-goal: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Result<Options, String> {
        parse(args.iter().map(|arg| arg.to_string()))
    }

    #[test]
    fn options_are_read_and_bad_ones_are_errors_naming_them() {
        let options =
            parsed(&["--runs", "2", "--repeat", "7", "--policy", "blocks", "--each", "tiny", "a.pickle"]);
        let options = options.unwrap_or_else(|error| panic!("{error}"));
        assert_eq!((options.runs, options.repeat, options.policy.name), (2, 7, "blocks"));
        assert_eq!(options.traces, vec![PathBuf::from("a.pickle")]);
        assert_eq!(options.each.as_deref(), Some("tiny"));
        assert_eq!(parsed(&[]).map(|options| options.each), Ok(None));
        for (args, named) in [
            (&["--runs", "0"][..], "--runs must be at least 1"),
            (&["--repeat", "x"], "--repeat needs a number"),
            (&["--runs"], "--runs needs a value"),
            (&["--policy", "nope"], "unknown policy nope"),
            (&["--each"], "--each needs a value"),
            (&["--fast"], "unknown option --fast"),
        ] {
            let error = parsed(args).err().unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(error.starts_with(named), "{args:?}: {error}");
        }
    }

    #[test]
    fn a_missing_trace_is_an_error_naming_it() {
        let error = load(Path::new("no/such/trace.pickle")).err().unwrap_or_else(|| panic!("loaded"));
        assert!(error.contains("no/such/trace.pickle"), "{error}");
    }
}
