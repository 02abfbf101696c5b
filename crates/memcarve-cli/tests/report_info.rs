//! `memcarve report` and `memcarve info` end to end: the page's figures against `memcarve replay`, the page
//! rendered in headless Chromium (no console errors, not blank), the devices `info` finds, and bad input.

#![allow(clippy::unwrap_used, reason = "test helpers outside #[test] functions unwrap too")]

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use assert_cmd::Command;

fn trace(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../traces").join(name)
}

fn memcarve() -> Command {
    Command::cargo_bin("memcarve").unwrap()
}

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memcarve-report-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `memcarve report` and returns the page.
fn report(trace: &Path, out: &Path, policy: Option<&str>) -> String {
    let mut command = memcarve();
    command.arg("report").arg(trace).arg("--out").arg(out);
    if let Some(policy) = policy {
        command.args(["--policy", policy]);
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains(&out.display().to_string()), "{stdout}");
    std::fs::read_to_string(out).unwrap()
}

/// The figures the page carries as JSON.
fn figures(page: &str) -> serde_json::Value {
    let start = page.find("<script type=\"application/json\" id=\"memcarve-figures\">").unwrap();
    let json = &page[start..];
    let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
    serde_json::from_str(json).unwrap()
}

/// `memcarve replay --json` for one trace and policy: the row.
fn replay_row(trace: &Path, policy: &str, dir: &Path) -> serde_json::Value {
    let json = dir.join("replay.json");
    let output =
        memcarve().args(["replay", "--policy", policy, "--json"]).arg(&json).arg(trace).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    value["traces"][0].clone()
}

fn assert_self_contained(page: &str) {
    assert!(page.starts_with("<!DOCTYPE html>"));
    for external in ["http://", "https://", "<link", " src=", "@import", "url("] {
        assert!(!page.contains(external), "the page refers to something outside it: {external}");
    }
    for part in ["<svg id=\"timeline\"", "<svg id=\"memory-map\"", "<style>", "</html>"] {
        assert!(page.contains(part), "missing {part}");
    }
}

/// The map at the peak is rebuilt from the placement log; its committed bytes must be the allocator's own
/// peak, and every live allocation must lie in committed memory.
fn assert_map_matches_replay(figures: &serde_json::Value, row: &serde_json::Value) {
    let split = ["at_peak_live_bytes", "at_peak_partly_used_bytes", "at_peak_empty_bytes"];
    for field in ["allocations", "peak_live_bytes", "peak_committed_bytes", "driver_ops"].iter().chain(&split)
    {
        assert_eq!(figures[field], row[field], "{field}");
    }
    assert_eq!(figures["pytorch_peak_reserved_bytes"], row["pytorch_peak_reserved_bytes"]);
    let map = &figures["map"];
    assert_eq!(map["committed_bytes"], row["peak_committed_bytes"]);
    assert_eq!(map["outside_committed"], 0);
    let used = map["used_bytes"].as_u64().unwrap();
    let free = map["free_bytes"].as_u64().unwrap();
    assert!(used > 0 && used <= row["peak_live_bytes"].as_u64().unwrap());
    // The map shows addresses: mapped bytes are committed bytes plus the extra addresses of pages that show at
    // several.
    assert_eq!(used + free, map["mapped_bytes"].as_u64().unwrap());
    assert!(map["mapped_bytes"].as_u64().unwrap() >= map["committed_bytes"].as_u64().unwrap());
    assert!(map["largest_free_range"].as_u64().unwrap() <= free);
    assert!(map["free_ranges"].as_u64().unwrap() >= u64::from(free > 0));
}

#[test]
fn report_of_a_snapshot_matches_the_replay() {
    let dir = temp_dir("snapshot");
    let path = trace("resnet50_train.pickle.gz");
    let page = report(&path, &dir.join("report.html"), None);
    assert_self_contained(&page);
    let figures = figures(&page);
    assert_eq!(figures["policy"], "vmm");
    assert_eq!(figures["pytorch_timeline"], true);
    assert!(page.contains("PyTorch reserved"));
    let points = figures["timeline_points"].as_u64().unwrap();
    assert!((100..=4000).contains(&points), "{points} timeline points");
    assert_map_matches_replay(&figures, &replay_row(&path, "vmm", &dir));
    // The virtual heap's peak is split in three, shown in a card.
    let part = |key: &str| figures[key].as_u64().unwrap();
    let parts = part("at_peak_live_bytes") + part("at_peak_partly_used_bytes") + part("at_peak_empty_bytes");
    assert_eq!(parts, part("peak_committed_bytes"));
    assert!(page.contains("where the peak&#39;s overhead is"));
    // Under the virtual heap the peak's pages form few runs.
    assert!(figures["map"]["mapped_ranges"].as_u64().unwrap() >= 1);
}

#[test]
fn report_with_blocks_maps_every_block() {
    let dir = temp_dir("blocks");
    let path = trace("resnet50_train.pickle.gz");
    let page = report(&path, &dir.join("report.html"), Some("blocks"));
    assert_self_contained(&page);
    let figures = figures(&page);
    assert_eq!(figures["policy"], "blocks");
    assert_map_matches_replay(&figures, &replay_row(&path, "blocks", &dir));
    assert!(figures["at_peak_empty_bytes"].is_null() && !page.contains("overhead is"), "no pages to split");
    // Blocks of 32 MiB growing to 256 MiB: several of them, each its own committed range.
    assert!(figures["map"]["mapped_ranges"].as_u64().unwrap() > 4, "{figures}");
}

#[test]
fn report_of_a_memcarve_trace_has_no_pytorch_timeline() {
    let dir = temp_dir("trace");
    let converted = dir.join("resnet50_train.trace.gz");
    let summary =
        memcarve_trace::torch::convert_to_file(trace("resnet50_train.pickle.gz"), &converted).unwrap();
    let page = report(&converted, &dir.join("report.html"), None);
    assert_self_contained(&page);
    let figures = figures(&page);
    assert_eq!(figures["pytorch_timeline"], false);
    // The header still carries PyTorch's peak.
    assert_eq!(figures["pytorch_peak_reserved_bytes"], summary.pytorch.unwrap().peak_reserved_bytes);
    assert_map_matches_replay(&figures, &replay_row(&converted, "vmm", &dir));
}

#[test]
fn report_refuses_bad_input() {
    let dir = temp_dir("bad");
    let out = dir.join("report.html");
    let missing = dir.join("no-such-trace.pickle.gz");
    let output = memcarve().arg("report").arg(&missing).arg("--out").arg(&out).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no-such-trace.pickle.gz"), "{stderr}");
    assert!(!out.exists());

    let bytes = std::fs::read(trace("tiny_expandable_segments.pickle")).unwrap();
    let truncated = dir.join("truncated.pickle");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let output = memcarve().arg("report").arg(&truncated).arg("--out").arg(&out).output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("truncated.pickle"), "{stderr}");
    assert!(!out.exists());

    let output = memcarve()
        .arg("report")
        .arg(trace("tiny_expandable_segments.pickle"))
        .args(["--policy", "no-such-policy", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown policy"));

    let output = memcarve()
        .arg("report")
        .arg(trace("tiny_expandable_segments.pickle"))
        .arg("--out")
        .arg(dir.join("no-such-dir").join("report.html"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no-such-dir"));

    let output = memcarve().arg("report").arg(trace("tiny_expandable_segments.pickle")).output().unwrap();
    assert!(!output.status.success(), "--out is required");
}

// ---------------------------------------------------------------------------------------------------------
// In a real browser

/// Headless Chromium, if installed.
fn chromium() -> Option<PathBuf> {
    let candidates = ["chromium", "chromium-browser", "google-chrome"];
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| candidates.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// What one headless Chromium run left: its stderr (with the console log) and, for `--dump-dom`, the DOM.
struct BrowserRun {
    stdout: String,
    stderr: String,
}

fn run_chromium(browser: &Path, dir: &Path, page: &Path, mode: &str) -> BrowserRun {
    let profile = fresh_dir(dir, "profile");
    let mut child = Process::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(mode)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes while waiting, so that a chatty browser never blocks on a full pipe.
    let mut stdout_pipe = child.stdout.take().unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stdout_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout_pipe, &mut text);
        text
    });
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr_pipe, &mut text);
        text
    });
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stdout = stdout_reader.join().unwrap();
            let stderr = stderr_reader.join().unwrap();
            let _ = std::fs::remove_dir_all(&profile);
            assert!(status.success(), "chromium {mode} failed ({status}):\n{stderr}");
            return BrowserRun { stdout, stderr };
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {mode} did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A fresh directory under `dir` (Chromium wants a new profile directory per run).
fn fresh_dir(dir: &Path, name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = dir.join(format!("{name}-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    path
}

/// Console errors and uncaught exceptions in Chromium's log.
fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| {
            line.contains("Uncaught")
                || line.contains("ERROR:CONSOLE")
                || (line.contains("CONSOLE") && line.to_ascii_lowercase().contains("error"))
        })
        .collect()
}

/// Loads the page in headless Chromium: the DOM after its script ran (and any error the page threw, caught by
/// a handler put in front of the page's own code), and the console log.
fn load(browser: &Path, dir: &Path, page: &Path) -> (String, Vec<String>) {
    let html = std::fs::read_to_string(page).unwrap();
    // Also moves the mouse over the timeline once loaded, so that the hover handler runs too.
    let catcher = "<head>\n<script>\n\
        window.addEventListener('error', function (event) {\n\
          document.documentElement.setAttribute('data-test-error', String(event.message));\n\
        });\n\
        window.addEventListener('load', function () {\n\
          var svg = document.getElementById('timeline');\n\
          if (!svg) { return; }\n\
          var initial = document.getElementById('readout').textContent;\n\
          document.documentElement.setAttribute('data-test-initial', initial);\n\
          var box = svg.getBoundingClientRect();\n\
          svg.dispatchEvent(new MouseEvent('mousemove',\n\
            {clientX: box.left + box.width * 0.3, clientY: box.top + box.height / 2}));\n\
          var readout = document.getElementById('readout').textContent;\n\
          document.documentElement.setAttribute('data-test-hover', readout);\n\
        });\n\
        </script>";
    let watched = dir.join(format!("watched-{}", page.file_name().unwrap().to_string_lossy()));
    std::fs::write(&watched, html.replacen("<head>", catcher, 1)).unwrap();
    let run = run_chromium(browser, dir, &watched, "--dump-dom");
    let mut errors: Vec<String> = console_errors(&run.stderr).into_iter().map(str::to_owned).collect();
    if let Some(at) = run.stdout.find("data-test-error=\"") {
        let rest = &run.stdout[at..];
        errors.push(rest[..rest.find("\" ").unwrap_or(rest.len()).min(200)].to_owned());
    }
    (run.stdout, errors)
}

/// Decodes a PNG to 8-bit RGB(A): (width, height, channels, pixels).
fn decode_png(path: &Path) -> (u32, u32, usize, Vec<u8>) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    pixels.truncate(frame.buffer_size());
    let channels = match frame.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        png::ColorType::GrayscaleAlpha => 2,
        _ => 1,
    };
    (frame.width, frame.height, channels, pixels)
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var("MEMCARVE_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "MEMCARVE_REQUIRE_BROWSER=1 but no chromium on PATH (Debian: apt-get install chromium)"
        );
        eprintln!("report_renders_in_headless_chromium: skipped: no chromium on PATH");
        return;
    };
    let dir = temp_dir("browser");

    // First, that a broken page is caught at all: an error thrown by a script must show.
    let broken = dir.join("broken.html");
    std::fs::write(
        &broken,
        "<!DOCTYPE html><html><head></head><body><script>missingFunction();</script></body></html>",
    )
    .unwrap();
    let (_, errors) = load(&browser, &dir, &broken);
    assert!(!errors.is_empty(), "a page that throws went unnoticed");

    let page = dir.join("report.html");
    report(&trace("resnet50_train.pickle.gz"), &page, None);
    let (dom, errors) = load(&browser, &dir, &page);
    assert!(errors.is_empty(), "the page logged errors:\n{}", errors.join("\n"));
    assert!(dom.contains("data-memcarve-ready=\"1\""), "the page's script did not run to its end");
    assert!(dom.contains("data-test-initial=\"at memcarve's peak (event"), "the readout was not filled in");
    // 30 % across the plot: some run of events, with all three series.
    let hover = &dom[dom.find("data-test-hover=\"").expect("the hover check did not run")..];
    let hover = &hover[..hover.find("\" ").unwrap()];
    assert!(
        hover.contains("event") && hover.contains("live ") && hover.contains("PyTorch reserved"),
        "{hover}"
    );
    assert!(!hover.contains("peak"), "{hover}");

    let png = dir.join("report.png");
    let run = run_chromium(&browser, &dir, &page, &format!("--screenshot={}", png.display()));
    let errors = console_errors(&run.stderr);
    assert!(errors.is_empty(), "the page logged errors:\n{}", errors.join("\n"));
    let (width, height, channels, pixels) = decode_png(&png);
    assert!(width >= 1000 && height >= 800, "{width}x{height}");
    assert!(channels >= 3);
    let colour = |index: usize| -> [u8; 3] {
        let at = index * channels;
        [pixels[at], pixels[at + 1], pixels[at + 2]]
    };
    let count = pixels.len() / channels;
    let not_white = (0..count).filter(|&i| colour(i).iter().any(|&c| c < 235)).count();
    assert!(not_white * 20 > count, "the screenshot is almost blank: {not_white} of {count} pixels drawn");
    // The memory map's size-class colours are drawn with crisp edges, so they appear exactly.
    let class_colours: [[u8; 3]; 4] =
        [[0x4e, 0x79, 0xa7], [0x59, 0xa1, 0x4f], [0xed, 0xc9, 0x48], [0xf2, 0x8e, 0x2b]];
    let mut seen = [0usize; 4];
    for index in 0..count {
        if let Some(class) = class_colours.iter().position(|&c| c == colour(index)) {
            seen[class] += 1;
        }
    }
    assert!(seen.iter().filter(|&&n| n > 50).count() >= 3, "map colours on the screenshot: {seen:?}");
    eprintln!("report_renders_in_headless_chromium: {} ({width}x{height})", png.display());
}

// ---------------------------------------------------------------------------------------------------------
// memcarve info

fn info(envs: &[(&str, &str)]) -> String {
    let mut command = memcarve();
    command.arg("info");
    for (name, value) in envs {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn info_lists_the_host_profiles() {
    let out = info(&[]);
    assert!(out.contains("backends compiled in: host"), "{out}");
    for profile in ["discrete", "integrated", "lavapipe", "non_coherent"] {
        assert!(out.contains(&format!("profile {profile}:")), "{out}");
    }
    assert!(out.contains("heap 0: 140.40 GiB [DEVICE_LOCAL]"), "{out}");
    assert!(out.contains("type 2: heap 1 [HOST_VISIBLE, HOST_COHERENT]"), "{out}");
    assert!(out.contains("cuda:"), "{out}");
}

#[cfg(not(feature = "vulkan"))]
#[test]
fn info_says_vulkan_is_not_built_in() {
    assert!(info(&[]).contains("vulkan: not built in"));
}

#[cfg(feature = "vulkan")]
const LAVAPIPE_ICD: &str = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";

#[cfg(feature = "vulkan")]
#[test]
fn info_lists_lavapipe() {
    if !Path::new(LAVAPIPE_ICD).exists() {
        assert!(
            std::env::var("MEMCARVE_REQUIRE_VULKAN").as_deref() != Ok("1"),
            "MEMCARVE_REQUIRE_VULKAN=1 but lavapipe is not installed ({LAVAPIPE_ICD})"
        );
        eprintln!("info_lists_lavapipe: skipped: no lavapipe ({LAVAPIPE_ICD})");
        return;
    }
    let out = info(&[("VK_ICD_FILENAMES", LAVAPIPE_ICD), ("VK_DRIVER_FILES", LAVAPIPE_ICD)]);
    assert!(out.contains("backends compiled in: host, vulkan"), "{out}");
    let vulkan = &out[out.find("\nvulkan:").unwrap()..];
    assert!(vulkan.contains("device 0: llvmpipe"), "{vulkan}");
    assert!(vulkan.contains(", Vulkan 1."), "{vulkan}");
    assert!(vulkan.contains("heap 0: ") && vulkan.contains("[DEVICE_LOCAL]"), "{vulkan}");
    assert!(vulkan.contains("type 0: heap 0 [DEVICE_LOCAL, HOST_VISIBLE"), "{vulkan}");
    assert!(vulkan.contains("1 device found"), "{vulkan}");
}

#[cfg(feature = "vulkan")]
#[test]
fn info_says_why_vulkan_found_no_device() {
    let nowhere = "/nonexistent/memcarve_no_icd.json";
    let out = info(&[("VK_ICD_FILENAMES", nowhere), ("VK_DRIVER_FILES", nowhere)]);
    let vulkan = &out[out.find("\nvulkan:").unwrap()..];
    assert!(vulkan.contains("no devices: "), "{vulkan}");
    assert!(!vulkan.contains("device 0:"), "{vulkan}");
}
