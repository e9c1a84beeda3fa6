//! Sequential `tools/call` round trips over stdio, our `Client` against a minimal hand-written
//! blocking client, and the same for 16 MiB results, with the peak memory of each. std only:
//! `Instant`, medians and `/proc/self/status`.
//!
//! `cargo bench -p mcp-connect --bench stdio`. Run without `--bench` (as `cargo test --benches` does) it only
//! smoke-tests itself with a few calls.
//!
//! The server is the test kit's stdio server, `target/release/mcp-testkit-serve` (std, line by
//! line, one flush per answer). `cargo bench` never builds other packages' binaries, so the bench
//! runs `cargo build --release -p mcp-testkit --bin mcp-testkit-serve` first (`mcp_testkit::serve_bin`):
//! a no-op when it is fresh; run by hand (under `perf`, `strace`), it uses the binary as it is.
//!
//! (a) Our `Client` (`smol::block_on`, `client.call_tool("echo", {"text":"hi"})`, result decoded and
//!     its text checked), one call at a time.
//! (b) A blocking client: `std::process::Command` with piped stdin/stdout, one `write_all` + flush
//!     per request, `BufRead::read_line` per answer, `serde_json::Value` parsed and its text checked.
//! (c) calls/s of both: median of several rounds (alternating a and b) after a warm-up, and the ratio.
//!     Each line also gives this process's CPU time per call (all threads, 10 ms ticks) and the
//!     context switches of its threads per call: on a loaded machine the hand-offs between threads
//!     dominate, and wall-clock numbers swing with the load (compare rounds).
//! (e) The same calls made by 32 callers at once (tasks on one thread), against (a).
//! (f) Our `Client` as in (a), with the era found by the probe (`EraChoice::Auto`, the default),
//!     against the same server in the modern era (`--era modern`: `server/discover`, the
//!     per-request `_meta`, `resultType` on every result), and the ratio to (a): what the modern
//!     era costs a call. The two clients take turns in chunks of a twentieth of a round, so that
//!     both meet the same load (on a busy machine whole rounds apart swing by more than the
//!     difference); each round's ratio is of its own turns, and the median of the rounds' ratios is
//!     the result.
//! (d) 16 MiB `big` results: the bench re-runs itself as a child process per side (ours, the
//!     baseline of (b)), the sides taking turns round by round (the order alternating); each child
//!     connects, makes a few small calls, reads VmHWM, makes one warm-up `big` call and then times
//!     a few more (wall and its threads' CPU time), each result kept until the next one is in (as
//!     the CLI's and the floor's `--repeat` loops do), and reads VmHWM again: its peak. Then it
//!     drops the last result, makes a few small calls and reads VmRSS: what a long-running client
//!     holds after large results. Printed: each round, the medians, the ratio ours/baseline of
//!     calls/s and of VmHWM, and the VmRSS after.
//!
//! A full run (`--bench`) first makes rows (a) to (f) on one core — the bench re-runs itself as a
//! child pinned with its server to CPU 0 (`taskset -c 0`), where client and server take turns —
//! then on two cores apart (the child on CPU 0, its servers under `taskset -c 1`: each client
//! meets the same cross-CPU wake-up, so ratios between clients hold), then on two cores unpinned
//! (where the scheduler decides, differently per run); (d) once, unpinned. CPU per call is this process's threads' schedstat time
//! (ns); syscalls per call are in `cargo bench --bench cli`, which runs the CLI binary.
//!
//! Diagnostics: `MCP_STDIO_BENCH_ONLY=ours|baseline|modern` runs one side only (for `perf
//! record`, `strace -c`), and `MCP_STDIO_BENCH_ONLY=big` row (d) only; one child of (d) runs on
//! its own (under `perf record`, `/usr/bin/time -v`) as `MCP_STDIO_BENCH_CHILD=ours|baseline
//! <bench binary> <serve binary> <timed calls>`; `MCP_STDIO_BENCH_HANDLERS=1` registers
//! elicitation, sampling and roots handlers on our client (every capability declared, so the
//! modern row's requests carry them in `_meta`); `MCP_STDIO_BENCH_NO_TIMEOUT=1` gives our client
//! no request timeout, so its driver never arms a timer.

use mcp_connect::{Client, ClientConfig, StdioConfig, StdioTransport};
use mcp_testkit::floor::Floor;
use mcp_testkit::{median, per_s, serve_bin};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: usize = 1024 * 1024;
const BIG: usize = 16 * MIB;
const CHILD_ENV: &str = "MCP_STDIO_BENCH_CHILD";
/// Set in the pinned child that makes the one-core rows.
const PINNED_ENV: &str = "MCP_STDIO_BENCH_PINNED";
/// Set in the child that makes the rows on two cores apart: the CPU its servers run on (the
/// child itself pinned to CPU 0).
const SERVER_CPU_ENV: &str = "MCP_STDIO_BENCH_SERVER_CPU";

/// The command that runs `serve ARGS…`: under `taskset -c N` when the servers are pinned apart
/// from this process ([`SERVER_CPU_ENV`]).
fn server_command(serve: &Path, args: &[&str]) -> (std::ffi::OsString, Vec<std::ffi::OsString>) {
    let args = args.iter().map(std::ffi::OsString::from);
    match std::env::var_os(SERVER_CPU_ENV) {
        Some(cpu) => (
            "taskset".into(),
            ["-c".into(), cpu, serve.as_os_str().to_owned()]
                .into_iter()
                .chain(args)
                .collect(),
        ),
        None => (serve.as_os_str().to_owned(), args.collect()),
    }
}

/// What one batch of calls cost: wall time, this process's CPU time (all threads), and context
/// switches of its threads.
#[derive(Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
    switches: u64,
}

impl Cost {
    fn zero() -> Cost {
        Cost {
            wall: Duration::ZERO,
            cpu: Duration::ZERO,
            switches: 0,
        }
    }

    fn add(&mut self, other: Cost) {
        self.wall += other.wall;
        self.cpu += other.cpu;
        self.switches += other.switches;
    }

    fn measure(f: impl FnOnce()) -> Cost {
        let (cpu0, sw0) = (cpu_time(), mcp_testkit::cpu::context_switches());
        let started = Instant::now();
        f();
        let wall = started.elapsed();
        Cost {
            wall,
            cpu: cpu_time().saturating_sub(cpu0),
            switches: mcp_testkit::cpu::context_switches().saturating_sub(sw0),
        }
    }
}

/// CPU time of this process, all its live threads, in nanoseconds (their schedstat).
fn cpu_time() -> Duration {
    mcp_testkit::cpu::process_cpu()
}

struct Params {
    warmup: usize,
    calls: usize,
    rounds: usize,
}

fn main() {
    if let Ok(mode) = std::env::var(CHILD_ENV) {
        let serve = std::env::args_os().nth(1).expect("serve binary path");
        let calls = std::env::args()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .expect("number of timed calls");
        peak_child(&mode, Path::new(&serve), calls);
        return;
    }
    let full = std::env::args().any(|a| a == "--bench");
    let p = if full {
        Params {
            warmup: 2_000,
            calls: 20_000,
            rounds: 5,
        }
    } else {
        Params {
            warmup: 10,
            calls: 100,
            rounds: 1,
        }
    };
    if !full {
        println!("(smoke run: pass --bench, as `cargo bench` does, for real numbers)");
    }
    let serve = serve_bin();
    println!("server: {}", serve.display());
    let only = std::env::var("MCP_STDIO_BENCH_ONLY").ok();
    let (big_rounds, big_calls) = if full { (5, 8) } else { (1, 2) };
    if only.as_deref() == Some("big") {
        big_row(&serve, big_rounds, big_calls);
        return;
    }
    let pinned = std::env::var_os(PINNED_ENV).is_some();
    if pinned && std::env::var_os(SERVER_CPU_ENV).is_some() {
        println!("== two cores apart: this process on CPU 0, the servers on CPU 1 (taskset)");
    } else if pinned {
        println!("== one core: this process and the server pinned to CPU 0 (taskset -c 0)");
    } else if full {
        // The one-core row first: the whole bench again, as a child pinned with its server to
        // one CPU, where the client and the server take turns (a small or busy machine); a
        // wait costs most there. Then the unpinned rows, here.
        let status = Command::new("taskset")
            .args(["-c", "0"])
            .arg(std::env::current_exe().expect("bench path"))
            .args(std::env::args_os().skip(1))
            .env(PINNED_ENV, "1")
            .status();
        match status {
            Ok(s) => assert!(s.success(), "the pinned run failed: {s:?}"),
            Err(e) => println!("(one-core row skipped: cannot run taskset: {e})"),
        }
        // Then on two cores with the sides kept apart: unpinned, the scheduler puts a client
        // and its server on one CPU in some runs and not in others (rates 15k..85k calls/s on
        // this 2-core machine), which makes a ratio of two unpinned clients (modern / legacy)
        // a coin toss; apart, every client meets the same cross-CPU wake-up.
        if std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2) {
            let status = Command::new("taskset")
                .args(["-c", "0"])
                .arg(std::env::current_exe().expect("bench path"))
                .args(std::env::args_os().skip(1))
                .env(PINNED_ENV, "1")
                .env(SERVER_CPU_ENV, "1")
                .status();
            match status {
                Ok(s) => assert!(s.success(), "the run apart failed: {s:?}"),
                Err(e) => println!("(two-cores-apart row skipped: cannot run taskset: {e})"),
            }
        }
        println!("== two cores (not pinned)");
    }

    println!(
        "(a/b) sequential tools/call echo {{\"text\":\"hi\"}}: {} rounds of {} calls after {} warm-up calls",
        p.rounds, p.calls, p.warmup
    );
    let wanted = |side: &str| only.as_deref().is_none_or(|o| o == side);
    let mut ours = wanted("ours").then(|| Ours::start(&serve, &[]));
    let mut base = wanted("baseline").then(|| Baseline::start(&serve));
    // Unpinned, a ratio of two of our clients says where the scheduler put each one's server:
    // the full run's (f) is the rows apart.
    let unpinned_full = full && !pinned && only.is_none();
    if unpinned_full {
        println!("(f) the modern era: see the rows apart above (unpinned, the ratio of two clients is the scheduler's placement)");
    }
    let mut modern = (wanted("modern") && !unpinned_full).then(|| {
        let c = Ours::start(&serve, &["--era", "modern"]);
        assert_eq!(c.client.era(), Some(mcp_connect::proto::Era::Modern));
        c
    });
    if let Some(c) = &mut modern {
        c.calls(p.warmup);
    }
    if let Some(c) = &mut ours {
        c.calls(p.warmup);
    }
    if let Some(c) = &mut base {
        c.calls(p.warmup);
    }
    let (mut ours_c, mut base_c) = (Vec::new(), Vec::new());
    for round in 0..p.rounds {
        let mut o = || {
            ours.as_mut().map(|c| {
                Cost::measure(|| {
                    c.calls(p.calls);
                })
            })
        };
        let mut b = || {
            base.as_mut().map(|c| {
                Cost::measure(|| {
                    c.calls(p.calls);
                })
            })
        };
        // Alternate the order so that drift (other load on the machine) hits both alike.
        let (o, b) = if round % 2 == 0 {
            let o = o();
            (o, b())
        } else {
            let b = b();
            (o(), b)
        };
        let show = |c: Option<Cost>| {
            c.map_or("-".into(), |c| {
                format!("{:>7.0} calls/s", per_s(p.calls, c.wall))
            })
        };
        println!("  round {round}: ours {}   baseline {}", show(o), show(b));
        ours_c.extend(o);
        base_c.extend(b);
    }
    let mut concurrent = None;
    if let Some(c) = &mut ours {
        // (e) The same calls with 32 callers waiting at once: every waiting caller may read, so
        // this shows what sharing the reading costs against one caller at a time.
        let width = 32;
        let mut runs: Vec<Cost> = (0..p.rounds)
            .map(|_| {
                Cost::measure(|| {
                    c.concurrent_calls(p.calls, width);
                })
            })
            .collect();
        runs.sort_by_key(|c| c.wall);
        let mid = runs[runs.len() / 2];
        let seq = median(ours_c.iter().map(|c| c.wall).collect());
        concurrent = Some(format!(
            "(e) {width} concurrent callers: {:>7.0} calls/s ({:.1} µs/call CPU in this process, {:.1} context switches/call), {:.2}x one caller at a time",
            per_s(p.calls, mid.wall),
            us_per(p.calls, mid.cpu),
            mid.switches as f64 / p.calls as f64,
            seq.as_secs_f64() / mid.wall.as_secs_f64()
        ));
    }
    // (f) Our client in the modern era, taking turns with (a).
    let mut paired = Vec::new();
    if let Some(m) = &mut modern {
        let turns = 20;
        let chunk = (p.calls / turns).max(5);
        for round in 0..p.rounds {
            let (mut legacy, mut modern) = (Cost::zero(), Cost::zero());
            for turn in 0..turns {
                let mut l = || {
                    if let Some(o) = ours.as_mut() {
                        legacy.add(Cost::measure(|| {
                            o.calls(chunk);
                        }));
                    }
                };
                let mut m = || {
                    modern.add(Cost::measure(|| {
                        m.calls(chunk);
                    }))
                };
                if (turn + round) % 2 == 0 {
                    l();
                    m();
                } else {
                    m();
                    l();
                }
            }
            let calls = chunk * turns;
            println!(
                "  (f) round {round}: ours {:>7.0} calls/s   ours, modern era {:>7.0} calls/s",
                per_s(calls, legacy.wall),
                per_s(calls, modern.wall)
            );
            paired.push((legacy, modern));
        }
    }
    if let Some(c) = ours {
        c.close();
    }
    if let Some(c) = base {
        c.close();
    }
    if let Some(c) = modern {
        c.close();
    }
    let report = |label: &str, costs: &[Cost]| -> Option<f64> {
        if costs.is_empty() {
            return None;
        }
        let wall = median(costs.iter().map(|c| c.wall).collect());
        let cpu = median(costs.iter().map(|c| c.cpu).collect());
        let mut sw: Vec<u64> = costs.iter().map(|c| c.switches).collect();
        sw.sort_unstable();
        println!(
            "{label} {:>7.0} calls/s  ({:.1} µs/call wall; in this process: {:.1} µs/call CPU, {:.1} context switches/call)",
            per_s(p.calls, wall),
            us_per(p.calls, wall),
            us_per(p.calls, cpu),
            sw[sw.len() / 2] as f64 / p.calls as f64
        );
        Some(per_s(p.calls, wall))
    };
    let o = report("(a) ours (Client, smol):    ", &ours_c);
    let b = report("(b) baseline (blocking std):", &base_c);
    if let (Some(o), Some(b)) = (o, b) {
        println!(
            "(c) ratio ours/baseline: {:.2}x (medians of calls/s)",
            o / b
        );
    }

    if let Some(line) = concurrent {
        println!("{line}");
    }
    if !paired.is_empty() {
        let calls = (p.calls / 20).max(5) * 20;
        let modern: Vec<Cost> = paired.iter().map(|(_, m)| *m).collect();
        let wall = median(modern.iter().map(|c| c.wall).collect());
        let cpu = median(modern.iter().map(|c| c.cpu).collect());
        print!(
            "(f) ours, modern era:        {:>7.0} calls/s  ({:.1} µs/call wall; in this process: {:.1} µs/call CPU)",
            per_s(calls, wall),
            us_per(calls, wall),
            us_per(calls, cpu)
        );
        if paired[0].0.wall > Duration::ZERO {
            let legacy: Vec<Cost> = paired.iter().map(|(l, _)| *l).collect();
            let lwall = median(legacy.iter().map(|c| c.wall).collect());
            let lcpu = median(legacy.iter().map(|c| c.cpu).collect());
            let mut ratios: Vec<f64> = paired
                .iter()
                .map(|(l, m)| l.wall.as_secs_f64() / m.wall.as_secs_f64())
                .collect();
            ratios.sort_by(f64::total_cmp);
            let r = ratios[ratios.len() / 2];
            println!(
                "; (a) in turn with it: {:>7.0} calls/s ({:.1} µs/call CPU)\n    ratio modern/legacy (f)/(a): {r:.2}x (median of the rounds' ratios; they ranged {:.2}x..{:.2}x): the modern era costs {:.1}% of calls/s",
                per_s(calls, lwall),
                us_per(calls, lcpu),
                ratios[0],
                ratios[ratios.len() - 1],
                (1.0 - r) * 100.0
            );
        } else {
            println!();
        }
    }
    if pinned {
        // (d) runs once, in the unpinned parent.
        return;
    }
    big_row(&serve, big_rounds, big_calls);
}

/// (d): children taking turns, each connecting and timing `calls` 16 MiB calls after a warm-up.
fn big_row(serve: &Path, rounds: usize, calls: usize) {
    println!(
        "(d) sequential tools/call big {{\"bytes\":{BIG}}} ({} MiB results): {rounds} rounds, each a child process per side (taking turns, the order alternating) making 1 warm-up and {calls} timed calls, each result kept until the next one is in (as the CLI and the floor do); VmHWM of each child",
        BIG / MIB
    );
    let run = |mode: &str| -> Big {
        let out = Command::new(std::env::current_exe().expect("bench path"))
            .arg(serve)
            .arg(calls.to_string())
            .env(CHILD_ENV, mode)
            .stderr(Stdio::inherit())
            .output()
            .expect("run the bench as a child");
        assert!(
            out.status.success(),
            "{mode} child failed: {:?}",
            out.status
        );
        let line = String::from_utf8_lossy(&out.stdout);
        let n: Vec<u64> = line
            .split_whitespace()
            .map(|n| n.parse().expect("child prints five numbers"))
            .collect();
        Big {
            hwm_before_kib: n[0],
            hwm_kib: n[1],
            wall: Duration::from_nanos(n[2]),
            cpu: Duration::from_nanos(n[3]),
            rss_after_kib: n[4],
        }
    };
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let (o, b) = if round % 2 == 0 {
            let o = run("ours");
            (o, run("baseline"))
        } else {
            let b = run("baseline");
            (run("ours"), b)
        };
        println!(
            "  round {round}: ours {:>5.1} calls/s, VmHWM {:>5.1} MiB (after: VmRSS {:>5.1})   baseline {:>5.1} calls/s, VmHWM {:>5.1} MiB (after: {:>5.1})   ratio {:.2}x",
            per_s(calls, o.wall),
            o.hwm_kib as f64 / 1024.0,
            o.rss_after_kib as f64 / 1024.0,
            per_s(calls, b.wall),
            b.hwm_kib as f64 / 1024.0,
            b.rss_after_kib as f64 / 1024.0,
            b.wall.as_secs_f64() / o.wall.as_secs_f64()
        );
        ratios.push(b.wall.as_secs_f64() / o.wall.as_secs_f64());
        ours.push(o);
        base.push(b);
    }
    let summary = |label: &str, runs: &[Big]| -> (f64, u64) {
        let wall = median(runs.iter().map(|r| r.wall).collect());
        let cpu = median(runs.iter().map(|r| r.cpu).collect());
        let mut hwm: Vec<u64> = runs.iter().map(|r| r.hwm_kib).collect();
        hwm.sort_unstable();
        let mut before: Vec<u64> = runs.iter().map(|r| r.hwm_before_kib).collect();
        before.sort_unstable();
        let (hwm, before) = (hwm[hwm.len() / 2], before[before.len() / 2]);
        let mut after: Vec<u64> = runs.iter().map(|r| r.rss_after_kib).collect();
        after.sort_unstable();
        println!(
            "{label} {:>5.1} calls/s ({:.1} ms/call wall; client CPU {:.1} ms/call); VmHWM {:.1} MiB ({:.1} MiB connected, +{:.1} MiB = {:.2}x the payload); VmRSS after {:.1} MiB (min {:.1}, max {:.1})",
            per_s(calls, wall),
            wall.as_secs_f64() * 1e3 / calls as f64,
            cpu.as_secs_f64() * 1e3 / calls as f64,
            hwm as f64 / 1024.0,
            before as f64 / 1024.0,
            hwm.saturating_sub(before) as f64 / 1024.0,
            hwm.saturating_sub(before) as f64 / 1024.0 / (BIG / MIB) as f64,
            after[after.len() / 2] as f64 / 1024.0,
            after[0] as f64 / 1024.0,
            after[after.len() - 1] as f64 / 1024.0,
        );
        (per_s(calls, wall), hwm)
    };
    let (o, o_hwm) = summary("    ours (Client, smol):    ", &ours);
    let (b, b_hwm) = summary("    baseline (blocking std):", &base);
    ratios.sort_by(f64::total_cmp);
    println!(
        "    ratio ours/baseline: {:.2}x calls/s (medians; rounds' own ratios {:.2}x..{:.2}x, median {:.2}x), {:.2}x VmHWM",
        o / b,
        ratios[0],
        ratios[ratios.len() - 1],
        ratios[ratios.len() / 2],
        o_hwm as f64 / b_hwm as f64
    );
}

/// What one child of (d) measured.
struct Big {
    /// VmHWM once connected (after a few small calls), before any big one.
    hwm_before_kib: u64,
    /// VmHWM at the end: the child's peak.
    hwm_kib: u64,
    /// The timed calls' wall time.
    wall: Duration,
    /// This process's CPU time (its threads) over the timed calls.
    cpu: Duration,
    /// VmRSS after the last result was dropped and a few small calls made.
    rss_after_kib: u64,
}

/// Child mode of (d): connect, a few small calls, VmHWM, one warm-up `big` call, `calls` timed
/// ones, VmHWM; the last result dropped, a few small calls, VmRSS. Each result stays alive until
/// the next one is in, as in the CLI's and the floor's `--repeat` loops. Prints "BEFORE_KIB
/// AFTER_KIB WALL_NS CPU_NS RSS_AFTER_KIB".
fn peak_child(mode: &str, serve: &Path, calls: usize) {
    let args = json!({ "bytes": BIG });
    let mut last_len = 0;
    let (before, wall, cpu, hwm, rss_after) = match mode {
        "ours" => {
            let mut c = Ours::start(serve, &[]);
            c.calls(10);
            let before = vm_hwm_kib();
            let (wall, cpu) = smol::block_on(async {
                let mut last = None;
                let mut timed = None;
                for i in 0..=calls {
                    if i == 1 {
                        timed = Some((Instant::now(), mcp_testkit::cpu::process_cpu()));
                    }
                    let r = c.client.call_tool("big", args.clone()).await.expect("big");
                    match &r.content[..] {
                        [mcp_connect::proto::ContentBlock::Text { text }] => last_len = text.len(),
                        other => panic!("not one text block: {} blocks", other.len()),
                    }
                    last = Some(r);
                }
                drop(last);
                let (t0, cpu0) = timed.expect("at least one timed call");
                (
                    t0.elapsed(),
                    mcp_testkit::cpu::process_cpu().saturating_sub(cpu0),
                )
            });
            let hwm = vm_hwm_kib();
            c.calls(10);
            let rss_after = vm_kib("VmRSS:");
            c.close();
            (before, wall, cpu, hwm, rss_after)
        }
        "baseline" => {
            let mut c = Baseline::start(serve);
            c.calls(10);
            let before = vm_hwm_kib();
            let mut last = Value::Null;
            let mut timed = None;
            for i in 0..=calls {
                if i == 1 {
                    timed = Some((Instant::now(), mcp_testkit::cpu::process_cpu()));
                }
                let v = c.call("big", args.clone());
                last_len = v["result"]["content"][0]["text"]
                    .as_str()
                    .map_or(0, str::len);
                last = v;
            }
            drop(last);
            let (t0, cpu0) = timed.expect("at least one timed call");
            let wall = t0.elapsed();
            let cpu = mcp_testkit::cpu::process_cpu().saturating_sub(cpu0);
            let hwm = vm_hwm_kib();
            c.calls(10);
            let rss_after = vm_kib("VmRSS:");
            c.close();
            (before, wall, cpu, hwm, rss_after)
        }
        other => panic!("unknown child mode {other:?}"),
    };
    assert_eq!(last_len, BIG);
    println!(
        "{before} {hwm} {} {} {rss_after}",
        wall.as_nanos(),
        cpu.as_nanos()
    );
}

fn vm_hwm_kib() -> u64 {
    vm_kib("VmHWM:")
}

/// A `/proc/self/status` figure in KiB (`VmHWM:`, `VmRSS:`).
fn vm_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

/// Our client.
struct Ours {
    client: Client,
}

impl Ours {
    /// Against `serve ARGS…`.
    fn start(serve: &Path, args: &[&str]) -> Ours {
        let (program, args) = server_command(serve, args);
        let config = StdioConfig::new(program).args(args);
        let transport = StdioTransport::spawn(config).expect("spawn");
        let mut config = ClientConfig::default();
        if std::env::var_os("MCP_STDIO_BENCH_NO_TIMEOUT").is_some() {
            // Diagnostic: no request deadline, so the driver never arms a timer.
            config.session.default_timeout = None;
        }
        if std::env::var_os("MCP_STDIO_BENCH_HANDLERS").is_some() {
            // The client as an application with handlers registers it: every capability
            // declared (the server never asks here, so this measures what declaring costs the
            // call path).
            config.handlers = mcp_connect::Handlers::new()
                .elicitation_modes(true, true, |_| async {
                    Ok(mcp_connect::ElicitAnswer::Decline)
                })
                .sampling(|_| async { Err(mcp_connect::HandlerError("no model".into())) })
                .fixed_roots(vec![mcp_connect::Root::directory("/tmp")]);
        }
        let client = Client::with_config(transport, config);
        smol::block_on(client.initialize()).expect("initialize");
        Ours { client }
    }

    fn calls(&mut self, n: usize) -> Duration {
        smol::block_on(async {
            let started = Instant::now();
            for _ in 0..n {
                let r = self
                    .client
                    .call_tool("echo", json!({"text": "hi"}))
                    .await
                    .expect("call");
                assert_eq!(r.text(), "hi");
            }
            started.elapsed()
        })
    }

    /// `n` calls made by `width` callers at once (tasks on one thread), each checking its answer.
    fn concurrent_calls(&mut self, n: usize, width: usize) -> Duration {
        let started = Instant::now();
        mcp_testkit::echo_calls(&self.client, n, width);
        started.elapsed()
    }

    fn close(self) {
        smol::block_on(self.client.close()).expect("close");
    }
}

/// The minimal blocking client ([`Floor`]): what a careful hand-written loop costs.
struct Baseline(Floor);

impl Baseline {
    fn start(serve: &Path) -> Baseline {
        let (program, args) = server_command(serve, &[]);
        Baseline(Floor::start(program, &args, Stdio::null()))
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.0.call(name, arguments)
    }

    fn calls(&mut self, n: usize) -> Duration {
        let started = Instant::now();
        for _ in 0..n {
            let v = self.call("echo", json!({"text": "hi"}));
            assert_eq!(v["result"]["content"][0]["text"], "hi");
        }
        started.elapsed()
    }

    fn close(self) {
        self.0.close()
    }
}

fn us_per(calls: usize, t: Duration) -> f64 {
    t.as_secs_f64() * 1e6 / calls as f64
}
