//! The multi-server tool set (`ServerSet`): start-up of 5 servers at once against one after
//! another (wall time ratio), and what the set adds to a call over a bare client on the same
//! server (µs per call, and the ratio of calls/s). std only: `Instant` and medians.
//!
//! `cargo bench -p mcp-connect --bench servers`. Run without `--bench` (as `cargo test --benches` does) it only
//! smoke-tests itself.
//!
//! The servers are the test kit's stdio server (`target/release/mcp-testkit-serve`), each
//! started through `sh -c 'sleep 0.3; exec …'`: a server that takes 300 ms to come up, as an
//! `npx`- or `uvx`-launched one does (their own start-up is hundreds of milliseconds to seconds).
//! (a) Start-up: `ServerSet::connect` with the 5, against 5 `connect_stdio` one after another
//!     (each opened and closed), median of 5 rounds each, and the ratio.
//! (b) Per call: sequential `echo` calls through `ServerSet::call("s0__echo", …)` against
//!     `Client::call_tool("echo", …)` on a client of its own to the same kind of server, taking
//!     turns in chunks (both meet the same load), median of rounds; the difference in µs per call
//!     and the ratio of calls/s.

use mcp_connect::{
    connect_stdio, ClientConfig, Launch, ServerSet, ServerSetConfig, ServerSpec, StdioConfig,
};
use mcp_testkit::{median, per_s, serve_bin};
use serde_json::json;
use std::time::{Duration, Instant};

fn slow_start(bin: &std::path::Path) -> StdioConfig {
    StdioConfig::new("sh").args([
        "-c".to_owned(),
        format!("sleep 0.3; exec {}", bin.display()),
    ])
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let bin = serve_bin();
    let rounds = if bench { 5 } else { 1 };
    smol::block_on(async {
        // (a) Start-up.
        let mut together = Vec::new();
        let mut apart = Vec::new();
        for _ in 0..rounds {
            let specs = (0..5)
                .map(|i| ServerSpec::new(format!("s{i}"), Launch::Stdio(slow_start(&bin))))
                .collect();
            let t = Instant::now();
            let set = ServerSet::connect(specs, ServerSetConfig::default()).await;
            together.push(t.elapsed());
            assert!(set.failures().await.is_empty());
            assert_eq!(set.tools().await.len(), 30);
            set.close().await;
            let t = Instant::now();
            for _ in 0..5 {
                let client = connect_stdio(slow_start(&bin), ClientConfig::default())
                    .await
                    .unwrap();
                client.list_tools().await.unwrap();
                client.close().await.unwrap();
            }
            apart.push(t.elapsed());
        }
        let (t, a) = (median(together), median(apart));
        println!(
            "start-up of 5 servers: at once {:.0} ms, one after another {:.0} ms, ratio {:.2}x",
            t.as_secs_f64() * 1e3,
            a.as_secs_f64() * 1e3,
            a.as_secs_f64() / t.as_secs_f64()
        );

        // (b) Per call.
        let set = ServerSet::connect(
            vec![ServerSpec::new("s0", Launch::Stdio(StdioConfig::new(&bin)))],
            ServerSetConfig::default(),
        )
        .await;
        set.tools().await;
        let client = connect_stdio(StdioConfig::new(&bin), ClientConfig::default())
            .await
            .unwrap();
        let args = json!({"text": "hi"});
        let calls = if bench { 20_000 } else { 200 };
        let chunk = calls / 20;
        // Warm-up.
        for _ in 0..chunk {
            set.call("s0__echo", args.clone()).await.unwrap();
            client.call_tool("echo", args.clone()).await.unwrap();
        }
        let (mut through_set, mut bare) = (Vec::new(), Vec::new());
        for _ in 0..rounds.max(3) {
            let (mut s, mut b) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..20 {
                let t = Instant::now();
                for _ in 0..chunk {
                    let r = set.call("s0__echo", args.clone()).await.unwrap();
                    assert_eq!(r.text(), "hi");
                }
                s += t.elapsed();
                let t = Instant::now();
                for _ in 0..chunk {
                    let r = client.call_tool("echo", args.clone()).await.unwrap();
                    assert_eq!(r.text(), "hi");
                }
                b += t.elapsed();
            }
            through_set.push(s);
            bare.push(b);
        }
        let (s, b) = (median(through_set), median(bare));
        let n = (chunk * 20) as f64;
        println!(
            "per call: set {:.0} calls/s, bare client {:.0} calls/s, ratio {:.3}x, added {:.2} µs/call",
            per_s(chunk * 20, s),
            per_s(chunk * 20, b),
            per_s(chunk * 20, s) / per_s(chunk * 20, b),
            (s.as_secs_f64() - b.as_secs_f64()) / n * 1e6
        );
        set.close().await;
        client.close().await.unwrap();
    });
}
