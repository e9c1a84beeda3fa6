//! `rmcp-compare`: our `Client` against the `rmcp` crate's client, over stdio, against the same
//! server (the test kit's `mcp-testkit-serve`), making the same `tools/call echo {"text":"c<i>"}`
//! calls, each answer's text checked.
//!
//! Run as `rmcp-compare [--calls N] [--warmup W] [--rounds R] [--serve PATH] [--only SIDE,…]
//! [--cores 1|2|both]`, it is the parent: for each round it runs every case once as a child
//! process of its own (itself with `--child SIDE WIDTH`), taking turns in an order that rotates
//! from round to round, and prints each child's figures, then the medians. A case is a side
//! (`ours`: our `Client` on one thread, `smol::block_on`, the 32 callers tasks of one
//! `LocalExecutor`; `rmcp-mt`: rmcp on tokio's multi-thread runtime, as `#[tokio::main]` gives it,
//! the callers `tokio::spawn`ed; `rmcp-ct`: rmcp on tokio's current-thread runtime, one thread like
//! ours; on demand, `ours-nt`: ours with no request timeout, so that its driver arms no timer),
//! a width (1: one call at a time; 32: 32 callers at once, each making every 32nd call) and
//! the cores (2: as the machine is; 1: the child, and so its server, under `taskset -c 0`).
//!
//! A child connects (spawning the server, `initialize`), makes `W` warm-up calls the same way, then
//! `N` measured ones, and prints one line: `calls/s`, its own CPU per call (the sum over its live
//! threads of `/proc/self/task/*/schedstat`'s first field, ns), its threads' context switches
//! per call, and the server's CPU per call (the same way, `/proc/PID/task/*/schedstat`), which
//! says whose core is the limit. Only the calls are timed: not the spawn, the handshake or the
//! shutdown.

use mcp_connect::{Client, ClientConfig, StdioConfig, StdioTransport};
use mcp_testkit::cpu::{process_cpu, tasks_cpu};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The sides compared by default.
const SIDES: [&str; 3] = ["ours", "rmcp-mt", "rmcp-ct"];
/// A diagnostic side, on demand (`--only`): ours with no request timeout, so that its driver
/// never arms a timer (what the per-call timer costs).
const OURS_NO_TIMEOUT: &str = "ours-nt";
/// One call at a time, and 32 callers at once.
const WIDTHS: [usize; 2] = [1, 32];

/// What one child measured.
#[derive(Clone, Copy)]
struct Figures {
    calls_per_s: f64,
    cpu_us_per_call: f64,
    switches_per_call: f64,
    /// The server's CPU per call, the same way (its threads' schedstat), for telling whose core
    /// is the limit.
    server_us_per_call: f64,
}

impl Figures {
    fn line(&self) -> String {
        format!(
            "{:>8.0} calls/s  {:>6.1} µs CPU/call  {:>5.2} switches/call  (server {:>5.1} µs CPU/call)",
            self.calls_per_s, self.cpu_us_per_call, self.switches_per_call, self.server_us_per_call
        )
    }

    /// What a child prints: four numbers.
    fn print(&self) {
        println!(
            "{} {} {} {}",
            self.calls_per_s, self.cpu_us_per_call, self.switches_per_call, self.server_us_per_call
        );
    }

    /// Parses what [`Figures::print`] printed.
    fn parse(out: &str) -> Figures {
        let n: Vec<f64> = out
            .split_whitespace()
            .map(|w| w.parse().expect("a child prints four numbers"))
            .collect();
        assert_eq!(n.len(), 4, "a child prints four numbers: {out:?}");
        Figures {
            calls_per_s: n[0],
            cpu_us_per_call: n[1],
            switches_per_call: n[2],
            server_us_per_call: n[3],
        }
    }
}

struct Args {
    calls: usize,
    warmup: usize,
    rounds: usize,
    serve: PathBuf,
    sides: Vec<String>,
    cores: Vec<u32>,
    child: Option<(String, usize)>,
}

fn args() -> Args {
    let mut a = Args {
        calls: 20_000,
        warmup: 2_000,
        rounds: 5,
        serve: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/mcp-testkit-serve"),
        sides: SIDES.iter().map(|s| s.to_string()).collect(),
        cores: vec![1, 2],
        child: None,
    };
    let mut it = std::env::args().skip(1);
    let usage = "rmcp-compare [--calls N] [--warmup W] [--rounds R] [--serve PATH] [--only ours,rmcp-mt,rmcp-ct] [--cores 1|2|both]";
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| panic!("{flag} needs a value; {usage}"))
        };
        match flag.as_str() {
            "--calls" => a.calls = value().parse().expect("--calls N"),
            "--warmup" => a.warmup = value().parse().expect("--warmup W"),
            "--rounds" => a.rounds = value().parse().expect("--rounds R"),
            "--serve" => a.serve = value().into(),
            "--only" => a.sides = value().split(',').map(str::to_string).collect(),
            "--cores" => {
                a.cores = match value().as_str() {
                    "1" => vec![1],
                    "2" => vec![2],
                    "both" => vec![1, 2],
                    other => panic!("--cores {other}: 1, 2 or both"),
                }
            }
            "--child" => {
                let side = value();
                let width = value().parse().expect("--child SIDE WIDTH");
                a.child = Some((side, width));
            }
            other => panic!("unknown argument {other:?}; {usage}"),
        }
    }
    for s in &a.sides {
        assert!(
            SIDES.contains(&s.as_str()) || s == OURS_NO_TIMEOUT,
            "unknown side {s:?}: {SIDES:?} or {OURS_NO_TIMEOUT}"
        );
    }
    a
}

fn main() {
    let a = args();
    if let Some((side, width)) = &a.child {
        child(side, *width, &a).print();
        return;
    }
    assert!(
        a.serve.is_file(),
        "no server at {}: `cargo build --release -p mcp-testkit --bin mcp-testkit-serve` at the top, or --serve PATH",
        a.serve.display()
    );
    println!(
        "server: {}\n{} rounds; per child: {} warm-up calls, then {} measured calls of tools/call echo",
        a.serve.display(),
        a.rounds,
        a.warmup,
        a.calls
    );
    let mut cases = Vec::new();
    for &cores in &a.cores {
        for &width in &WIDTHS {
            for side in &a.sides {
                cases.push((cores, width, side.clone()));
            }
        }
    }
    let mut results: Vec<Vec<Figures>> = vec![Vec::new(); cases.len()];
    let me = std::env::current_exe().expect("own path");
    for round in 0..a.rounds {
        println!("round {round}:");
        // Rotate the order from round to round, so that drift on the machine (other builds)
        // does not always land on the same case.
        for k in 0..cases.len() {
            let i = (k + round) % cases.len();
            let (cores, width, side) = &cases[i];
            let mut cmd = if *cores == 1 {
                let mut c = Command::new("taskset");
                c.args(["-c", "0"]).arg(&me);
                c
            } else {
                Command::new(&me)
            };
            cmd.args(["--child", side, &width.to_string()])
                .args(["--calls", &a.calls.to_string()])
                .args(["--warmup", &a.warmup.to_string()])
                .arg("--serve")
                .arg(&a.serve);
            let out = cmd.output().expect("run a child");
            assert!(
                out.status.success(),
                "child {side} {width} failed: {:?}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            let f = Figures::parse(&String::from_utf8_lossy(&out.stdout));
            println!(
                "  {cores} core{} width {width:>2} {side:<8} {}",
                if *cores == 1 { " " } else { "s" },
                f.line()
            );
            results[i].push(f);
        }
    }
    println!(
        "\nmedians of {} rounds (calls/s; client CPU per call; context switches per call):",
        a.rounds
    );
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut rate = std::collections::HashMap::new();
    for (i, (cores, width, side)) in cases.iter().enumerate() {
        let r = &results[i];
        let f = Figures {
            calls_per_s: med(&mut r.iter().map(|f| f.calls_per_s).collect()),
            cpu_us_per_call: med(&mut r.iter().map(|f| f.cpu_us_per_call).collect()),
            switches_per_call: med(&mut r.iter().map(|f| f.switches_per_call).collect()),
            server_us_per_call: med(&mut r.iter().map(|f| f.server_us_per_call).collect()),
        };
        rate.insert((*cores, *width, side.as_str()), f.calls_per_s);
        println!(
            "  {cores} core{} {:<10} {side:<8} {}",
            if *cores == 1 { " " } else { "s" },
            if *width == 1 {
                "sequential"
            } else {
                "32 callers"
            },
            f.line()
        );
    }
    // Each round's own ratio too: a case and its neighbours ran within seconds of each other,
    // so these say how far the machine's load moved the medians.
    let index = |cores: u32, width: usize, side: &str| {
        cases
            .iter()
            .position(|(c, w, s)| *c == cores && *w == width && s == side)
    };
    for &cores in &a.cores {
        for &width in &WIDTHS {
            let Some(o) = index(cores, width, "ours") else {
                continue;
            };
            for side in ["rmcp-mt", "rmcp-ct", OURS_NO_TIMEOUT] {
                let Some(r) = index(cores, width, side) else {
                    continue;
                };
                let mut per_round: Vec<f64> = results[o]
                    .iter()
                    .zip(&results[r])
                    .map(|(o, r)| o.calls_per_s / r.calls_per_s)
                    .collect();
                per_round.sort_by(f64::total_cmp);
                let mut cpu: Vec<f64> = results[o]
                    .iter()
                    .zip(&results[r])
                    .map(|(o, r)| r.cpu_us_per_call / o.cpu_us_per_call)
                    .collect();
                println!(
                    "  ours / {side}, {cores} core{}, {}: {:.2}x calls/s (rounds' own ratios {:.2}x..{:.2}x); {side}'s CPU per call {:.2}x ours",
                    if cores == 1 { "" } else { "s" },
                    if width == 1 { "sequential" } else { "32 callers" },
                    rate[&(cores, width, "ours")] / rate[&(cores, width, side)],
                    per_round[0],
                    per_round[per_round.len() - 1],
                    med(&mut cpu)
                );
            }
        }
    }
}

/// One child: connect, warm up, measure, close.
fn child(side: &str, width: usize, a: &Args) -> Figures {
    match side {
        "ours" => ours(width, a, ClientConfig::default()),
        OURS_NO_TIMEOUT => {
            let mut config = ClientConfig::default();
            config.session.default_timeout = None;
            ours(width, a, config)
        }
        "rmcp-mt" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
            .block_on(rmcp_side(width, a)),
        "rmcp-ct" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
            .block_on(rmcp_side(width, a)),
        other => panic!("unknown side {other:?}"),
    }
}

/// A measurement under way: its starting points.
struct Meter {
    server: u32,
    started: Instant,
    cpu: Duration,
    switches: u64,
    server_cpu: Duration,
}

impl Meter {
    /// Starts measuring this process and the server `server` (its pid).
    fn start(server: u32) -> Meter {
        Meter {
            server,
            server_cpu: tasks_cpu(format!("/proc/{server}/task")),
            cpu: process_cpu(),
            switches: mcp_testkit::cpu::context_switches(),
            started: Instant::now(),
        }
    }

    /// The figures of the `calls` calls made since [`Meter::start`].
    fn stop(self, calls: usize) -> Figures {
        let wall = self.started.elapsed();
        let cpu = process_cpu().saturating_sub(self.cpu);
        let switches = mcp_testkit::cpu::context_switches().saturating_sub(self.switches);
        let server =
            tasks_cpu(format!("/proc/{}/task", self.server)).saturating_sub(self.server_cpu);
        let per = |d: Duration| d.as_secs_f64() * 1e6 / calls as f64;
        Figures {
            calls_per_s: calls as f64 / wall.as_secs_f64(),
            cpu_us_per_call: per(cpu),
            switches_per_call: switches as f64 / calls as f64,
            server_us_per_call: per(server),
        }
    }
}


/// Our side: `Client` with `config` (the default one has a request timeout, as users get it).
fn ours(width: usize, a: &Args, config: ClientConfig) -> Figures {
    let transport = StdioTransport::spawn(StdioConfig::new(&a.serve)).expect("spawn");
    let server = transport.pid();
    let client = Client::with_config(transport, config);
    smol::block_on(client.initialize()).expect("initialize");
    let run = |n: usize| mcp_testkit::echo_calls(&client, n, width);
    run(a.warmup);
    let meter = Meter::start(server);
    run(a.calls);
    let f = meter.stop(a.calls);
    smol::block_on(client.close()).expect("close");
    f
}

/// rmcp's side: `().serve(TokioChildProcess)` (the legacy `initialize` handshake, as
/// `serve_client` does), then `Peer::call_tool`.
async fn rmcp_side(width: usize, a: &Args) -> Figures {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;

    let transport = TokioChildProcess::new(tokio::process::Command::new(&a.serve)).expect("spawn");
    let server = transport.id().expect("the server's pid");
    let service = ().serve(transport).await.expect("initialize");
    let peer = service.peer().clone();

    async fn one(peer: &rmcp::Peer<rmcp::RoleClient>, i: usize) {
        let text = format!("c{i}");
        let mut args = Map::new();
        args.insert("text".into(), Value::String(text.clone()));
        let r = peer
            .call_tool(CallToolRequestParams::new("echo").with_arguments(args))
            .await
            .expect("call");
        let got = r
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str());
        assert_eq!(got, Some(text.as_str()));
    }

    async fn run(peer: &rmcp::Peer<rmcp::RoleClient>, width: usize, n: usize) {
        if width == 1 {
            for i in 0..n {
                one(peer, i).await;
            }
        } else {
            let tasks: Vec<_> = (0..width)
                .map(|w| {
                    let peer = peer.clone();
                    tokio::spawn(async move {
                        for i in (w..n).step_by(width) {
                            one(&peer, i).await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("caller task");
            }
        }
    }

    run(&peer, width, a.warmup).await;
    let meter = Meter::start(server);
    run(&peer, width, a.calls).await;
    let f = meter.stop(a.calls);
    drop(peer);
    service.cancel().await.expect("close");
    f
}
