//! Sequential `tools/call` round trips over Streamable HTTP: our `Client` against a
//! minimal hand-written blocking HTTP/1.1 client. std only: `Instant` and medians.
//!
//! `cargo bench -p mcp-connect --bench http`. Run without `--bench` (as `cargo test --benches` does) it only
//! smoke-tests itself with a few calls.
//!
//! The server is the test kit's (`mcp_testkit::http_server`, also the `mcp-http` example's: std, a
//! thread per connection, 127.0.0.1), started twice, each in a process of its own (this bench
//! again, `--serve-child`; `MCP_HTTP_BENCH_IN_PROCESS=1` starts them in this one): default
//! behaviour (each answer is a chunked `text/event-stream`) and `json: true` (`application/json`
//! with `Content-Length`).
//!
//! Six clients, each on a keep-alive connection of its own:
//! (a) Our `Client` (`smol::block_on`, `client.call_tool("echo", {"text":"hi"})`, result decoded and
//!     its text checked), one call at a time, legacy era.
//! (f) The same against the server in the modern era (`Behaviour::modern`: no session, the
//!     per-request `_meta` and its mirrored headers, `resultType` on every result), found by the
//!     probe (`EraChoice::Auto`, the default).
//! (x, y) The floor under (a) and (f): bare isahc making the same POSTs with no MCP layer (the
//!     body read whole, "hi" looked for in it), through its async API in `smol::block_on` and
//!     through its blocking one. Each request crosses to isahc's agent thread (curl) and back.
//! (p) (a) awaited in `smol::future::block_on`: the caller parks on a futex, as isahc's blocking
//!     API parks it, never in async-io's reactor: what the caller's executor adds to (a).
//! (b) A blocking client over ONE keep-alive `std::net::TcpStream` (`set_nodelay(true)`): the same
//!     handshake (`initialize`, `notifications/initialized`), then each call is one `write_all` of
//!     the POST (Content-Length, `Mcp-Session-Id`, `MCP-Protocol-Version`) and a read of the
//!     response head and body (Content-Length, or chunked for SSE: only what that server sends),
//!     `serde_json::Value` parsed and its text checked.
//!
//! After a warm-up, each round gives every client the same calls in turns of a tenth of a round,
//! one client after the other in an order that rotates, so that all meet the same load. Printed:
//! each client's calls/s (the median of the rounds), its client CPU per call (the schedstat time of
//! the process's threads, an in-process server's named threads left out) and its thread switches
//! per call (each wake-up of a thread, each hand-off counts one); then ours against bare isahc (the
//! faster of x and y in each round: the floor for HTTP) for both eras, and the modern era against
//! the legacy one (each round's ratio of its own turns; the median of the rounds).
//!
//! Where the kernel puts the threads matters here: three threads take turns on two CPUs (the
//! caller, isahc's agent thread and the server's), and a client whose caller and agent end up on
//! different CPUs pays a wake-up across them at each hand-off (on a virtual machine, an
//! inter-processor interrupt each). To hold the placement, run the servers on one CPU and the
//! clients on the other: `MCP_HTTP_BENCH_SERVER_CPUS=1 taskset -c 0 cargo bench -p mcp-connect
//! --bench http` (the servers are started under `taskset -c <list>`; `taskset` must be on the
//! `PATH`). Comparing that run with a free one tells what the clients' code costs from what
//! their threads' placement costs.
//!
//! Syscalls per call are not counted in process. For them, run one client alone against the
//! server in a process of its own, under `perf stat`:
//! `mcp-http --serve [--json] [--modern]` (the example) prints `LISTENING <url>`, then
//! `perf stat -e 'syscalls:sys_enter_*' <this bench> --only a|a0|af|ai|f|x|xf|y|b --url <url> [--calls N]`
//! (`a0`: ours, its calls without a timeout: what the caller's timer costs; `ai`: ours without
//! the idle reader (`ClientConfig::idle_reader`): what it costs; `af` and `xf`: ours
//! and bare isahc's async API awaited in `smol::future::block_on`, which parks the thread on a
//! futex, as isahc's blocking API does, instead of `smol::block_on`, which parks it in
//! async-io's reactor (`epoll`) whenever the reactor is free: what the caller's executor costs)
//! (N calls after 200 of warm-up; the start-up's few syscalls are counted too).
//! Alone, it prints each thread's CPU, switches and sleeps per call (a sleep is a voluntary
//! switch: the thread blocked, and something had to wake it; unlike switches, not inflated by
//! a loaded machine's preemptions).

use mcp_connect::proto::Request;
use mcp_connect::{Client, HttpTransport, HttpTransportConfig};
use mcp_testkit::cpu::{threads_cpu, ThreadsCpu};
use mcp_testkit::http_server as server;
use mcp_testkit::{median, per_s};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

struct Params {
    /// Warm-up time per client; also measures the rates that size the rounds.
    warmup: Duration,
    /// A round makes as many calls as the faster client makes in this time (at least 20)...
    round: Duration,
    rounds: usize,
    /// ...and at most this many.
    max_calls: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    // `--only a|a0|af|ai|f|x|xf|y|b --url URL [--calls N]` (a0: ours, calls without a timeout; ai: without the idle reader; af, xf:
    // ours and bare async isahc in `smol::future::block_on`): one client alone against a server of another
    // process (`mcp-http --serve [--json] [--modern]`), for `perf stat` to count its syscalls.
    // `--serve-child [--json] [--modern]`: the server of a full run, in a process of its own
    // (see `Serving`).
    if args.iter().any(|a| a == "--serve-child") {
        let srv = server::start(server::Behaviour {
            json: args.iter().any(|a| a == "--json"),
            modern: args.iter().any(|a| a == "--modern"),
            ..server::Behaviour::default()
        })
        .expect("listen on 127.0.0.1");
        println!("LISTENING {}", srv.url);
        std::io::stdout().flush().expect("stdout");
        // Until the bench closes our stdin (or ends).
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        return;
    }
    if let (Some(only), Some(url)) = (arg("--only"), arg("--url")) {
        let calls = arg("--calls").map_or(20_000, |n| n.parse().expect("--calls N"));
        let mut client: Box<dyn Calls> = match only.as_str() {
            "a" | "f" => Box::new(Ours::start(url)),
            "a0" => Box::new(Ours {
                no_timeout: true,
                ..Ours::start(url)
            }),
            "ai" => Box::new(Ours::with_config(
                url,
                mcp_connect::ClientConfig {
                    idle_reader: false,
                    ..Default::default()
                },
            )),
            "af" => Box::new(Ours {
                futex: true,
                ..Ours::start(url)
            }),
            "xf" => Box::new(RawIsahc {
                futex: true,
                ..RawIsahc::start(url, false)
            }),
            "x" => Box::new(RawIsahc::start(url, false)),
            "y" => Box::new(RawIsahc::start(url, true)),
            "b" => Box::new(Baseline::start(url)),
            other => panic!("--only a|a0|af|ai|f|x|xf|y|b, not {other}"),
        };
        client.calls(200);
        let before = threads_cpu(server::SERVER_THREADS);
        let by_thread = per_thread();
        *LATENCIES.lock().unwrap() = Some(Vec::with_capacity(calls));
        let spent = client.calls(calls);
        let mut took = LATENCIES.lock().unwrap().take().unwrap_or_default();
        took.sort();
        // The fast end of the distribution: the path a call takes when the machine lets it run,
        // far less disturbed by a loaded machine than the median.
        let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
        println!(
            "({only}) latency µs: min {:.1}, p5 {:.1}, p25 {:.1}, p50 {:.1}",
            at(0.0),
            at(0.05),
            at(0.25),
            at(0.5)
        );
        let cost = threads_cpu(server::SERVER_THREADS) - before;
        println!(
            "({only}) {calls} calls: {:.0} calls/s, client CPU {:.1} µs/call, {:.2} switches/call",
            per_s(calls, spent),
            cost.cpu.as_secs_f64() * 1e6 / calls as f64,
            cost.switches as f64 / calls as f64
        );
        for (name, (cpu, switches, sleeps)) in per_thread() {
            let (cpu0, switches0, sleeps0) = by_thread.get(&name).copied().unwrap_or_default();
            println!(
                "  threads {name:<16} {:>7.1} µs/call {:>6.2} switches/call {:>6.2} sleeps/call",
                (cpu - cpu0) as f64 / 1e3 / calls as f64,
                (switches - switches0) as f64 / calls as f64,
                (sleeps - sleeps0) as f64 / calls as f64
            );
        }
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let p = if full {
        Params {
            warmup: Duration::from_secs(1),
            round: Duration::from_secs(1),
            rounds: 5,
            max_calls: 20_000,
        }
    } else {
        Params {
            warmup: Duration::from_millis(50),
            round: Duration::from_millis(50),
            rounds: 1,
            max_calls: 50,
        }
    };
    if !full {
        println!("(smoke run: pass --bench, as `cargo bench` does, for real numbers)");
    }
    println!(
        "sequential tools/call echo {{\"text\":\"hi\"}} over Streamable HTTP (the test kit's std server in its own process, 127.0.0.1): {} rounds after {:?} of warm-up per client; a round = the calls the faster client makes in {:?}",
        p.rounds, p.warmup, p.round
    );
    for (label, json) in [
        ("SSE (chunked text/event-stream)", false),
        ("JSON (Content-Length)", true),
    ] {
        let srv = Serving::start(json, false);
        let modern = Serving::start(json, true);
        println!(
            "server answering with {label}: {} (modern era: {})",
            srv.url(),
            modern.url()
        );
        if let Some(cpus) = server_cpus() {
            println!("  servers held to CPUs {cpus} (MCP_HTTP_BENCH_SERVER_CPUS)");
        }
        run(srv.url(), modern.url(), &p);
    }
}

/// The CPUs the servers of a full run are held to (`MCP_HTTP_BENCH_SERVER_CPUS`, a `taskset -c`
/// list), if any: none for servers started in this process (`MCP_HTTP_BENCH_IN_PROCESS`), whose
/// threads share the clients' CPUs.
fn server_cpus() -> Option<String> {
    if std::env::var_os("MCP_HTTP_BENCH_IN_PROCESS").is_some() {
        return None;
    }
    std::env::var("MCP_HTTP_BENCH_SERVER_CPUS").ok()
}

/// A server for a full run: in a process of its own (this bench, `--serve-child`), as a user's
/// server is, so that its threads, allocations and the log it keeps of every request share
/// nothing with the clients measured here; `MCP_HTTP_BENCH_IN_PROCESS=1` starts it in this
/// process instead (its threads are still left out of the clients' CPU).
enum Serving {
    Child(mcp_testkit::Listening),
    InProcess(server::Server),
}

impl Serving {
    fn start(json: bool, modern: bool) -> Serving {
        if std::env::var_os("MCP_HTTP_BENCH_IN_PROCESS").is_some() {
            let srv = server::start(server::Behaviour {
                json,
                modern,
                ..server::Behaviour::default()
            })
            .expect("listen on 127.0.0.1");
            return Serving::InProcess(srv);
        }
        let exe = std::env::current_exe().expect("bench path");
        let mut cmd = match server_cpus() {
            Some(cpus) => {
                let mut cmd = std::process::Command::new("taskset");
                cmd.args(["-c", &cpus]).arg(exe);
                cmd
            }
            None => std::process::Command::new(exe),
        };
        cmd.arg("--serve-child");
        if json {
            cmd.arg("--json");
        }
        if modern {
            cmd.arg("--modern");
        }
        Serving::Child(mcp_testkit::Listening::start(&mut cmd))
    }

    fn url(&self) -> &str {
        match self {
            Serving::Child(child) => &child.url,
            Serving::InProcess(srv) => &srv.url,
        }
    }
}

/// CPU nanoseconds, switches and sleeps (voluntary switches: each one a wake-up to come, whatever
/// the load) so far of this process's live threads, by name (digits left out: `isahc-agent-3`
/// counts as `isahc-agent-`).
fn per_thread() -> std::collections::BTreeMap<String, (u64, u64, u64)> {
    let mut out = std::collections::BTreeMap::new();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = task.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let name: String = name
            .trim()
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .collect();
        let stat = std::fs::read_to_string(path.join("schedstat")).unwrap_or_default();
        let f: Vec<u64> = stat
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
        let sleeps: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let e = out.entry(name).or_insert((0, 0, 0));
        e.0 += f.first().copied().unwrap_or(0);
        e.1 += f.get(2).copied().unwrap_or(0);
        e.2 += sleeps;
    }
    out
}

/// Each call's wall time, kept while `--only` measures (`None`: not kept).
static LATENCIES: std::sync::Mutex<Option<Vec<Duration>>> = std::sync::Mutex::new(None);

/// Keeps the wall time of a call sent at `sent`, when `--only` measures.
fn latency(sent: Instant) {
    let took = sent.elapsed();
    if let Some(all) = LATENCIES.lock().unwrap().as_mut() {
        all.push(took);
    }
}

/// A client under measurement: `n` sequential calls, their wall time.
trait Calls {
    fn calls(&mut self, n: usize) -> Duration;
}

/// What one client spent over the rounds.
#[derive(Default)]
struct Tally {
    /// Wall time per round.
    rounds: Vec<Duration>,
    /// CPU time and thread switches of the client's threads (the server's left out), all rounds.
    cost: ThreadsCpu,
    calls: usize,
}

impl Tally {
    fn rate(&self, per_round: usize) -> f64 {
        per_s(per_round, median(self.rounds.clone()))
    }
    fn cpu_us(&self) -> f64 {
        self.cost.cpu.as_secs_f64() * 1e6 / self.calls as f64
    }
    fn switches(&self) -> f64 {
        self.cost.switches as f64 / self.calls as f64
    }
}

fn run(url: &str, modern_url: &str, p: &Params) {
    let mut ours = Ours::start(url);
    let mut modern = Ours::start(modern_url);
    assert_eq!(modern.client.era(), Some(mcp_connect::proto::Era::Modern));
    let mut base = Baseline::start(url);
    let mut x = RawIsahc::start(url, false);
    let mut y = RawIsahc::start(url, true);
    let mut parked = Ours {
        futex: true,
        ..Ours::start(url)
    };
    let names = [
        "(a) ours, legacy era",
        "(f) ours, modern era",
        "(x) bare isahc, async",
        "(y) bare isahc, blocking",
        "(b) hand-written blocking",
        "(p) ours, futex-parked",
    ];
    let mut clients: [&mut dyn Calls; 6] = [
        &mut ours,
        &mut modern,
        &mut x,
        &mut y,
        &mut base,
        &mut parked,
    ];
    let rate = |c: &mut dyn Calls| {
        let (mut n, mut spent) = (0, Duration::ZERO);
        while spent < p.warmup {
            spent += c.calls(5);
            n += 5;
        }
        per_s(n, spent)
    };
    let warm: Vec<f64> = clients.iter_mut().map(|c| rate(&mut **c)).collect();
    // Sized on our client, so that a round of all six stays short.
    let calls = ((warm[0] * p.round.as_secs_f64()) as usize).clamp(20, p.max_calls);
    let turns = 10;
    let chunk = (calls / turns).max(1);
    let calls = chunk * turns;
    println!("  {calls} calls per client per round, in {turns} turns of {chunk}; each turn runs the six clients one after the other, the order rotating");
    let mut tally: Vec<Tally> = (0..clients.len()).map(|_| Tally::default()).collect();
    for round in 0..p.rounds {
        let mut spent = [Duration::ZERO; 6];
        for turn in 0..turns {
            for k in 0..clients.len() {
                let i = (k + turn + round) % clients.len();
                let before = threads_cpu(server::SERVER_THREADS);
                spent[i] += clients[i].calls(chunk);
                let cost = threads_cpu(server::SERVER_THREADS) - before;
                tally[i].cost.cpu += cost.cpu;
                tally[i].cost.switches += cost.switches;
                tally[i].calls += chunk;
            }
        }
        let line: Vec<String> = spent
            .iter()
            .map(|t| format!("{:>6.0}", per_s(calls, *t)))
            .collect();
        println!("  round {round} calls/s (a f x y b p): {}", line.join(" "));
        for (t, s) in tally.iter_mut().zip(spent) {
            t.rounds.push(s);
        }
    }
    println!(
        "  {:<27} {:>8} {:>9} {:>15} {:>10}",
        "client", "calls/s", "µs/call", "client CPU/call", "switches"
    );
    for (name, t) in names.iter().zip(&tally) {
        let r = t.rate(calls);
        println!(
            "  {name:<27} {r:>8.0} {:>9.1} {:>12.1} µs {:>10.2}",
            1e6 / r,
            t.cpu_us(),
            t.switches()
        );
    }
    // Each round's ratio is of its own turns; the floor is the faster of bare isahc's two APIs
    // in that round.
    let ratio = |ours: usize| {
        let mut r: Vec<f64> = (0..p.rounds)
            .map(|k| {
                let floor = tally[2].rounds[k].min(tally[3].rounds[k]);
                floor.as_secs_f64() / tally[ours].rounds[k].as_secs_f64()
            })
            .collect();
        r.sort_by(f64::total_cmp);
        (r[r.len() / 2], r[0], r[r.len() - 1])
    };
    let floor_cpu = tally[2].cpu_us().min(tally[3].cpu_us());
    for (i, era) in [(0, "legacy"), (1, "modern"), (5, "futex-parked legacy")] {
        let (m, lo, hi) = ratio(i);
        println!(
            "  {era} era: ours / bare isahc (the faster of x, y, each round) {m:.2}x calls/s (rounds {lo:.2}x..{hi:.2}x); client CPU per call {:.2}x isahc's",
            tally[i].cpu_us() / floor_cpu
        );
    }
    let mut eras: Vec<f64> = (0..p.rounds)
        .map(|k| tally[0].rounds[k].as_secs_f64() / tally[1].rounds[k].as_secs_f64())
        .collect();
    eras.sort_by(f64::total_cmp);
    println!(
        "  modern / legacy era (f)/(a): {:.2}x calls/s (median of the rounds' ratios)",
        eras[eras.len() / 2]
    );
    modern.close();
    ours.close();
    parked.close();
}

/// Runs `f` in `smol::future::block_on` (`futex`: the thread parks on a futex) or in
/// `smol::block_on` (async-io's: it parks in the reactor, `epoll`, when the reactor is free).
fn block_on<T>(futex: bool, f: impl std::future::Future<Output = T>) -> T {
    match futex {
        true => smol::future::block_on(f),
        false => smol::block_on(f),
    }
}

/// Our client.
struct Ours {
    client: Client,
    /// Calls without a timeout (`--only a0`): what the caller's timer costs.
    no_timeout: bool,
    /// Awaited in `smol::future::block_on` (parks on a futex), not `smol::block_on` (which
    /// parks in async-io's reactor when it can): `--only af`.
    futex: bool,
}

impl Ours {
    fn start(url: &str) -> Ours {
        Ours::with_config(url, mcp_connect::ClientConfig::default())
    }

    /// Ours with `config` (`--only ai`: without the idle reader, what it costs per call).
    fn with_config(url: &str, config: mcp_connect::ClientConfig) -> Ours {
        let transport = HttpTransport::new(HttpTransportConfig::new(url)).expect("transport");
        let client = Client::with_config(transport, config);
        smol::block_on(client.initialize()).expect("initialize");
        Ours {
            client,
            no_timeout: false,
            futex: false,
        }
    }

    fn close(self) {
        smol::block_on(self.client.close()).expect("close");
    }
}

impl Calls for Ours {
    fn calls(&mut self, n: usize) -> Duration {
        let futex = self.futex;
        block_on(futex, async {
            let started = Instant::now();
            for _ in 0..n {
                let request = Request::call_tool("echo", json!({"text": "hi"}));
                let request = match self.no_timeout {
                    true => request.no_timeout(),
                    false => request,
                };
                let sent = Instant::now();
                let r = self.client.call(request).await.expect("call");
                latency(sent);
                assert_eq!(r.text(), "hi");
            }
            started.elapsed()
        })
    }
}

/// The minimal blocking client: what a careful hand-written loop over one socket costs.
struct Baseline {
    out: TcpStream,
    reader: BufReader<TcpStream>,
    authority: String,
    path: String,
    session: Option<String>,
    next_id: u64,
    request: Vec<u8>,
    line: String,
    body: Vec<u8>,
}

/// What one response brought.
struct Answer {
    status: u16,
    session: Option<String>,
    content_type: String,
}

impl Baseline {
    fn start(url: &str) -> Baseline {
        let rest = url.strip_prefix("http://").expect("http URL");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let stream = TcpStream::connect(authority).expect("connect");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let mut b = Baseline {
            out: stream.try_clone().expect("clone the socket"),
            reader: BufReader::with_capacity(64 * 1024, stream),
            authority: authority.to_owned(),
            path: path.to_owned(),
            session: None,
            next_id: 0,
            request: Vec::with_capacity(1024),
            line: String::new(),
            body: Vec::with_capacity(4096),
        };
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "baseline", "version": "0"}
            }
        });
        let answer = b.post(&init.to_string());
        assert_eq!(answer.status, 200);
        b.session = answer.session;
        let message = b.message(&answer.content_type);
        assert!(
            message["result"]["protocolVersion"].is_string(),
            "{message}"
        );
        let answer = b.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(answer.status, 202);
        b
    }
}

impl Calls for Baseline {
    fn calls(&mut self, n: usize) -> Duration {
        let started = Instant::now();
        for _ in 0..n {
            self.next_id += 1;
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}}"#,
                self.next_id
            );
            let sent = Instant::now();
            let answer = self.post(&body);
            latency(sent);
            assert_eq!(answer.status, 200);
            let v = self.message(&answer.content_type);
            assert_eq!(v["id"], self.next_id);
            assert_eq!(v["result"]["content"][0]["text"], "hi", "{v}");
        }
        started.elapsed()
    }
}

impl Baseline {
    /// Writes one POST and reads the response; its body is left in `self.body`.
    fn post(&mut self, body: &str) -> Answer {
        self.request.clear();
        let r = &mut self.request;
        write!(
            r,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
            self.path,
            self.authority,
            body.len()
        )
        .unwrap();
        if let Some(s) = &self.session {
            write!(
                r,
                "Mcp-Session-Id: {s}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            )
            .unwrap();
        }
        r.extend_from_slice(b"\r\n");
        r.extend_from_slice(body.as_bytes());
        self.out.write_all(&self.request).expect("write");
        self.read_response()
    }

    fn read_line(&mut self) -> &str {
        self.line.clear();
        let n = self.reader.read_line(&mut self.line).expect("read");
        assert!(n > 0, "the server closed the connection");
        self.line.trim_end()
    }

    fn read_response(&mut self) -> Answer {
        let status: u16 = self
            .read_line()
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status line");
        let (mut length, mut chunked, mut session, mut content_type) =
            (0usize, false, None, String::new());
        loop {
            let line = self.read_line();
            if line.is_empty() {
                break;
            }
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().expect("Content-Length"),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "mcp-session-id" => session = Some(value.to_owned()),
                "content-type" => content_type = value.to_owned(),
                _ => {}
            }
        }
        self.body.clear();
        if chunked {
            loop {
                let size = usize::from_str_radix(self.read_line(), 16).expect("chunk size");
                if size == 0 {
                    self.read_line(); // the empty line after the last chunk (no trailers)
                    break;
                }
                let start = self.body.len();
                self.body.resize(start + size, 0);
                self.reader
                    .read_exact(&mut self.body[start..])
                    .expect("chunk");
                self.read_line(); // CRLF after the chunk
            }
        } else {
            self.body.resize(length, 0);
            self.reader.read_exact(&mut self.body).expect("body");
        }
        Answer {
            status,
            session,
            content_type,
        }
    }

    /// The JSON-RPC message in `self.body`: the body itself, or the `data:` of its one SSE event.
    fn message(&self, content_type: &str) -> Value {
        if content_type.starts_with("text/event-stream") {
            let text = std::str::from_utf8(&self.body).expect("UTF-8");
            let data = text
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .expect("a data line");
            serde_json::from_str(data.trim_start()).expect("JSON")
        } else {
            serde_json::from_slice(&self.body).expect("JSON")
        }
    }
}

/// Bare isahc: the same POSTs with no MCP layer, through its async API (`smol::block_on`) or its
/// blocking one; each request crosses to isahc's agent thread (curl) and back.
struct RawIsahc {
    client: isahc::HttpClient,
    url: String,
    session: Option<String>,
    blocking: bool,
    /// The async API in `smol::future::block_on` (`--only xf`), not `smol::block_on`.
    futex: bool,
}

impl RawIsahc {
    fn start(url: &str, blocking: bool) -> RawIsahc {
        use isahc::config::{Configurable, RedirectPolicy};
        let client = isahc::HttpClient::builder()
            .redirect_policy(RedirectPolicy::None)
            .build()
            .unwrap();
        let mut r = RawIsahc {
            client,
            url: url.to_owned(),
            session: None,
            blocking,
            futex: false,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
        let (_, session) = r.post(init.to_string(), true);
        r.session = session;
        r.post(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
            true,
        );
        r
    }
    fn request(&self, body: String) -> isahc::Request<String> {
        let mut b = isahc::Request::builder()
            .method("POST")
            .uri(self.url.as_str())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(s) = &self.session {
            b = b
                .header("Mcp-Session-Id", s.as_str())
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        b.body(body).unwrap()
    }
    fn post(&self, body: String, blocking: bool) -> (String, Option<String>) {
        use isahc::ReadResponseExt;
        let req = self.request(body);
        if blocking {
            let mut resp = self.client.send(req).unwrap();
            let s = resp
                .headers()
                .get("mcp-session-id")
                .map(|v| v.to_str().unwrap().to_owned());
            (String::from_utf8(resp.bytes().unwrap()).unwrap(), s)
        } else {
            block_on(self.futex, async {
                use isahc::AsyncReadResponseExt;
                let mut resp = self.client.send_async(req).await.unwrap();
                let s = resp
                    .headers()
                    .get("mcp-session-id")
                    .map(|v| v.to_str().unwrap().to_owned());
                (String::from_utf8(resp.bytes().await.unwrap()).unwrap(), s)
            })
        }
    }
}

impl Calls for RawIsahc {
    fn calls(&mut self, n: usize) -> Duration {
        let started = Instant::now();
        for i in 0..n {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}}"#,
                i + 1
            );
            let sent = Instant::now();
            let (text, _) = self.post(body, self.blocking);
            latency(sent);
            assert!(text.contains("\"hi\""), "{text}");
        }
        started.elapsed()
    }
}
