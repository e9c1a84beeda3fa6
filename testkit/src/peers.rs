//! The real MCP peers `.ci/install-peers` installs (server-everything, server-filesystem, the
//! Python SDK, the conformance suite), found or skipped, and run over HTTP.

use crate::process::{free_port, GroupGuard};
use crate::repo_root;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Whether tests that need real peers must run (CI) rather than skip.
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// A real peer installed by `.ci/install-peers`: `.peers/bin/<name>` under the repository root.
///
/// Missing: `None` after printing why the test is skipped (run `.ci/install-peers`), or a panic
/// when [`required`] (CI) — a CI run must not pass by skipping.
pub fn peer_bin(name: &str) -> Option<PathBuf> {
    let bin = repo_root().join(".peers/bin").join(name);
    if !bin.is_file() {
        install_peers();
    }
    if bin.is_file() {
        return Some(bin);
    }
    let why = format!(
        "peer `{name}` not installed ({} is missing; .ci/install-peers needs node with npm, and python3)",
        bin.display()
    );
    if required() {
        panic!("{why}, and CI is set: peer tests must run in CI");
    }
    eprintln!("skipped: {why}");
    None
}

/// Runs `.ci/install-peers` once per test process (pinned versions, into the ignored `.peers/`),
/// when node's npm and python3 are there to do it.
fn install_peers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let have = |tool: &str| {
            std::process::Command::new(tool)
                .arg("--version")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !(have("npm") && have("python3")) {
            return;
        }
        eprintln!("installing the MCP peers the tests use (.ci/install-peers)…");
        let script = repo_root().join(".ci/install-peers");
        match std::process::Command::new("bash").arg(script).status() {
            Ok(s) if s.success() => {}
            other => eprintln!(".ci/install-peers failed: {other:?}"),
        }
    });
}

/// A file under `drivers/tests/peers/` (the peers' scripts), by name.
pub fn peer_script(name: &str) -> PathBuf {
    repo_root().join("drivers/tests/peers").join(name)
}

/// Spawn to "listening": ≈0.5 s for node, ≈1.7 s for the Python SDK; far more on a loaded machine.
pub const HTTP_START_LIMIT: Duration = Duration::from_secs(60);

/// A running HTTP server peer (its own process group, killed and reaped on drop).
pub struct HttpPeer {
    guard: GroupGuard,
    /// Its MCP endpoint.
    pub url: String,
    /// Everything it printed (stdout and stderr, interleaved by line), for failure messages.
    output: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpPeer {
    /// Spawns `command` and waits until one of its output lines makes `ready` return the URL.
    pub fn start(
        mut command: std::process::Command,
        ready: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> HttpPeer {
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut guard = GroupGuard::spawn(&mut command)
            .unwrap_or_else(|e| panic!("spawn {:?}: {e}", command.get_program()));
        let output = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let ready = std::sync::Arc::new(ready);
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let stdout: Box<dyn std::io::Read + Send> = Box::new(guard.child().stdout.take().unwrap());
        let stderr: Box<dyn std::io::Read + Send> = Box::new(guard.child().stderr.take().unwrap());
        for pipe in [stdout, stderr] {
            let (output, ready, tx) = (output.clone(), ready.clone(), tx.clone());
            // Keeps draining after readiness: server-everything logs every request to stdout.
            std::thread::spawn(move || {
                for line in std::io::BufRead::lines(std::io::BufReader::new(pipe)) {
                    let Ok(line) = line else { break };
                    if let Some(url) = ready(&line) {
                        let _ = tx.send(url);
                    }
                    let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                    if out.len() < 256 * 1024 {
                        out.push_str(&line);
                        out.push('\n');
                    }
                }
            });
        }
        drop(tx);
        let started = Instant::now();
        let url = match rx.recv_timeout(HTTP_START_LIMIT) {
            Ok(url) => url,
            Err(e) => {
                guard.stop();
                panic!(
                    "the server did not say it was listening ({e:?}, after {:?}); its output:\n{}",
                    started.elapsed(),
                    output.lock().unwrap_or_else(|e| e.into_inner())
                );
            }
        };
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "the peer must listen on 127.0.0.1 only: {url}"
        );
        HttpPeer { guard, url, output }
    }

    /// server-everything in `streamableHttp` mode on a free port, endpoint `/mcp`.
    pub fn everything(bin: &Path) -> HttpPeer {
        let port = free_port();
        let mut command = std::process::Command::new(bin);
        command.arg("streamableHttp").env("PORT", port.to_string());
        let url = format!("http://127.0.0.1:{port}/mcp");
        HttpPeer::start(command, move |line| {
            line.contains(&format!("listening on port {port}"))
                .then(|| url.clone())
        })
    }

    /// drivers/tests/peers/fastmcp_server.py over HTTP, with extra options (`--json-response`, `--stateless`).
    pub fn python(python: &Path, options: &[&str]) -> HttpPeer {
        let mut command = std::process::Command::new(python);
        command
            .arg(peer_script("fastmcp_server.py"))
            .args(["--transport", "http"])
            .args(options);
        HttpPeer::start(command, |line| {
            line.strip_prefix("LISTENING ").map(|u| u.trim().to_owned())
        })
    }

    pub fn output(&self) -> String {
        self.output
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Kills the server's process group and checks that nothing of it is left.
    pub fn stop(mut self) {
        let pgid = self.guard.pid();
        assert!(
            self.guard.stop(),
            "process group {pgid} still has members after SIGKILL"
        );
    }
}
