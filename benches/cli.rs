//! End to end as users run it: the `mcp-client` CLI binary making `--call echo --repeat N` against
//! the test kit's stdio server, against the floor — `mcp-testkit-floor`, a minimal hand-written
//! blocking client with no library (std pipes, one `write_all` + flush per request, `read_line`
//! per answer) — on the same server, in the same run, taking turns.
//!
//! `cargo bench --bench cli`. Run without `--bench` (as `cargo test --benches` does) it only
//! smoke-tests itself with a few calls.
//!
//! Rows: one core (client and server pinned to CPU 0, `taskset -c 0`: the client and the server
//! take turns on it, as on a busy or small machine) and two cores (not pinned); each in the legacy
//! era (`mcp-testkit-serve`) and the 2026-07-28 era (`mcp-testkit-serve --era modern`), side by
//! side, and the floor in each era (`mfloor`: `mcp-testkit-floor --era modern`, no handshake, each
//! request with the era's `_meta` and, over HTTP, its headers): the modern era's messages are
//! larger and cost the server more, so the modern row is held against the legacy row, the legacy
//! floor and its own era's floor — the last says what our client adds in that era.
//! On two cores over stdio a row `busy` is the floor busy-polling (`mcp-testkit-floor
//! --busy-poll 50`: non-blocking reads for up to 50 µs before it blocks, as our client waits on
//! more than one CPU): the floor of that way of waiting, which the blocking floor is not.
//! Each row gives, as medians of the rounds:
//! - calls/s, and the ratio to the floor's calls/s: the median of the rounds' own ratios (each
//!   round's runs meet the same load; the modern row's ratio to the legacy row's likewise);
//! - the client's CPU time per call (its threads' `schedstat`, printed by both binaries), and the
//!   ratio to the floor's;
//! - syscalls per call of the client alone, by kind (`perf stat` tracepoints, one extra run per
//!   row: the whole tree is counted, the server is wrapped in a `perf stat` of its own, and its
//!   counts are taken off), when `perf` can count syscalls here; else the column says why not.
//!
//! Then the same over Streamable HTTP: the test kit's HTTP server (`mcp-testkit-serve --http`,
//! SSE answers, one process an era, pinned with the client to CPU 0 for one core), the CLI with
//! `--url`, against the HTTP floor — `mcp-testkit-floor --url`, the same exchanges through bare
//! isahc's blocking API, no MCP library ([`mcp_testkit::http_floor`]) — a quarter of the calls a
//! run (each is an exchange through isahc's agent thread); syscalls per call are the client
//! process's alone (the server runs apart).
//!
//! `MCP_CLI_BENCH_ONLY=one|two` runs one of the core rows only (stdio and HTTP),
//! `MCP_CLI_BENCH_ONLY=http` the HTTP rows only. `MCP_CLI_BENCH_VS=PATH` adds
//! a legacy-era row for another build of the CLI (an older commit's `target/release/mcp-client`,
//! or `target/release/examples/mcp-client` from before the command had its own package,
//! drivers/cli/), taking turns with the others: a before/after table from one run.

use mcp_testkit::{cli_bin, floor_bin, serve_bin, Listening, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The syscalls counted per call.
const SYSCALLS: [&str; 9] = [
    "futex",
    "epoll_pwait",
    "timerfd_settime",
    "epoll_ctl",
    "read",
    "write",
    "writev",
    "sched_yield",
    "recvfrom",
];

struct Params {
    calls: u64,
    rounds: usize,
}

/// What one run printed: calls/s and client CPU µs per call.
#[derive(Clone, Copy)]
struct Run {
    per_s: f64,
    cpu_us: f64,
}

#[derive(Clone, Copy, PartialEq)]
enum Cores {
    One,
    Two,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let p = if full {
        Params {
            calls: 20_000,
            rounds: 7,
        }
    } else {
        println!("(smoke run: pass --bench, as `cargo bench` does, for real numbers)");
        Params {
            calls: 200,
            rounds: 1,
        }
    };
    let (cli, floor, serve) = (cli_bin(), floor_bin(), serve_bin());
    let pinning = Command::new("taskset").arg("-V").output().is_ok();
    let only = std::env::var("MCP_CLI_BENCH_ONLY").ok();
    let vs = std::env::var_os("MCP_CLI_BENCH_VS").map(PathBuf::from);
    println!(
        "`mcp-client --call echo --args {{\"text\":\"hi\"}} --repeat {}` against the floor (mcp-testkit-floor, same arguments): {} rounds, taking turns",
        p.calls, p.rounds
    );
    let perf = perf_counts_syscalls();
    if let Err(why) = &perf {
        println!("(syscalls per call not counted: {why})");
    }
    for (http, cores) in [
        (false, Cores::One),
        (false, Cores::Two),
        (true, Cores::One),
        (true, Cores::Two),
    ] {
        let name = if cores == Cores::One { "one" } else { "two" };
        if only.as_deref().is_some_and(|o| o != name && o != "http") {
            continue;
        }
        if only.as_deref() == Some("http") && !http {
            continue;
        }
        if cores == Cores::One && !pinning {
            println!("one core: skipped (no `taskset` here)");
            continue;
        }
        let label = match (http, cores) {
            (false, Cores::One) => "one core (client and server on CPU 0)",
            (false, Cores::Two) => "two cores",
            (true, Cores::One) => {
                "Streamable HTTP (SSE answers), one core (client and server on CPU 0)"
            }
            (true, Cores::Two) => "Streamable HTTP (SSE answers), two cores",
        };
        // Over HTTP, fewer calls: each is an exchange through isahc's agent thread.
        let calls = if http { (p.calls / 4).max(50) } else { p.calls };
        println!(
            "{label}:{}",
            if http {
                format!(" {calls} calls a run")
            } else {
                String::new()
            }
        );
        // The HTTP servers, one an era, for this row (pinned with the client for one core);
        // they stop when dropped.
        let servers = http.then(|| {
            (
                http_server(cores, &serve, false),
                http_server(cores, &serve, true),
            )
        });
        let target = |modern: bool| match &servers {
            None => Target::Stdio(
                serve.clone(),
                if modern {
                    &["--era", "modern"][..]
                } else {
                    &[]
                },
            ),
            Some((legacy, modern_server)) => Target::Http(
                if modern {
                    &modern_server.url
                } else {
                    &legacy.url
                }
                .clone(),
            ),
        };
        // (name, client, what it talks to, the client's own arguments)
        let mut kinds: Vec<(&str, PathBuf, Target, &[&str])> = vec![
            ("floor", floor.clone(), target(false), &[]),
            ("legacy", cli.clone(), target(false), &[]),
            ("modern", cli.clone(), target(true), &[]),
            // The floor in the 2026-07-28 era: what that era costs by itself (larger messages,
            // the server's work on them), so that the modern row's ratio to it says what our
            // client adds, as the legacy row's to the floor does.
            ("mfloor", floor.clone(), target(true), &["--era", "modern"]),
        ];
        if !http && cores == Cores::Two {
            // The floor of the way our client waits on more than one CPU: it busy-polls.
            kinds.push(("busy", floor.clone(), target(false), &["--busy-poll", "50"]));
        }
        if let Some(vs) = &vs {
            // Legacy only: an older build may not speak the modern era.
            kinds.push(("vs", vs.clone(), target(false), &[]));
        }
        let mut rows: Vec<(&str, Vec<Run>)> = kinds.iter().map(|k| (k.0, vec![])).collect();
        for round in 0..p.rounds {
            // Turns in a different order each round, so that drift hits all alike.
            let mut order: Vec<usize> = (0..kinds.len()).collect();
            order.rotate_left(round % kinds.len());
            for i in order {
                let (_, bin, target, extra) = &kinds[i];
                rows[i].1.push(run(cores, bin, target, extra, calls));
            }
        }
        // One run per row under `perf stat`: syscalls per call, and CPU as perf counts it.
        let counted: Vec<Result<Counted, String>> = kinds
            .iter()
            .map(|(_, bin, target, extra)| match &perf {
                Ok(()) => syscalls(cores, bin, target, extra, calls),
                Err(_) => Err("no perf".into()),
            })
            .collect();
        // The rows that others are held against, by name.
        let row =
            |name: &str| -> &[Run] { &rows.iter().find(|(n, _)| *n == name).expect("a row").1 };
        let (floor_row, legacy, modern, mfloor) =
            (row("floor"), row("legacy"), row("modern"), row("mfloor"));
        let floor_cpu = med(floor_row.iter().map(|r| r.cpu_us));
        // What perf's count adds to the floor's own (start-up, the server's perf wrapper): taken
        // off a build that prints no CPU figure of its own.
        let perf_extra = counted[0]
            .as_ref()
            .map_or(f64::NAN, |c| c.cpu_us - floor_cpu);
        for (i, (name, runs)) in rows.iter().enumerate() {
            let rate = med(runs.iter().map(|r| r.per_s));
            let mut cpu = med(runs.iter().map(|r| r.cpu_us));
            let mut about = "";
            if cpu.is_nan() {
                cpu = counted[i]
                    .as_ref()
                    .map_or(f64::NAN, |c| c.cpu_us - perf_extra);
                about = "≈";
            }
            let vs = if i == 0 {
                "           ".to_owned()
            } else {
                format!("{:.2}x floor", paired(runs, floor_row))
            };
            let era = match *name {
                "modern" => format!(
                    ", {:.2}x legacy, {:.2}x its floor",
                    paired(runs, legacy),
                    paired(runs, mfloor)
                ),
                _ => String::new(),
            };
            let bin = match *name {
                "floor" => "mcp-testkit-floor",
                "busy" => "…-floor --busy-poll",
                "mfloor" => "…-floor --era modern",
                "legacy" | "modern" => "mcp-client",
                _ => "MCP_CLI_BENCH_VS",
            };
            println!(
                "  {name:<7} {bin:<18} {rate:>8.0} calls/s {vs}{era}   client CPU {about}{cpu:>5.2} µs/call ({:.2}x floor's)",
                cpu / floor_cpu
            );
            match &counted[i] {
                Ok(c) => println!("          syscalls/call: {}", c.per_call),
                Err(e) if perf.is_ok() => println!("          syscalls/call: not counted ({e})"),
                Err(_) => {}
            }
        }
        println!(
            "  the 2026-07-28 era by itself: its floor at {:.2}x the legacy floor's calls/s; our client against its era's floor: {:.2}x legacy, {:.2}x modern",
            paired(mfloor, floor_row),
            paired(legacy, floor_row),
            paired(modern, mfloor)
        );
        if let Some((_, busy)) = rows.iter().find(|(name, _)| *name == "busy") {
            let cpu = med(busy.iter().map(|r| r.cpu_us));
            let legacy_cpu = med(legacy.iter().map(|r| r.cpu_us));
            println!(
                "  legacy against the busy-polling floor: {:.2}x its calls/s, {:.2}x its CPU per call",
                paired(legacy, busy),
                legacy_cpu / cpu
            );
        }
    }
}

/// What one run under `perf stat` counted for the client alone.
struct Counted {
    /// `name N, …` per call.
    per_call: String,
    /// CPU µs per call as perf counts it (task-clock; start-up included).
    cpu_us: f64,
}

/// The median of the rounds' own ratios of calls/s, `a` to `b`: each round's two runs met the
/// same load, so their ratio holds where the machine drifted between rounds.
fn paired(a: &[Run], b: &[Run]) -> f64 {
    med(a.iter().zip(b).map(|(a, b)| a.per_s / b.per_s))
}

fn med(v: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// What a client talks to: the stdio server (its binary and arguments, after `--`), or a
/// Streamable HTTP endpoint (`--url`).
enum Target {
    Stdio(PathBuf, &'static [&'static str]),
    Http(String),
}

impl Target {
    /// The client's arguments that name it, `server` wrapping a stdio server's command (in a
    /// `perf stat` of its own, say).
    fn tail(&self, wrap: &[String]) -> Vec<String> {
        match self {
            Target::Stdio(serve, args) => ["--".to_owned()]
                .into_iter()
                .chain(wrap.iter().cloned())
                .chain([serve.display().to_string()])
                .chain(args.iter().map(|a| a.to_string()))
                .collect(),
            Target::Http(url) => vec!["--url".into(), url.clone()],
        }
    }
}

/// The test kit's HTTP server (`mcp-testkit-serve --http [--modern]`) in a process of its own,
/// pinned to CPU 0 for one core; it stops when dropped (its stdin closed).
fn http_server(cores: Cores, serve: &Path, modern: bool) -> Listening {
    let mut cmd = match cores {
        Cores::One => {
            let mut c = Command::new("taskset");
            c.args(["-c", "0"]).arg(serve);
            c
        }
        Cores::Two => Command::new(serve),
    };
    cmd.arg("--http");
    if modern {
        cmd.arg("--modern");
    }
    Listening::start(&mut cmd)
}

/// `CLIENT --call echo --args {"text":"hi"} --repeat N TAIL…`, pinned to CPU 0 for one core; what
/// its last line says.
fn command(cores: Cores, client: &Path, extra: &[&str], tail: &[String], calls: u64) -> Command {
    let mut cmd = match cores {
        Cores::One => {
            let mut c = Command::new("taskset");
            c.args(["-c", "0"]).arg(client);
            c
        }
        Cores::Two => Command::new(client),
    };
    cmd.args(["--call", "echo", "--args", r#"{"text":"hi"}"#, "--repeat"])
        .arg(calls.to_string())
        .args(extra)
        .args(tail);
    cmd
}

fn run(cores: Cores, client: &Path, target: &Target, extra: &[&str], calls: u64) -> Run {
    let out = command(cores, client, extra, &target.tail(&[]), calls)
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "{} failed: {}",
        client.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hi");
    parse_rate(&String::from_utf8_lossy(&out.stderr)).unwrap_or_else(|| {
        panic!(
            "no `calls/s: R (client CPU C µs/call)` line from {}: {}",
            client.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `calls/s: R (client CPU C µs/call)`, the last such line.
fn parse_rate(stderr: &str) -> Option<Run> {
    let line = stderr.lines().rev().find(|l| l.starts_with("calls/s: "))?;
    let rest = line.strip_prefix("calls/s: ")?;
    // A build that prints no CPU figure (an older one, for `MCP_CLI_BENCH_VS`): its CPU is
    // known from the `perf stat` run only.
    let (rate, cpu) = match rest.split_once(" (client CPU ") {
        Some((rate, cpu)) => (rate, cpu.strip_suffix(" µs/call)")?.trim().parse().ok()?),
        None => (rest, f64::NAN),
    };
    Some(Run {
        per_s: rate.trim().parse().ok()?,
        cpu_us: cpu,
    })
}

fn events() -> String {
    SYSCALLS
        .iter()
        .map(|s| format!("syscalls:sys_enter_{s}"))
        .chain(["task-clock".to_owned()])
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether `perf stat` counts syscall tracepoints here (it needs the kernel's tracefs and the
/// permission to read it).
fn perf_counts_syscalls() -> Result<(), String> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", "syscalls:sys_enter_getpid", "true"])
        .output()
        .map_err(|_| "no `perf` here".to_owned())?;
    let text = String::from_utf8_lossy(&out.stderr);
    if out.status.success() && !text.contains("not supported") && !text.contains("<not") {
        Ok(())
    } else {
        Err(format!(
            "`perf stat -e syscalls:…` does not work here: {}",
            text.lines().next().unwrap_or("")
        ))
    }
}

/// The client's syscalls per call, by kind: one run under `perf stat` (the whole tree), a stdio
/// server wrapped in a `perf stat` of its own whose counts are taken off (an HTTP server runs
/// apart: nothing to take off).
fn syscalls(
    cores: Cores,
    client: &Path,
    target: &Target,
    extra: &[&str],
    calls: u64,
) -> Result<Counted, String> {
    let dir = TempDir::new("cli-bench");
    let (outer, inner) = (dir.path().join("outer"), dir.path().join("inner"));
    let wrap: Vec<String> = ["perf", "stat", "-x,", "-o"]
        .iter()
        .map(|s| s.to_string())
        .chain([
            inner.display().to_string(),
            "-e".into(),
            events(),
            "--".into(),
        ])
        .collect();
    let tail = target.tail(&wrap);
    let inner_cmd = command(cores, client, extra, &tail, calls);
    let mut cmd = Command::new("perf");
    cmd.args(["stat", "-x,", "-o"])
        .arg(&outer)
        .args(["-e", &events(), "--"])
        .arg(inner_cmd.get_program())
        .args(inner_cmd.get_args());
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let all = counts(&outer)?;
    let server = match target {
        Target::Stdio(..) => counts(&inner)?,
        Target::Http(_) => Default::default(),
    };
    let client = |event: &str| {
        all.get(event).copied().unwrap_or(0.0) - server.get(event).copied().unwrap_or(0.0)
    };
    // task-clock is in ms, over the whole run (start-up included).
    let cpu_us = client("task-clock") * 1000.0 / calls as f64;
    let per_call: Vec<String> = SYSCALLS
        .iter()
        .map(|s| format!("{s} {:.2}", client(s) / calls as f64))
        .collect();
    Ok(Counted {
        per_call: per_call.join(", "),
        cpu_us,
    })
}

/// `perf stat -x,` output: count per syscall name.
fn counts(path: &PathBuf) -> Result<std::collections::HashMap<String, f64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let mut f = l.split(',');
            let n: f64 = f.next()?.trim().parse().ok()?;
            let event = f.nth(1)?;
            let event = event.strip_prefix("syscalls:sys_enter_").unwrap_or(event);
            Some((event.to_owned(), n))
        })
        .collect())
}
