//! Who drives the connection: every caller's deadline fires on time whoever else waits, a future
//! that is polled once and then kept holds nobody up (beyond the idle reader's next look, when the
//! transport's one wake-up went to it), a cancelled wait or `initialize` loses nothing, and a
//! storm of concurrent calls with random timeouts, drops and parked futures over stdio and HTTP
//! stays clean. Real child processes and a real local HTTP server.

use mcp_connect::{
    Client, Error, HttpTransport, HttpTransportConfig, Request, StderrMode, StdioConfig,
    StdioTransport, Transport,
};
use mcp_testkit::http_server as server;
use mcp_testkit::{close_and_check, kept_beside, serve, serve_bin, wait_until};
use serde_json::json;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A client in the legacy era: these tests are about the transport, and many of their servers
/// are shell scripts that answer the handshake line by line (the era probe has its own tests, in
/// tests/eras.rs).
async fn connect(config: StdioConfig) -> Client {
    let settings = mcp_connect::ClientConfig {
        session: mcp_connect::proto::Config {
            era: mcp_connect::proto::EraChoice::Legacy,
            ..mcp_connect::ClientConfig::default().session
        },
        ..mcp_connect::ClientConfig::default()
    };
    let client = Client::with_config(StdioTransport::spawn(config).expect("spawn"), settings);
    client.initialize().await.expect("initialize");
    client
}

fn hang(timeout: Option<Duration>) -> Request {
    let r = Request::call_tool("echo", json!({"text": "never answered"}));
    match timeout {
        Some(t) => r.timeout(t),
        None => r.no_timeout(),
    }
}

/// Runs `a` in the background (polled, never finishing in time) while `b` runs; returns `b`'s output.
async fn beside<A: Future, B: Future>(a: A, b: B) -> B::Output {
    smol::future::or(b, async {
        a.await;
        panic!("the background call ended first");
    })
    .await
}

#[test]
fn a_short_timeout_fires_on_time_while_a_longer_call_waits() {
    smol::block_on(async {
        let client = connect(serve(&["hang"])).await;
        for a_timeout in [Some(Duration::from_secs(10)), None] {
            let short = async {
                smol::Timer::after(Duration::from_millis(100)).await;
                let started = Instant::now();
                let r = client.request(hang(Some(Duration::from_millis(200)))).await;
                (r, started.elapsed())
            };
            let (r, took) = beside(client.request(hang(a_timeout)), short).await;
            assert!(
                matches!(r, Err(Error::Timeout(d)) if d == Duration::from_millis(200)),
                "{r:?}"
            );
            // Bounded latency is the point; generous against a busy machine, far from 10 s.
            assert!(
                took < Duration::from_secs(4),
                "the 200 ms timeout fired after {took:?} (the other call's timeout: {a_timeout:?})"
            );
        }
        close_and_check(client).await;
    });
}

#[test]
fn busy_polling_never_holds_a_caller_past_its_deadline_or_a_millisecond() {
    // A caller alone busy-polls (on more than one CPU) for the time asked, taken as at most
    // 1 ms and never past the deadline: a server that never answers still times out on time,
    // and the client keeps working after a run of misses.
    smol::block_on(async {
        let settings = mcp_connect::ClientConfig {
            busy_poll: Duration::from_secs(60),
            session: mcp_connect::proto::Config {
                era: mcp_connect::proto::EraChoice::Legacy,
                ..mcp_connect::ClientConfig::default().session
            },
            ..mcp_connect::ClientConfig::default()
        };
        let transport = StdioTransport::spawn(serve(&["hang"])).expect("spawn");
        let client = Client::with_config(transport, settings);
        client.initialize().await.expect("initialize");
        for _ in 0..3 {
            let started = Instant::now();
            let r = client.request(hang(Some(Duration::from_millis(50)))).await;
            let took = started.elapsed();
            assert!(
                matches!(r, Err(Error::Timeout(d)) if d == Duration::from_millis(50)),
                "{r:?}"
            );
            // Generous against a busy machine, far from the minute asked for.
            assert!(took < Duration::from_secs(4), "timed out after {took:?}");
        }
        let pong = client.request(Request::new("ping", None)).await;
        assert!(pong.is_ok(), "{pong:?}");
        close_and_check(client).await;
    });
}

#[test]
fn a_short_timeout_fires_on_time_on_another_thread() {
    let client = Arc::new(smol::block_on(connect(serve(&["hang"]))));
    let other = client.clone();
    let long = std::thread::spawn(move || {
        smol::block_on(async {
            let _ = smol::future::or(other.request(hang(None)), async {
                smol::Timer::after(Duration::from_secs(10)).await;
                Err(Error::Closed)
            })
            .await;
        })
    });
    std::thread::sleep(Duration::from_millis(150));
    let started = Instant::now();
    let r = smol::block_on(client.request(hang(Some(Duration::from_millis(200)))));
    let took = started.elapsed();
    assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
    // Far from the other thread's 10 s wait, generous against a busy machine.
    assert!(took < Duration::from_secs(4), "fired after {took:?}");
    long.join().unwrap();
    smol::block_on(Arc::into_inner(client).unwrap().close()).unwrap();
}

#[test]
fn a_call_future_polled_once_and_kept_holds_nobody_up() {
    let client = Arc::new(smol::block_on(connect(serve(&[]))));
    let holder = client.clone();
    let (parked_tx, parked_rx) = std::sync::mpsc::channel();
    let parker = std::thread::spawn(move || {
        smol::block_on(async {
            let mut call = Box::pin(holder.call(
                Request::call_tool("slow", json!({"ms": 100})).timeout(Duration::from_secs(30)),
            ));
            assert!(smol::future::poll_once(&mut call).await.is_none());
            parked_tx.send(()).unwrap();
            // Kept, not polled, for a while…
            std::thread::sleep(Duration::from_secs(8));
            // …and its answer is there when it is polled again.
            let r = smol::future::or(call, async {
                smol::Timer::after(Duration::from_secs(5)).await;
                Err(Error::Closed)
            })
            .await;
            assert_eq!(r.unwrap().text(), "done");
        })
    });
    parked_rx.recv().unwrap();
    for i in 0..5 {
        let started = Instant::now();
        let text = format!("meanwhile {i}");
        let r = smol::block_on(client.call(
            Request::call_tool("echo", json!({ "text": text })).timeout(Duration::from_secs(3)),
        ));
        assert_eq!(r.unwrap().text(), text);
        // Not held until the parked future is polled again (8 s), however busy the machine.
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
    parker.join().unwrap();
    smol::block_on(Arc::into_inner(client).unwrap().close()).unwrap();
}

#[test]
fn a_kept_future_that_took_the_pipes_wake_up_holds_the_others_up_until_the_idle_reader_looks() {
    // The pipe's readiness wakes the waiter polled last (one, not all 32 of a crowd): here a
    // call's future polled once and then kept. Another caller, asleep since before, gets its
    // answer from the idle reader's next look, within its period.
    let client = smol::block_on(connect(serve(&[])));
    let mut a = Box::pin(client.call(Request::call_tool("slow", json!({"ms": 300}))));
    let mut p = Box::pin(client.call(Request::call_tool("slow", json!({"ms": 30_000}))));
    // `a`'s answer comes after 300 ms; its readiness wakes `p`, which is not polled. `a` is
    // woken by its answer, taken by the idle reader's look.
    let seen = kept_beside(a.as_mut(), p.as_mut());
    assert_eq!(seen.output.unwrap().text(), "done");
    assert!(
        seen.kept_was_woken,
        "the kept future took the pipe's wake-up"
    );
    // The answer's 300 ms, and at most the idle reader's period after it; generous against a
    // busy machine, far from `a`'s timeout.
    assert!(seen.took >= Duration::from_millis(300), "{:?}", seen.took);
    assert!(seen.took < Duration::from_secs(5), "{:?}", seen.took);
    drop((a, p));
    smol::block_on(close_and_check(client));
}

/// A `hang` server whose stderr lines (it prints `serve: cancelled ID` for each cancellation it
/// reads) are collected.
fn hang_logged() -> (StdioConfig, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let config = serve(&["hang"]).stderr(StderrMode::Callback(Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_owned())
    })));
    (config, lines)
}

#[test]
fn a_parked_futures_timeout_fires_on_time_with_nobody_polling() {
    // The idle reader keeps the session's timers: a deadline fires (and the server hears the
    // cancellation) at its time although the only future waiting for it is never polled again,
    // and back-to-back calls before it, each with a later deadline, did not move it.
    smol::block_on(async {
        let (config, stderr) = hang_logged();
        let client = connect(config).await;
        let mut call = Box::pin(client.request(hang(Some(Duration::from_millis(300)))));
        assert!(smol::future::poll_once(&mut call).await.is_none());
        let started = Instant::now();
        let cancelled = || {
            stderr
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.starts_with("serve: cancelled"))
        };
        assert!(
            wait_until(Duration::from_secs(20), cancelled),
            "the parked call's timeout never fired"
        );
        // On time: well under the 10 s a stuck timer would take, generous for a busy machine.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "fired after {:?}",
            started.elapsed()
        );
        let r = call.await;
        assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
        close_and_check(client).await;
    });
}

#[test]
fn the_server_is_answered_while_the_only_waiting_future_is_parked() {
    // `ping-first`: the server asks the client a ping and a sampling request before it answers the
    // call, and waits for both answers; `ask-on-roots-change`: it asks only once the client says
    // its roots changed, sent after the call's future was polled once and parked. So the first
    // poll cannot finish the call (the server has not asked yet), and the questions come while
    // nobody polls: the idle reader's watchdog answers for the parked future.
    smol::block_on(async {
        let settings = mcp_connect::ClientConfig {
            session: mcp_connect::proto::Config {
                era: mcp_connect::proto::EraChoice::Legacy,
                ..mcp_connect::ClientConfig::default().session
            },
            handlers: mcp_connect::Handlers::new().roots(true, || async { Ok(Vec::new()) }),
            ..mcp_connect::ClientConfig::default()
        };
        let transport =
            StdioTransport::spawn(serve(&["ping-first", "ask-on-roots-change"])).expect("spawn");
        let client = Client::with_config(transport, settings);
        client.initialize().await.expect("initialize");
        let mut call = Box::pin(client.call_tool("echo", json!({"text": "parked"})));
        assert!(smol::future::poll_once(&mut call).await.is_none());
        assert!(client.roots_changed(), "the roots change was not sent");
        assert!(
            wait_until(Duration::from_secs(30), || client.stats().pings_answered
                == 1),
            "nobody answered the server's ping while the call future was parked"
        );
        let r = call.await.unwrap();
        assert!(r.text().starts_with("parked\n"), "{}", r.text());
        assert_eq!(client.stats().requests_rejected, 1);
        close_and_check(client).await;
    });
}

#[test]
fn a_cancelled_wait_at_the_servers_exit_keeps_its_status_and_stderr() {
    smol::block_on(async {
        let client = connect(serve(&["crash-on-call"])).await;
        // Waits that are given up on all around the server's exit (some of them see the end of
        // stdout first) must not lose why it ended.
        let crash = client.call_tool("echo", json!({"text": "crash"}));
        let churn = async {
            for _ in 0..40 {
                let _ = smol::future::or(
                    async { Some(client.request(Request::new("ping", None)).await) },
                    async {
                        smol::Timer::after(Duration::from_millis(3)).await;
                        None
                    },
                )
                .await;
            }
        };
        let (r, ()) = smol::future::zip(crash, churn).await;
        let check = |r: Result<_, Error>| match r {
            Err(Error::ServerExited {
                status: Some(status),
                stderr,
            }) => {
                assert_eq!(status.code(), Some(3));
                assert!(stderr.contains("crashing mid-call, on purpose"), "{stderr}");
            }
            other => panic!("expected ServerExited with status and stderr, got {other:?}"),
        };
        check(r.map(drop));
        // And every later call says the same.
        check(client.call_tool("echo", json!({})).await.map(drop));
        client.close().await.unwrap();
    });
}

#[test]
fn a_timeout_during_the_exit_wait_does_not_lose_why_the_server_stopped() {
    // The server logs its reason, closes stdout, and lingers a second before it exits, so the
    // client waits for its status; a 150 ms timeout fires in that window.
    let init = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"sh","version":"0"}}}"#;
    let script = format!(
        "read l; echo '{init}'; read l; read l; echo 'fatal: database is locked' >&2; exec 1>&-; sleep 1; exit 7"
    );
    smol::block_on(async {
        let client = connect(StdioConfig::new("sh").args(["-c", &script])).await;
        let call = client.call(Request::call_tool("echo", json!({})).no_timeout());
        let ping = client.request(Request::new("ping", None).timeout(Duration::from_millis(150)));
        // The ping first, so that with a single driver it is the ping's wait that is cut short.
        let (ping, call) = smol::future::zip(ping, call).await;
        assert!(matches!(ping, Err(Error::Timeout(_))), "{ping:?}");
        match call {
            Err(Error::ServerExited { stderr, .. }) => {
                assert!(stderr.contains("fatal: database is locked"), "{stderr}")
            }
            other => panic!("expected ServerExited with its stderr, got {other:?}"),
        }
        client.close().await.unwrap();
    });
}

#[test]
fn a_dropped_initialize_leaves_the_handshake_to_the_next_one() {
    smol::block_on(async {
        // A server that takes a second to start answering.
        let script = format!("sleep 1; exec '{}'", serve_bin().display());
        let transport =
            StdioTransport::spawn(StdioConfig::new("sh").args(["-c", &script])).unwrap();
        let client = Client::new(transport);
        let gave_up = smol::future::or(async { Some(client.initialize().await) }, async {
            smol::Timer::after(Duration::from_millis(200)).await;
            None
        })
        .await;
        assert!(gave_up.is_none(), "initialize answered too early");
        // A second initialize waits for the handshake under way; a third, once it is done,
        // returns its answer again.
        let first = client.initialize().await.expect("the handshake completes");
        assert_eq!(first.server_info.name, "mcp-client-serve");
        assert_eq!(client.initialize().await.unwrap(), first);
        assert_eq!(client.list_tools().await.unwrap().len(), 6);
        close_and_check(client).await;
    });
}

/// What one storm op did.
#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    timed_out: AtomicU64,
    dropped: AtomicU64,
    parked: AtomicU64,
    pings: AtomicU64,
}

impl Tally {
    fn line(&self) -> String {
        format!(
            "{} answered, {} timed out, {} dropped, {} parked, {} pings",
            self.ok.load(Ordering::Relaxed),
            self.timed_out.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
            self.parked.load(Ordering::Relaxed),
            self.pings.load(Ordering::Relaxed)
        )
    }
}

/// A small deterministic generator, so a failure can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn storm_secs() -> u64 {
    std::env::var("MCP_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

/// Two threads × `loops` concurrent loops of random ops against `client`, for `storm_secs()`:
/// a call whose unique answer is checked (5 s timeout), a call with a 1–15 ms timeout, a call
/// dropped after 0–15 ms, a call polled once and parked for 0–10 ms before it is awaited, a
/// ping. Every op has a watchdog: none may hang, and no answer may reach the wrong caller.
fn storm(client: Client, loops: usize, seed: u64) -> Arc<Tally> {
    let tally = Arc::new(Tally::default());
    let until = Instant::now() + Duration::from_secs(storm_secs());
    let next_token = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let (client, tally, next_token) = (client.clone(), tally.clone(), next_token.clone());
            std::thread::spawn(move || {
                let ex = smol::LocalExecutor::new();
                let tasks: Vec<_> = (0..loops)
                    .map(|l| {
                        let (client, tally, next_token) = (&client, &tally, &next_token);
                        let mut rng =
                            Rng(seed
                                ^ ((t * 97 + l) as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                        async move {
                            while Instant::now() < until {
                                let token = next_token.fetch_add(1, Ordering::Relaxed);
                                let text = format!("token {token}");
                                let ms = rng.below(4);
                                let args = if ms == 0 {
                                    json!({"text": text})
                                } else {
                                    json!({"ms": ms})
                                };
                                let tool = if ms == 0 { "echo" } else { "slow" };
                                let expect = if ms == 0 { text.clone() } else { "done".into() };
                                let op = rng.below(5);
                                let work = async {
                                    match op {
                                        0 => {
                                            let r = client
                                                .call(
                                                    Request::call_tool(tool, args)
                                                        .timeout(Duration::from_secs(5)),
                                                )
                                                .await;
                                            assert_eq!(r.expect("answered").text(), expect);
                                            tally.ok.fetch_add(1, Ordering::Relaxed);
                                        }
                                        1 => {
                                            let d = Duration::from_millis(1 + rng.below(15));
                                            match client
                                                .call(Request::call_tool(tool, args).timeout(d))
                                                .await
                                            {
                                                Ok(r) => {
                                                    assert_eq!(r.text(), expect);
                                                    tally.ok.fetch_add(1, Ordering::Relaxed);
                                                }
                                                Err(Error::Timeout(t)) => {
                                                    assert_eq!(t, d);
                                                    tally.timed_out.fetch_add(1, Ordering::Relaxed);
                                                }
                                                Err(e) => panic!("{e:?}"),
                                            }
                                        }
                                        2 => {
                                            let d = Duration::from_millis(rng.below(15));
                                            let call = client.call(Request::call_tool(tool, args));
                                            let r = smol::future::or(
                                                async { Some(call.await) },
                                                async {
                                                    smol::Timer::after(d).await;
                                                    None
                                                },
                                            )
                                            .await;
                                            match r {
                                                Some(r) => assert_eq!(r.unwrap().text(), expect),
                                                None => {
                                                    tally.dropped.fetch_add(1, Ordering::Relaxed);
                                                }
                                            }
                                        }
                                        3 => {
                                            let mut call = Box::pin(
                                                client.call(
                                                    Request::call_tool(tool, args)
                                                        .timeout(Duration::from_secs(5)),
                                                ),
                                            );
                                            let r = match smol::future::poll_once(&mut call).await {
                                                Some(r) => r,
                                                None => {
                                                    let d = Duration::from_millis(rng.below(10));
                                                    std::thread::sleep(d);
                                                    tally.parked.fetch_add(1, Ordering::Relaxed);
                                                    call.await
                                                }
                                            };
                                            assert_eq!(r.unwrap().text(), expect);
                                            tally.ok.fetch_add(1, Ordering::Relaxed);
                                        }
                                        _ => {
                                            client
                                                .request(
                                                    Request::new("ping", None)
                                                        .timeout(Duration::from_secs(5)),
                                                )
                                                .await
                                                .expect("ping");
                                            tally.pings.fetch_add(1, Ordering::Relaxed);
                                        }
                                    }
                                };
                                smol::future::or(work, async {
                                    smol::Timer::after(Duration::from_secs(10)).await;
                                    panic!("op {op} hung for 10 s");
                                })
                                .await;
                            }
                        }
                    })
                    .map(|f| ex.spawn(f))
                    .collect();
                smol::block_on(ex.run(async {
                    for task in tasks {
                        task.await;
                    }
                }))
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a storm thread failed");
    }
    tally
}

#[test]
fn a_storm_of_timeouts_drops_and_parked_futures_over_stdio_stays_clean() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let config = serve(&["threaded"]).stderr(StderrMode::Callback(Arc::new(move |l: &str| {
        sink.lock().unwrap().push(l.to_owned())
    })));
    let client = smol::block_on(connect(config));
    let tally = storm(client.clone(), 8, 0x5EED);
    println!("stdio storm: {}", tally.line());
    assert!(tally.ok.load(Ordering::Relaxed) > 100, "{}", tally.line());
    assert!(
        tally.timed_out.load(Ordering::Relaxed) > 0,
        "{}",
        tally.line()
    );
    // Still usable afterwards.
    let r = smol::block_on(client.call_tool("echo", json!({"text": "after"}))).unwrap();
    assert_eq!(r.text(), "after");
    smol::block_on(close_and_check(client));
}

#[test]
fn a_storm_of_timeouts_drops_and_parked_futures_over_http_stays_clean() {
    let srv = server::start(server::Behaviour::default()).expect("listen on 127.0.0.1");
    let client = Client::new(HttpTransport::new(HttpTransportConfig::new(&srv.url)).unwrap());
    smol::block_on(client.initialize()).unwrap();
    let tally = storm(client.clone(), 6, 0x4777);
    println!("http storm: {}", tally.line());
    assert!(tally.ok.load(Ordering::Relaxed) > 100, "{}", tally.line());
    let r = smol::block_on(client.call_tool("echo", json!({"text": "after"}))).unwrap();
    assert_eq!(r.text(), "after");
    smol::block_on(client.close()).unwrap();
}

#[test]
fn over_http_a_short_timeout_fires_on_time_and_a_parked_future_holds_nobody_up() {
    let srv = server::start(server::Behaviour::default()).expect("listen on 127.0.0.1");
    let client = Client::new(HttpTransport::new(HttpTransportConfig::new(&srv.url)).unwrap());
    smol::block_on(async {
        client.initialize().await.unwrap();
        let slow = |ms: u64| Request::call_tool("slow", json!({ "ms": ms }));
        // A long call waits (no timeout) while a short one must fire on time.
        let short = async {
            smol::Timer::after(Duration::from_millis(100)).await;
            let started = Instant::now();
            let r = client
                .request(slow(10_000).timeout(Duration::from_millis(200)))
                .await;
            (r, started.elapsed())
        };
        let (r, took) = beside(client.request(slow(10_000).no_timeout()), short).await;
        assert!(matches!(r, Err(Error::Timeout(_))), "{r:?}");
        // Far from the other call's 10 s, generous against a busy machine.
        assert!(took < Duration::from_secs(4), "fired after {took:?}");
        // A call future polled once and kept: other calls go on.
        let mut parked = Box::pin(client.call(slow(100).timeout(Duration::from_secs(30))));
        assert!(smol::future::poll_once(&mut parked).await.is_none());
        for i in 0..3 {
            let text = format!("meanwhile {i}");
            let started = Instant::now();
            let r = client
                .call(
                    Request::call_tool("echo", json!({ "text": text }))
                        .timeout(Duration::from_secs(10)),
                )
                .await
                .unwrap();
            assert_eq!(r.text(), text);
            // Not held by the parked future (never polled until the end), however busy.
            assert!(started.elapsed() < Duration::from_secs(5));
        }
        assert_eq!(parked.await.unwrap().text(), "done");
        client.close().await.unwrap();
    });
}

/// (T10) A request's progress callbacks have all run, in order, before its answer is returned,
/// whoever read them: the server writes five progress notifications and the result in one
/// write, the callback is slow (30 ms), and another thread's caller waits (and so reads) all
/// along. Twenty rounds, twenty times in order.
#[test]
fn progress_after_result_when_another_task_reads() {
    let client = Arc::new(smol::block_on(connect(serve(&["progress-burst", "hang"]))));
    let other = client.clone();
    let (waiting_tx, waiting_rx) = std::sync::mpsc::channel();
    let waiting = std::thread::spawn(move || {
        smol::block_on(async {
            let mut call = Box::pin(other.request(hang(None)));
            assert!(smol::future::poll_once(&mut call).await.is_none());
            waiting_tx.send(()).unwrap();
            call.await
        })
    });
    waiting_rx.recv().unwrap();
    for round in 0..20 {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let text = format!("burst {round}");
        let r = smol::block_on(client.call_with_progress(
            Request::call_tool("echo", json!({ "text": text })),
            move |p| {
                // A slow callback (a terminal redraw, say).
                std::thread::sleep(Duration::from_millis(30));
                s.lock().unwrap().push(p.progress);
            },
        ));
        let at_return = seen.lock().unwrap().clone();
        assert_eq!(r.unwrap().text(), text);
        assert_eq!(
            at_return,
            vec![1.0, 2.0, 3.0, 4.0, 5.0],
            "round {round}: the progress callbacks that had run when the call returned"
        );
        assert_eq!(seen.lock().unwrap().len(), 5, "none ran after, none twice");
    }
    smol::block_on(client.close()).unwrap();
    assert!(waiting.join().unwrap().is_err(), "closed while it waited");
}

/// A stdio transport that counts the messages kept back for a batch.
struct Counting {
    inner: StdioTransport,
    kept: AtomicUsize,
}

impl Transport for Counting {
    fn send(&self, message: mcp_connect::proto::Transmit) -> Result<(), Error> {
        self.inner.send(message)
    }
    fn send_batched(&self, message: mcp_connect::proto::Transmit) -> Result<bool, Error> {
        let kept = self.inner.send_batched(message)?;
        if kept {
            self.kept.fetch_add(1, Ordering::Relaxed);
        }
        Ok(kept)
    }
    fn flush(&self) {
        self.inner.flush()
    }
    fn try_recv(&self) -> Option<mcp_connect::transport::Inbound> {
        self.inner.try_recv()
    }
    fn ready(&self) -> mcp_connect::transport::BoxFuture<'_, ()> {
        self.inner.ready()
    }
    fn close(&self) -> mcp_connect::transport::BoxFuture<'_, Result<(), Error>> {
        self.inner.close()
    }
}

#[test]
fn thirty_two_callers_on_one_thread_batch_their_requests_and_each_gets_its_own_answer() {
    let settings = mcp_connect::ClientConfig {
        session: mcp_connect::proto::Config {
            era: mcp_connect::proto::EraChoice::Legacy,
            ..mcp_connect::ClientConfig::default().session
        },
        ..mcp_connect::ClientConfig::default()
    };
    let transport = Arc::new(Counting {
        inner: StdioTransport::spawn(serve(&[])).expect("spawn"),
        kept: AtomicUsize::new(0),
    });
    let client = Client::with_config(transport.clone(), settings);
    smol::block_on(client.initialize()).expect("initialize");
    // 32 tasks of one executor on this thread, each checking its own answers.
    mcp_testkit::echo_calls(&client, 3200, 32);
    // Answers read together wake their callers together, whose next requests go out together.
    assert!(
        transport.kept.load(Ordering::Relaxed) > 0,
        "no request was kept back for a batch in 3,200 calls"
    );
    assert_eq!(transport.inner.backlog_len(), 0);
    smol::block_on(client.close()).unwrap();
}

/// A transport that keeps back what is sent for a batch, as stdio's does, over a mock server
/// that answers each request the moment it is written. An answer is read once two more writes
/// went out after its request's (the server answers while the client goes on: as a server on
/// another CPU, answering its requests in turn), or by a caller that waited on the transport
/// (when nothing more is written). It counts its writes.
struct Batching {
    inner: mcp_connect::mock::MockTransport,
    /// Writes made.
    writes: AtomicUsize,
    /// Requests written.
    written: AtomicUsize,
    kept: Mutex<Vec<mcp_connect::proto::Transmit>>,
    /// The answers, each with the count of writes after which it may be read.
    answers: Mutex<std::collections::VecDeque<(usize, mcp_connect::transport::Inbound)>>,
    /// A caller waited on the transport since the answers were last all read: every one may be.
    waited: std::sync::atomic::AtomicBool,
}

impl Batching {
    /// How many writes after its request's an answer comes.
    const LAG: usize = 2;

    fn new(inner: mcp_connect::mock::MockTransport) -> Batching {
        Batching {
            inner,
            writes: AtomicUsize::new(0),
            written: AtomicUsize::new(0),
            kept: Mutex::new(Vec::new()),
            answers: Mutex::new(std::collections::VecDeque::new()),
            waited: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// One write: what was kept back, then `message`, in order.
    fn write(&self, message: Option<mcp_connect::proto::Transmit>) -> Result<(), Error> {
        let mut batch = std::mem::take(&mut *self.kept.lock().unwrap());
        batch.extend(message);
        if batch.is_empty() {
            return Ok(());
        }
        let at = self.writes.fetch_add(1, Ordering::SeqCst) + 1 + Self::LAG;
        self.written.fetch_add(batch.len(), Ordering::SeqCst);
        batch.into_iter().try_for_each(|m| self.inner.send(m))?;
        let mut answers = self.answers.lock().unwrap();
        while let Some(answer) = self.inner.try_recv() {
            answers.push_back((at, answer));
        }
        Ok(())
    }
}

impl Transport for Batching {
    fn send(&self, message: mcp_connect::proto::Transmit) -> Result<(), Error> {
        self.write(Some(message))
    }
    fn send_batched(&self, message: mcp_connect::proto::Transmit) -> Result<bool, Error> {
        self.kept.lock().unwrap().push(message);
        Ok(true)
    }
    fn flush(&self) {
        self.write(None).expect("the mock takes every message");
    }
    fn try_recv(&self) -> Option<mcp_connect::transport::Inbound> {
        let mut answers = self.answers.lock().unwrap();
        let due = self.waited.load(Ordering::SeqCst)
            || answers
                .front()
                .is_some_and(|(at, _)| *at <= self.writes.load(Ordering::SeqCst));
        if !due {
            return None;
        }
        let answer = answers.pop_front().map(|(_, answer)| answer);
        if answers.is_empty() {
            self.waited.store(false, Ordering::SeqCst);
        }
        answer.or_else(|| self.inner.try_recv())
    }
    fn ready(&self) -> mcp_connect::transport::BoxFuture<'_, ()> {
        Box::pin(async move {
            // Nothing more is written while callers wait: what the server answered comes in
            // after those that can run had their turn.
            smol::future::yield_now().await;
            self.waited.store(true, Ordering::SeqCst);
        })
    }
    fn close(&self) -> mcp_connect::transport::BoxFuture<'_, Result<(), Error>> {
        self.inner.close()
    }
}

/// Callers on one thread whose answers are in each time they come back from their turn (a
/// server that answers as fast as it is asked) batch their requests: none of them writes, on
/// coming back, what the others kept back — they write it when they come back themselves (one
/// `writev` a call, before: each caller came back to write the one request kept back since).
#[test]
fn callers_that_find_their_answers_in_leave_the_batch_to_the_callers_that_sent_it() {
    let server = mcp_connect::mock::MockServer::builder()
        .tool(
            "echo",
            json!({"type": "object"}),
            |args: serde_json::Value| args["text"].as_str().unwrap_or_default().to_owned(),
        )
        .build();
    let transport = Arc::new(Batching::new(server.transport()));
    let client = Client::new(transport.clone());
    smol::block_on(client.initialize()).expect("initialize");
    let before = (
        transport.writes.load(Ordering::SeqCst),
        transport.written.load(Ordering::SeqCst),
    );
    // 8 tasks of one executor on this thread, each checking its own answers.
    mcp_testkit::echo_calls(&client, 400, 8);
    let writes = transport.writes.load(Ordering::SeqCst) - before.0;
    let written = transport.written.load(Ordering::SeqCst) - before.1;
    // Every call went out (each answered), none is still kept back.
    assert_eq!(written, 400, "{writes} writes");
    assert!(transport.kept.lock().unwrap().is_empty());
    assert!(
        writes * 3 <= written,
        "{written} requests in {writes} writes: not batched"
    );
    smol::block_on(client.close()).unwrap();
}
