//! The `memcarve` binary end to end: replay of a shipped trace, the JSON and placement outputs, and bad input.

#![allow(clippy::unwrap_used, reason = "test helpers outside #[test] functions unwrap too")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use assert_cmd::Command;

fn trace(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces").join(name)
}

fn memcarve() -> Command {
    Command::cargo_bin("memcarve").unwrap()
}

/// Policies `replay --help` lists.
fn memcarve_policy_count() -> usize {
    let help = memcarve().args(["replay", "--help"]).output().unwrap();
    let text = String::from_utf8(help.stdout).unwrap();
    let policies = text.lines().skip_while(|l| !l.starts_with("Policies:")).skip(1);
    policies.filter(|l| l.starts_with("  ") && l.contains(": ")).count()
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memcarve-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Replays `trace` under the default policy and under `settings`, written to `config`: the two JSON rows, the
/// default's first.
fn default_and_config(
    config: &std::path::Path,
    settings: &str,
    trace: PathBuf,
) -> (serde_json::Value, serde_json::Value) {
    std::fs::write(config, settings).unwrap();
    let args = ["--policy".as_ref(), "vmm".as_ref(), "--config".as_ref(), config.as_os_str()];
    let (_, rows) = replay_json_at(args, &[trace]);
    let row = |policy: &str| rows.iter().find(|row| row["policy"] == policy).unwrap().clone();
    (row("vmm"), row("config"))
}

/// `memcarve replay ARGS --json FILE TRACES...`, which must succeed: its stdout and the JSON rows.
fn replay_json(args: &[&str], traces: &[&str]) -> (String, Vec<serde_json::Value>) {
    let paths: Vec<PathBuf> = traces.iter().map(|name| trace(name)).collect();
    replay_json_at(args.iter().map(std::ffi::OsStr::new), &paths)
}

/// `replay_json` for traces named by path, with arguments that may be paths too.
fn replay_json_at<'a>(
    args: impl IntoIterator<Item = &'a std::ffi::OsStr>,
    paths: &[PathBuf],
) -> (String, Vec<serde_json::Value>) {
    // Tests run in parallel: each call writes its own file.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let json = temp(&format!("replay-{call}.json"));
    let mut command = memcarve();
    command.arg("replay").args(args).arg("--json").arg(&json).args(paths);
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (String::from_utf8(output.stdout).unwrap(), value["traces"].as_array().unwrap().clone())
}

#[test]
fn replay_prints_one_row_per_policy_and_writes_json() {
    let (stdout, traces) = replay_json(&["--policy", "all"], &["resnet50_train.pickle.gz"]);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("resnet50_train")).collect();
    let policies = memcarve_policy_count();
    assert_eq!(rows.len(), policies, "{stdout}");
    assert_eq!(traces.len(), policies);
    for row in &traces {
        assert_eq!(row["allocations"], 3552);
        assert_eq!(row["pytorch_segment_ops"], 122);
        let overhead = row["overhead"].as_f64().unwrap();
        assert!((1.0..2.0).contains(&overhead), "{row}");
        assert!(row["driver_ops"].as_u64().unwrap() > 0);
    }
    let default = traces.iter().find(|row| row["policy"] == "vmm").unwrap();
    assert!(default["overhead"].as_f64().unwrap() < default["pytorch_overhead"].as_f64().unwrap());
}

#[test]
fn repeated_replay_reports_the_same_figures_once() {
    let (_, once) = replay_json(&[], &["bert_infer.pickle.xz"]);
    let (stdout, thrice) = replay_json(&["--repeat", "3"], &["bert_infer.pickle.xz"]);
    assert_eq!(thrice.len(), 1, "one row per trace and policy, however many repeats: {stdout}");
    for field in ["allocations", "peak_live_bytes", "peak_committed_bytes", "driver_ops"] {
        assert_eq!(once[0][field], thrice[0][field], "{field}");
    }
    assert!(thrice[0]["ops_per_sec"].as_f64().unwrap() > 0.0);
    let zero =
        memcarve().args(["replay", "--repeat", "0"]).arg(trace("tiny_expandable_segments.pickle")).output();
    assert!(!zero.unwrap().status.success(), "zero repeats is refused");
}

/// The placement log lets anyone check the replay: live allocations never overlap, always lie in mapped
/// ranges, and committed bytes and driver operations add up.
#[test]
fn placement_log_checks_out_independently() {
    let log = temp("placements.csv");
    let output = memcarve()
        .args(["replay", "--policy", "vmm", "--placements"])
        .arg(&log)
        .arg(trace("resnet50_train.pickle.gz"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("event,id,offset,size"));
    // Mapped addresses by page (the simulated H200's 2 MiB virtual-memory granularity): a run may be unmapped
    // in parts, so pages, not runs, are what must match. Each mapped page shows a physical page (`pages`
    // lines); committed memory is the physical pages shown at one address or more.
    const PAGE: u64 = 2 << 20;
    let mut shows: BTreeMap<u64, u64> = BTreeMap::new(); // address page -> physical page
    let mut mappings: BTreeMap<u64, u64> = BTreeMap::new(); // physical page -> addresses showing it
    let mut users: BTreeMap<u64, (u64, u64)> = BTreeMap::new(); // physical page -> (address page, users)
    let mut unassigned: BTreeSet<u64> = BTreeSet::new(); // mapped pages whose `pages` line is still to come
    let mut live: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut by_id: BTreeMap<u64, u64> = BTreeMap::new();
    let (mut ops, mut peak) = (0u64, 0u64);
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let number = |i: usize| fields[i].parse::<u64>().unwrap();
        match fields[0] {
            "map" => {
                let (offset, size) = (number(2), number(3));
                assert!(offset % PAGE == 0 && size % PAGE == 0 && unassigned.is_empty());
                for page in (offset..offset + size).step_by(PAGE as usize) {
                    assert!(
                        !shows.contains_key(&page) && unassigned.insert(page),
                        "page {page} mapped twice"
                    );
                }
                ops += 1;
            }
            "pages" => {
                let (first, offset, count) = (number(1), number(2), number(3));
                for index in 0..count {
                    let page = offset + index * PAGE;
                    assert!(unassigned.remove(&page), "pages line for page {page}, not just mapped");
                    shows.insert(page, first + index);
                    *mappings.entry(first + index).or_default() += 1;
                }
                peak = peak.max(mappings.len() as u64 * PAGE);
            }
            "unmap" => {
                let (offset, size) = (number(2), number(3));
                for page in (offset..offset + size).step_by(PAGE as usize) {
                    let physical = shows.remove(&page).expect("unmapped while not mapped");
                    let count = mappings.get_mut(&physical).unwrap();
                    *count -= 1;
                    if *count == 0 {
                        mappings.remove(&physical);
                    }
                    assert!(
                        users.get(&physical).is_none_or(|&(at, _)| at != page),
                        "unmapped under a live allocation"
                    );
                }
                ops += 1;
            }
            "alloc" => {
                let (id, offset, size) = (number(1), number(2), number(3));
                if let Some((&o, &(s, _))) = live.range(..offset + size).next_back() {
                    assert!(o + s <= offset, "allocation {id} overlaps a live one");
                }
                for page in (offset / PAGE * PAGE..offset + size).step_by(PAGE as usize) {
                    let physical = *shows
                        .get(&page)
                        .unwrap_or_else(|| panic!("allocation {id} on unmapped page {page}"));
                    let user = users.entry(physical).or_insert((page, 0));
                    assert_eq!(
                        user.0, page,
                        "allocation {id} shares physical page {physical} with another address"
                    );
                    user.1 += 1;
                }
                live.insert(offset, (size, id));
                by_id.insert(id, offset);
            }
            "free" => {
                let offset = by_id.remove(&number(1)).unwrap();
                let (size, _) = live.remove(&offset).unwrap();
                for page in (offset / PAGE * PAGE..offset + size).step_by(PAGE as usize) {
                    let physical = shows[&page];
                    let user = users.get_mut(&physical).unwrap();
                    user.1 -= 1;
                    if user.1 == 0 {
                        users.remove(&physical);
                    }
                }
            }
            other => panic!("unknown event {other}"),
        }
    }
    let stdout = String::from_utf8(output.stdout).unwrap();
    let row = stdout.lines().find(|l| l.starts_with("resnet50_train")).unwrap();
    assert!(row.contains(&format!(" {ops} ")), "driver ops {ops} recounted from the log: {row}");
    let committed_mib = format!("{:.1} MiB", peak as f64 / (1u64 << 20) as f64);
    assert!(row.contains(&committed_mib), "peak committed {committed_mib} recounted from the log: {row}");
}

#[test]
fn bad_input_is_an_error_naming_the_file() {
    let missing = memcarve().args(["replay", "no/such/trace.pickle"]).output().unwrap();
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("no/such/trace.pickle"), "{stderr}");
    // The operating system's reason, once: the error's message does not repeat its source.
    assert_eq!(stderr.matches("(os error").count(), 1, "{stderr}");
    assert!(stderr.contains("cannot open or read it"), "{stderr}");

    let truncated = temp("truncated.pickle");
    let bytes = std::fs::read(trace("tiny_expandable_segments.pickle")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let output = memcarve().arg("replay").arg(&truncated).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("truncated.pickle"));

    let garbage = temp("garbage.trace");
    std::fs::write(&garbage, "this is not a trace\n").unwrap();
    let output = memcarve().arg("replay").arg(&garbage).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("garbage.trace"));

    let unknown = memcarve()
        .args(["replay", "--policy", "nope"])
        .arg(trace("tiny_expandable_segments.pickle"))
        .output();
    assert!(!unknown.unwrap().status.success());
}

/// `memcarve replay --config FILE` on tiny_expandable_segments, with `settings` written to FILE.
fn replay_with_config(config: &std::path::Path, settings: &str) -> std::process::Output {
    std::fs::write(config, settings).unwrap();
    let mut command = memcarve();
    command.arg("replay").arg("--config").arg(config).arg(trace("tiny_expandable_segments.pickle"));
    command.output().unwrap()
}

#[test]
fn config_file_becomes_a_policy() {
    let config = temp("config.toml");
    let output = replay_with_config(
        &config,
        "max_empty_blocks_per_pool = 0\n[virtual_heap]\nrelease = \"immediate\"\n",
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains(" config "));
    let output = replay_with_config(&config, "no_such_field = 1\n");
    assert!(!output.status.success(), "unknown settings are refused");

    // The default release policy's settings apply without `release` naming it. With the spare's pages ahead for
    // every request (as before the twenty-third session), tiny_expandable_segments commits 334 MiB; a smaller
    // spare commits less ahead (330 MiB), and so does the spare's end at 0 times the peak (a heap that is never
    // young maps no spare ahead: 330 MiB too).
    let committed = |settings: &str| {
        let settings = format!("[virtual_heap]\nspare_ahead_below_bytes = {}\n{settings}\n", u64::MAX);
        let (_, row) = default_and_config(&config, &settings, trace("tiny_expandable_segments.pickle"));
        row["peak_committed_bytes"].as_u64().unwrap()
    };
    let spare_ahead = committed("");
    for settings in ["min_spare_bytes = 8388608", "spare_until_allocated = 0"] {
        assert!(committed(settings) < spare_ahead, "{settings}: {spare_ahead}");
    }

    // `inf` keeps the spare for good, as before the spare ended: with the spare's pages ahead for every request too,
    // vocoder_infer (186 MiB) commits 1.086 × its peak live bytes again instead of the default's 1.032 ×
    // (docs/BENCHMARKS.md, "Twenty-first session").
    let settings =
        format!("[virtual_heap]\nspare_until_allocated = inf\nspare_ahead_below_bytes = {}\n", u64::MAX);
    let (default, spare) = default_and_config(&config, &settings, trace("vocoder_infer.pickle.xz"));
    let overhead = |row: &serde_json::Value| row["overhead"].as_f64().unwrap();
    assert!(overhead(&spare) > 1.08 && overhead(&default) < 1.05, "{default} {spare}");

    // `spare_until_allocations` ends the spare past that many allocations as well: t5_tiny_greedy_summarize, a
    // 123 MiB heap that is still young by the bytes it has allocated when its live bytes peak, 25,000 events in,
    // keeps 10 MiB of empty pages at that peak with the spare (1.108 × its peak live bytes) and none without it
    // (1.043 ×; docs/BENCHMARKS.md, "Fortieth session").
    let settings = "[virtual_heap]\nspare_until_allocations = 5000\n";
    let (default, counted) =
        default_and_config(&config, settings, trace("t5_tiny_greedy_summarize.pickle.xz"));
    assert!(overhead(&default) > 1.1 && overhead(&counted) < 1.05, "{default} {counted}");

    // `loading_ahead_bytes = 0` maps nothing ahead past the budget while a model loads: resnet34_infer_mid maps
    // its weights in more pieces, 20 operations against the default's 17 (limit 19).
    let settings = "[virtual_heap]\nloading_ahead_bytes = 0\n";
    let (default, off) = default_and_config(&config, settings, trace("resnet34_infer_mid.pickle.xz"));
    let ops = |row: &serde_json::Value| row["driver_ops"].as_u64().unwrap();
    assert!(ops(&off) > 19 && ops(&default) <= 19, "{default} {off}");

    // `small_below_bytes = 0` places small requests among the others again: resnet34_infer_mid's BatchNorm
    // counters pin pages among the weights freed as the model is converted to half precision, 1.113 × its peak
    // live bytes against the default's 1.041 ×.
    let settings = "[virtual_heap]\nsmall_below_bytes = 0\n";
    let (default, mixed) = default_and_config(&config, settings, trace("resnet34_infer_mid.pickle.xz"));
    assert!(overhead(&mixed) > 1.1 && overhead(&default) < 1.05, "{default} {mixed}");

    // `page_size` sets the heap's page: in pages of 8 MiB, tiny_expandable_segments commits a whole number of them
    // (the default's peak, in pages of 2 MiB, is not one).
    let settings = "[virtual_heap]\npage_size = 8388608\n";
    let (default, coarse) = default_and_config(&config, settings, trace("tiny_expandable_segments.pickle"));
    let committed = |row: &serde_json::Value| row["peak_committed_bytes"].as_u64().unwrap();
    assert!(
        committed(&coarse) % (8 << 20) == 0 && committed(&default) % (8 << 20) != 0,
        "{default} {coarse}"
    );

    // `[[virtual_heap.tiers]]` opens tiers of larger pages: with one of 8 MiB pages from 64 MiB committed,
    // tiny_expandable_segments (a 334 MiB heap, which the default's tier from 16 GiB never reaches) moves its
    // working set onto it, and the first tier gives pages back on the way (the default unmaps none: 5 operations
    // against 8); `tiers = []` has none, as the default has here.
    let tiered = "[virtual_heap]\n[[virtual_heap.tiers]]\nopens_at_bytes = 67108864\npage_size = 8388608\n";
    let (default, moved) = default_and_config(&config, tiered, trace("tiny_expandable_segments.pickle"));
    let unmapped = |row: &serde_json::Value| row["pages_unmapped"].as_u64().unwrap();
    let pages = |row: &serde_json::Value| row["pages_mapped"].as_u64().unwrap();
    assert!(
        unmapped(&moved) > 0 && unmapped(&default) == 0 && ops(&moved) > ops(&default),
        "{default} {moved}"
    );
    let (default, none) =
        default_and_config(&config, "[virtual_heap]\ntiers = []\n", trace("tiny_expandable_segments.pickle"));
    assert_eq!((pages(&none), ops(&none)), (pages(&default), ops(&default)));

    // A tier with a `request_mix` rule and no threshold opens at the request that brings the heap's allocated
    // bytes to 256 MiB if requests of 32 MiB or more made the share asked of those bytes: tiny_expandable_segments'
    // 300 MiB request makes about 0.94 of them (the tier opens, and that request and those after it are mapped in
    // 8 MiB pages); asked for 0.99, the rule is spent and the heap replays as with no tiers. So it is with
    // `max_committed_bytes` below the 22 MiB the heap committed before that request.
    let mixed = |share: f64, bound: &str| {
        format!(
            "[virtual_heap]\n[[virtual_heap.tiers]]\npage_size = 8388608\nrequest_mix = {{ decided_after_bytes = \
             268435456, large_request_bytes = 33554432, min_large_share = {share}{bound} }}\n"
        )
    };
    for bound in ["", ", max_committed_bytes = 1073741824"] {
        let (default, opened) =
            default_and_config(&config, &mixed(0.9, bound), trace("tiny_expandable_segments.pickle"));
        assert!(pages(&opened) != pages(&default) && ops(&opened) > ops(&default), "{default} {opened}");
    }
    for (share, bound) in [(0.99, ""), (0.9, ", max_committed_bytes = 4194304")] {
        let (default, spent) =
            default_and_config(&config, &mixed(share, bound), trace("tiny_expandable_segments.pickle"));
        assert_eq!((pages(&spent), ops(&spent)), (pages(&default), ops(&default)));
    }

    // Settings that cannot apply are refused, not ignored.
    for (settings, says) in [
        ("page_size = 3145728", "page size must be a power of two"),
        ("[[virtual_heap.tiers]]\nopens_at_bytes = 1\npage_size = 3145728", "tiers need power-of-two pages"),
        (
            "[[virtual_heap.tiers]]\npage_size = 8388608",
            "a tier needs opens_at_bytes, a request_mix, or both",
        ),
        (
            "[[virtual_heap.tiers]]\npage_size = 8388608\nrequest_mix = { decided_after_bytes = 1, \
             large_request_bytes = 1, min_large_share = 2.0 }",
            "a request-mix rule belongs to the first tier",
        ),
        ("slack = -0.5", "slack must be a number of 0 or more"),
        ("max_ahead_fraction = nan", "max_ahead_fraction must be a number of 0 or more"),
        ("spare_until_allocated = -1.0", "spare_until_allocated must be a number of 0 or more"),
        ("spare_until_allocated = nan", "spare_until_allocated must be a number of 0 or more (or inf)"),
        ("release = \"immediate\"\nspare_until_allocated = 8.0", "settings of release = \"peak-slack\""),
        ("release = \"retain\"\nspare_until_allocations = 5000", "settings of release = \"peak-slack\""),
        ("release = \"immediate\"\nloading_ahead_bytes = 0", "settings of release = \"peak-slack\""),
        ("release = \"retain\"\nloading_run = 4", "settings of release = \"peak-slack\""),
        ("release = \"retain\"\nspare_ahead_below_bytes = 0", "settings of release = \"peak-slack\""),
        ("release = \"immediate\"\nretain_bytes = 0", "settings of release = \"retain\""),
        ("release = \"retain\"\nslack = 0.1", "settings of release = \"peak-slack\""),
        ("release = \"bogus\"\nslack = 0.1", "unknown release policy \"bogus\""),
    ] {
        let output = replay_with_config(&config, &format!("[virtual_heap]\n{settings}\n"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(says), "{settings}: {stderr}");
    }
}

/// Issue 7's regression bounds on resnet50_train: the default policy commits at most 1.05 × the peak live bytes
/// and makes at most 1.5 × PyTorch's segment operations (122).
#[test]
fn default_policy_stays_within_memory_and_driver_call_bounds_on_resnet50() {
    let (_, rows) = replay_json(&[], &["resnet50_train.pickle.gz"]);
    let row = &rows[0];
    assert_eq!(row["policy"], "vmm");
    let overhead = row["overhead"].as_f64().unwrap();
    let driver_ops = row["driver_ops"].as_u64().unwrap();
    assert!(overhead <= 1.05, "overhead {overhead}");
    assert!(driver_ops <= 183, "driver operations {driver_ops} (PyTorch: 122)");
}

/// Issue 7's memory and operation goal on the shipped traces that meet it: the default policy commits at most
/// 1.05 × the peak live bytes and makes at most 1.5 × PyTorch's segment operations (gpt2_generate, in
/// ../shared/traces only, has a test of its own; the traces that do not meet it yet, one further down).
#[test]
fn default_policy_meets_the_memory_and_operation_goal_on_every_shipped_trace() {
    let met = [
        "gpt2_medium_ckpt_train.pickle.xz",
        "gpt2_train.pickle.gz",
        "llama_decode.pickle.xz",
        "resnet50_train.pickle.gz",
        "t5_beam_generate.pickle.xz",
        "tiny_expandable_segments.pickle",
        "two_stream_train.pickle.xz",
        "unet_denoise.pickle.xz",
        "vit_train_amp.pickle.xz",
        "moe_train.pickle.xz",
        "bert_finetune_dynamic.pickle.xz",
        "convnext_infer.pickle.xz",
        "detection_infer.pickle.xz",
        "dlrm_train.pickle.xz",
        "llama_hf_generate.pickle.xz",
        "gpt2_beam_generate.pickle.xz",
        "mla_generate.pickle.xz",
        "qwen_sample_generate.pickle.xz",
        "neox_train_accum.pickle.xz",
        "resnet_multiscale_train.pickle.xz",
        "mistral_generate.pickle.xz",
        "t5_train_dynamic.pickle.xz",
        "efficientnet_train.pickle.xz",
        "swin_infer.pickle.xz",
        "llama_prefill_lengths.pickle.xz",
        "llama_partial_finetune.pickle.xz",
        "conv_autoencoder_infer.pickle.xz",
        "serving_continuous_batch.pickle.xz",
        "whisper_decode.pickle.xz",
        "clip_train.pickle.xz",
        "gnn_train.pickle.xz",
        "video_train.pickle.xz",
        "compiled_train.pickle.xz",
        "long_context_train.pickle.xz",
        "offload_train.pickle.xz",
        "lstm_train.pickle.xz",
        "gan_train.pickle.xz",
        "speculative_decode.pickle.xz",
        "cuda_graph_infer.pickle.xz",
        "ssm_scan_train.pickle.xz",
        "tabular_mlp_train.pickle.xz",
        "vae_train.pickle.xz",
        "segmentation_train.pickle.xz",
        "diffusion_train.pickle.xz",
        "distill_train.pickle.xz",
        "lora_finetune.pickle.xz",
        "caption_generate.pickle.xz",
        "detection_train.pickle.xz",
        "sparse_embedding_train.pickle.xz",
        "mae_pretrain.pickle.xz",
        "wav2vec_train.pickle.xz",
        "pointnet_train.pickle.xz",
        "ema_train.pickle.xz",
        "int8_weight_only_decode.pickle.xz",
        "prefetch_stream_infer.pickle.xz",
        "grad_bucket_train.pickle.xz",
        "transformer_xl_train.pickle.xz",
        "nerf_train.pickle.xz",
        "fsdp_gather_train.pickle.xz",
        "lm_1b_train.pickle.xz",
        "llama_1b_generate.pickle.xz",
        "vit_large_train.pickle.xz",
        "lm_2_7b_train.pickle.xz",
        "lm_6_7b_train.pickle.xz",
        "resnet50_bigbatch_infer.pickle.xz",
        "resnet152_bigbatch_train.pickle.xz",
        "deeplab_hires_infer.pickle.xz",
        "roberta_mlm_train.pickle.xz",
        "paged_kv_serving.pickle.xz",
        "conformer_asr_train.pickle.xz",
        "unet3d_volume_train.pickle.xz",
        "vit_huge_bigbatch_infer.pickle.xz",
        "long_prompt_serving.pickle.xz",
        "latent_diffusion_sample.pickle.xz",
        "mobilenet_infer.pickle.xz",
        "dual_stream_infer.pickle.xz",
        "llama_padded_sample_generate.pickle.xz",
        "small_lm_train.pickle.xz",
        "cifar_resnet_train.pickle.xz",
        "minilm_embed_infer.pickle.xz",
        "vit_tiny_train.pickle.xz",
        "mixtral_sample_generate.pickle.xz",
        "static_cache_generate.pickle.xz",
        "knn_retrieval.pickle.xz",
        "gru_translate.pickle.xz",
        "simclr_train.pickle.xz",
        "gaussian_densify_train.pickle.xz",
        "packed_varlen_pretrain.pickle.xz",
        "nmt_transformer_train.pickle.xz",
        "histogram_boosting.pickle.xz",
        "regnet_train_small.pickle.xz",
        "distilgpt2_greedy_generate.pickle.xz",
        "gcn_sparse_train.pickle.xz",
        "kws_conv1d_train.pickle.xz",
        "vocoder_infer.pickle.xz",
        "lraspp_segment_infer.pickle.xz",
        "distilbert_qa_infer.pickle.xz",
        "t5_small_greedy_translate.pickle.xz",
        "efficientnet_infer_small.pickle.xz",
        "squeezenet_infer.pickle.xz",
        "vit_b32_infer.pickle.xz",
        "shufflenet_train_small.pickle.xz",
        "sr_pixelshuffle_infer.pickle.xz",
        "model_sweep_train.pickle.xz",
        "neural_ode_train.pickle.xz",
        "keypoint_rcnn_infer.pickle.xz",
        "eval_copy_train.pickle.xz",
        "teacher_late_distill.pickle.xz",
        "checkpoint_reload_train.pickle.xz",
        "bf16_direct_load_infer.pickle.xz",
        "gpt2_half_short_generate.pickle.xz",
        "two_llms_serving.pickle.xz",
        "vision_lazy_load_infer.pickle.xz",
        "bert_large_half_infer.pickle.xz",
        "sweep_cnn_train.pickle.xz",
        "clip_zero_shot_infer.pickle.xz",
        "t5_fp32_translate.pickle.xz",
        "ensemble_infer.pickle.xz",
        "dit_train.pickle.xz",
        "sam_prompt_infer.pickle.xz",
        "vit_varres_infer.pickle.xz",
        "two_tower_retrieval_train.pickle.xz",
        "perceiver_train.pickle.xz",
        "bart_small_greedy_summarize.pickle.xz",
        "tts_autoregressive_infer.pickle.xz",
        "mobilenet_v2_half_infer.pickle.xz",
        "mnasnet_half_infer.pickle.xz",
        "shufflenet_half_infer.pickle.xz",
        "bloom_small_sample_generate.pickle.xz",
        "bert_base_qa_infer.pickle.xz",
        "googlenet_half_infer.pickle.xz",
        "model_swap_infer.pickle.xz",
        "multi_model_serving.pickle.xz",
        "raft_flow_infer.pickle.xz",
        "resnet34_infer_mid.pickle.xz",
        "resnext_half_infer.pickle.xz",
        "small_decoder_sample_generate.pickle.xz",
        "wide_resnet_half_infer.pickle.xz",
        "regnet_half_infer.pickle.xz",
        "vgg11_bn_half_infer.pickle.xz",
        "efficientnet_b1_half_infer.pickle.xz",
        "mobilenet_v3_train_small.pickle.xz",
        "distilroberta_infer.pickle.xz",
        "t5_small_train.pickle.xz",
        "squeezenet_half_train_eval.pickle.xz",
        "fft_science.pickle.xz",
        "resnet101_half_infer.pickle.xz",
        "mobilenet_v3_large_half_infer.pickle.xz",
        "electra_small_train.pickle.xz",
        "albert_base_infer.pickle.xz",
        "marian_small_generate.pickle.xz",
        "gpt2_small_train_bf16.pickle.xz",
        "resnet18_train_then_half_infer.pickle.xz",
        "lstm_lm_sample_small.pickle.xz",
        "efficientnet_v2s_half_infer.pickle.xz",
        "deberta_small_infer.pickle.xz",
        "llama_tiny_train_bf16.pickle.xz",
        "mobilenet_v3s_train_eval.pickle.xz",
        "blenderbot_small_beam_generate.pickle.xz",
        "gpt_bigcode_small_generate.pickle.xz",
        "resnet50_autocast_bf16_infer.pickle.xz",
        "deit_small_half_infer.pickle.xz",
        "sac_replay_train.pickle.xz",
        "mpnet_sorted_embed_infer.pickle.xz",
        "m2m100_small_beam_generate.pickle.xz",
        "deeplabv3_mobilenet_half_infer.pickle.xz",
        "xlmr_finetune_dynamic_bf16.pickle.xz",
        "regnet_train_val_bf16.pickle.xz",
        "fno_darcy_train.pickle.xz",
        "graph_attention_train.pickle.xz",
        "mlp_mixer_train.pickle.xz",
        "vqvae_hires_train.pickle.xz",
        "vocab_250k_chunked_train.pickle.xz",
        "sr_hires_train.pickle.xz",
        "gp_cholesky_fit.pickle.xz",
        "voxel_cnn_train.pickle.xz",
    ];
    let (_, rows) = replay_json(&[], &met);
    assert_eq!(rows.len(), met.len());
    for row in &rows {
        let name = row["name"].as_str().unwrap();
        let overhead = row["overhead"].as_f64().unwrap();
        let driver_ops = row["driver_ops"].as_u64().unwrap();
        assert_eq!(row["refused"], 0, "{name}: allocations refused");
        assert!(overhead <= 1.05, "{name}: overhead {overhead}");
        let pytorch_ops = row["pytorch_segment_ops"].as_u64().unwrap();
        assert!(
            2 * driver_ops <= 3 * pytorch_ops,
            "{name}: {driver_ops} driver operations, PyTorch {pytorch_ops}"
        );
    }
}

/// `--json` splits a virtual heap's peak committed bytes into live bytes, free bytes of partly used pages and
/// empty pages; block mode has no pages to split. mnasnet_half_infer (141 MiB live) has 6.6 MiB free inside the
/// pages its live allocations use at its peak. With the spare's pages mapped ahead for every request
/// (`spare_ahead_below_bytes` at its largest, as before the twenty-third session), its last growth, a 36.75 MiB
/// activation, leaves 8 MiB of them empty there and it misses the memory goal (1.103 ×); the default meets it.
#[test]
fn replay_json_splits_the_peak_committed_bytes() {
    let (_, rows) = replay_json(&["--policy", "all"], &["mnasnet_half_infer.pickle.xz"]);
    for row in &rows {
        let policy = row["policy"].as_str().unwrap();
        let part = |key: &str| row[key].as_u64();
        let parts =
            [part("at_peak_live_bytes"), part("at_peak_partly_used_bytes"), part("at_peak_empty_bytes")];
        if policy.starts_with("blocks") {
            assert!(parts.iter().all(Option::is_none), "{row}");
            continue;
        }
        let [live, partly_used, empty] = parts.map(Option::unwrap);
        assert_eq!(live + partly_used + empty, row["peak_committed_bytes"].as_u64().unwrap(), "{row}");
        // Here the committed peak comes 192 bytes short of the peak live bytes: a small allocation after it
        // needs no new page.
        let peak_live = row["peak_live_bytes"].as_u64().unwrap();
        assert!(live <= peak_live && peak_live - live < 1 << 10, "{row}");
        if policy == "vmm" {
            assert_eq!(empty, 0, "{row}");
            assert!(partly_used > 6 << 20 && partly_used < 7 << 20, "{row}");
        }
    }
    let settings = format!("[virtual_heap]\nspare_ahead_below_bytes = {}\n", u64::MAX);
    let (default, before) =
        default_and_config(&temp("spare-ahead.toml"), &settings, trace("mnasnet_half_infer.pickle.xz"));
    assert_eq!(before["at_peak_empty_bytes"], 8 << 20, "{before}");
    assert!(before["overhead"].as_f64().unwrap() > 1.10, "{before}");
    assert!(default["overhead"].as_f64().unwrap() <= 1.05, "{default}");
}

/// Block mode (as Vulkan has it: no virtual memory) makes at most 1.5 × PyTorch's segment operations on every
/// shipped trace but four (366 of the 370 in traces/): requests larger than a block get blocks of their own size in
/// their pool, which serve any request once free, instead of dedicated blocks made and destroyed as tensor sizes
/// vary (12 traces were over that limit with dedicated blocks from 128 MiB, up to 13.5 ×; docs/BENCHMARKS.md,
/// "Thirteenth session"). Two, heaps of about 1 GiB recorded in the thirty-second session, are one operation over
/// (conv3d_volume_infer 16 against 15, sr_conv_half_infer 14 against 13), and bigimage_conv_half_infer (thirty-third
/// session: activations of 2.3 to 4 GiB, four of them larger than a Vulkan allocation may be) makes 9 against 7,
/// and capsule_routing_train (thirty-fourth session: a heap of 5 GiB whose largest requests change size with the
/// batch, from 360 MiB to 2.1 GiB) 44 against 33: they are held to those counts, so that the test still fails if
/// block mode does worse on them.
#[test]
fn block_mode_stays_within_the_call_limit_on_every_shipped_trace() {
    let known_over = [
        ("conv3d_volume_infer.pickle.xz", 16),
        ("sr_conv_half_infer.pickle.xz", 14),
        ("bigimage_conv_half_infer.pickle.xz", 9),
        ("capsule_routing_train.pickle.xz", 44),
    ];
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| [".pickle", ".pickle.gz", ".pickle.xz"].iter().any(|end| name.ends_with(end)))
        .collect();
    names.sort();
    assert!(names.len() >= 196, "{names:?}");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (_, rows) = replay_json(&["--policy", "blocks"], &names);
    assert_eq!(rows.len(), names.len());
    for row in &rows {
        let name = row["name"].as_str().unwrap();
        assert_eq!(row["policy"], "blocks");
        // Requests larger than the H200's Vulkan `maxMemoryAllocationSize` (4 GiB less 2 MiB; roberta_mlm_train's
        // logits of 4.6 and 6.1 GiB) fit no block: block mode refuses those, as a Vulkan application's allocation
        // would fail, and serves every other. (Counted only where something was refused: decoding every trace
        // again would double the test's time.)
        let refused = row["refused"].as_u64().unwrap();
        if refused > 0 {
            assert_eq!(refused, requests_over_max_allocation_size(name), "{name}: allocations refused");
        }
        let driver_ops = row["driver_ops"].as_u64().unwrap();
        let pytorch_ops = row["pytorch_segment_ops"].as_u64().unwrap();
        let limit =
            known_over.iter().find(|(known, _)| *known == name).map_or(3 * pytorch_ops / 2, |&(_, ops)| ops);
        assert!(
            driver_ops <= limit,
            "{name}: {driver_ops} block creations and destructions, PyTorch {pytorch_ops} segment operations"
        );
    }
}

/// How many requests of shipped trace `name` are larger than the simulated H200's largest allocation.
fn requests_over_max_allocation_size(name: &str) -> u64 {
    let limit = memcarve::backends::host::MemoryProfile::discrete().properties.limits.max_allocation_size;
    let events = memcarve_trace::open(trace(name)).unwrap();
    let over = events
        .map(Result::unwrap)
        .filter(|event| matches!(event, memcarve_trace::Event::Alloc(alloc) if alloc.size > limit));
    over.count() as u64
}

/// gpt2_generate (../shared/traces only: too large for the repository) meets the goal since the virtual heap
/// handles growing replacement series; with them off it makes more driver operations than the goal allows.
/// Skipped where the file is absent.
#[test]
fn default_policy_meets_the_goal_on_gpt2_generate_where_the_shared_trace_is() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/gpt2_generate.pickle.gz");
    if !path.exists() {
        eprintln!("skipped: {} not found", path.display());
        return;
    }
    let settings = "[virtual_heap]\ngrowing_series = false\n";
    let (default, off) = &default_and_config(&temp("no-series.toml"), settings, path);
    let pytorch_ops = default["pytorch_segment_ops"].as_u64().unwrap();
    let ops = |row: &serde_json::Value| row["driver_ops"].as_u64().unwrap();
    assert!(default["overhead"].as_f64().unwrap() <= 1.05, "{default}");
    assert!(2 * ops(default) <= 3 * pytorch_ops, "{} driver operations, PyTorch {pytorch_ops}", ops(default));
    assert!(2 * ops(off) > 3 * pytorch_ops, "without the series handling: {}", ops(off));
}

/// The shipped traces the default policy does not meet the memory and operation goal on yet: their figures may
/// not get worse than they are now (docs/BENCHMARKS.md, "Twenty-third session" and "Twenty-fourth session", has
/// each one's figures and where its overhead is). On memory: resnet18_infer_small and densenet_infer (converted on
/// the GPU; better since small requests go apart), small generation heaps whose pages are partly used
/// (opt_small_sample_generate, tiny_llama_greedy_generate, pythia_small_generate, gpt_neo_small_generate,
/// gpt2_sample_generate, which misses on operations too), ppo_train, bert_mini_embed_infer (also on operations),
/// longformer_infer and adapter_switch_infer. On operations: opt_generate, spectrogram_transformer_train,
/// bart_beam_generate, small_unet_denoise_infer, bert_infer and bert_long_infer (the last two met the goal until
/// small requests went apart), convnext_tiny_train_small (102 operations without them, 125 with them; limit 109)
/// and wavenet_conv1d_train (recorded in the twenty-fifth session; 80 against a limit of 72); on memory again,
/// phi_small_sample_generate (recorded in the twenty-sixth session; 1.051 ×). Unseen recordings of later sessions:
/// bert_tiny_ner_infer (35 operations of 31) and gpt2_tiny_sample_generate (1.067 ×) of the thirty-first,
/// fft_filter_small_infer (1.059 ×) of the thirty-second, gru_tagger_train (23 operations of 18) of the
/// thirty-third, and of the thirty-fourth capsule_routing_train (38 operations of 33), falcon_small_sample_generate
/// (26 of 22), mobilebert_qa_infer (1.061 ×), distilbert_tiny_sentiment_infer (1.106 ×, 23 operations of 22),
/// t5_tiny_greedy_summarize (1.108 ×) and vit_tiny_half_infer (1.063 ×).
#[test]
fn default_policy_does_not_regress_where_the_goal_is_not_met_yet() {
    // (trace, overhead at most, driver operations at most)
    let ceilings = [
        ("adapter_switch_infer.pickle.xz", 1.0707, 17),
        ("bart_beam_generate.pickle.xz", 1.0436, 53),
        ("bert_infer.pickle.xz", 1.0384, 47),
        ("bert_long_infer.pickle.xz", 1.0368, 35),
        ("convnext_tiny_train_small.pickle.xz", 1.0392, 125),
        ("bert_mini_embed_infer.pickle.xz", 1.0561, 31),
        ("densenet_infer.pickle.xz", 1.0632, 33),
        ("gpt2_sample_generate.pickle.xz", 1.0587, 49),
        ("gpt_neo_small_generate.pickle.xz", 1.0585, 13),
        ("longformer_infer.pickle.xz", 1.0601, 32),
        ("opt_generate.pickle.xz", 1.0361, 66),
        ("opt_small_sample_generate.pickle.xz", 1.0647, 22),
        ("ppo_train.pickle.xz", 1.1322, 7),
        ("pythia_small_generate.pickle.xz", 1.0747, 9),
        ("resnet18_infer_small.pickle.xz", 1.0606, 15),
        ("small_unet_denoise_infer.pickle.xz", 1.0390, 23),
        ("spectrogram_transformer_train.pickle.xz", 1.0412, 114),
        ("tiny_llama_greedy_generate.pickle.xz", 1.1094, 8),
        ("wavenet_conv1d_train.pickle.xz", 1.0370, 80),
        ("phi_small_sample_generate.pickle.xz", 1.0510, 38),
        ("bert_tiny_ner_infer.pickle.xz", 1.0368, 35),
        ("gpt2_tiny_sample_generate.pickle.xz", 1.0671, 27),
        ("fft_filter_small_infer.pickle.xz", 1.0595, 6),
        ("gru_tagger_train.pickle.xz", 1.0398, 23),
        ("capsule_routing_train.pickle.xz", 1.0400, 38),
        ("falcon_small_sample_generate.pickle.xz", 1.0490, 26),
        ("mobilebert_qa_infer.pickle.xz", 1.0610, 30),
        ("distilbert_tiny_sentiment_infer.pickle.xz", 1.1062, 23),
        ("t5_tiny_greedy_summarize.pickle.xz", 1.1081, 13),
        ("vit_tiny_half_infer.pickle.xz", 1.0630, 17),
    ];
    let names: Vec<&str> = ceilings.iter().map(|&(name, _, _)| name).collect();
    let (_, rows) = replay_json(&[], &names);
    assert_eq!(rows.len(), ceilings.len());
    for (row, (name, overhead_max, ops_max)) in rows.iter().zip(ceilings) {
        assert_eq!(row["name"], name);
        let overhead = row["overhead"].as_f64().unwrap();
        let driver_ops = row["driver_ops"].as_u64().unwrap();
        assert!(overhead <= overhead_max, "{name}: overhead {overhead}, was at most {overhead_max}");
        assert!(driver_ops <= ops_max, "{name}: {driver_ops} driver operations, were at most {ops_max}");
    }
}
