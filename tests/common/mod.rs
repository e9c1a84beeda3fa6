//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The `mcp-client` example binary. A plain `cargo test` builds examples before it runs tests; a
/// filtered run (`cargo test --test stdio`) does not, so it is built here when needed.
pub fn serve_bin() -> PathBuf {
    example_bin("mcp-client")
}

/// The binary of example `name` (`target/<profile>/examples/<name>`, beside the test binary's
/// `deps/`). `cargo build --example <name>` (with `--release` under the release profile) runs once
/// per test process: a no-op when the binary is fresh, and it keeps a filtered run
/// (`cargo test --test X`, which builds no examples) from using a stale one.
pub fn example_bin(name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let deps = std::env::current_exe().expect("test binary path");
    let profile_dir = deps
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let bin = profile_dir.join("examples").join(name);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    // Run by hand (not by cargo, which sets CARGO), an existing binary is used as it is.
    let by_cargo = std::env::var_os("CARGO").is_some();
    if !built.iter().any(|b| b == name) && (by_cargo || !bin.exists()) {
        let mut cargo = std::process::Command::new(env!("CARGO"));
        cargo
            .args(["build", "--quiet", "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        // What cargo set for this test binary (CARGO_PKG_VERSION=0.1.0, …) must not reach the
        // nested build: build scripts watch some of it (curl-sys: rerun-if-env-changed=
        // CARGO_PKG_VERSION), so each `cargo test` and each nested build would rebuild libcurl
        // and everything above it for the other.
        for (key, _) in std::env::vars_os() {
            let key_text = key.to_string_lossy();
            if key_text.starts_with("CARGO_PKG_")
                || [
                    "CARGO_CRATE_NAME",
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                ]
                .contains(&key_text.as_ref())
            {
                cargo.env_remove(&key);
            }
        }
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("run cargo");
        assert!(status.success(), "building the {name} example failed");
        built.push(name.to_owned());
    }
    assert!(bin.exists(), "{} is missing", bin.display());
    bin
}

/// Fields of /proc/PID/stat after the command name: state is [0], pgrp is [2].
fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// Whether process `pid` exists and is not a zombie.
pub fn pid_alive(pid: u32) -> bool {
    stat_fields(&pid.to_string()).is_some_and(|f| f[0] != "Z")
}

/// Whether any live (non-zombie) process belongs to process group `pgid`.
pub fn group_alive(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|pid| stat_fields(&pid))
        .any(|f| f[0] != "Z" && f[2] == pgid.to_string())
}

/// Polls `cond` until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether tests that need real peers must run (CI) rather than skip.
pub fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// A real peer installed by `.ci/install-peers`: `.peers/bin/<name>` under the repository root.
///
/// Missing: `None` after printing why the test is skipped (run `.ci/install-peers`), or a panic
/// when [`required`] (CI) — a CI run must not pass by skipping.
pub fn peer_bin(name: &str) -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(".peers/bin")
        .join(name);
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
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".ci/install-peers");
        match std::process::Command::new("bash").arg(script).status() {
            Ok(s) if s.success() => {}
            other => eprintln!(".ci/install-peers failed: {other:?}"),
        }
    });
}

/// A file under `tests/peers/` (the peers' scripts), by name.
pub fn peer_script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name)
}

/// A fresh, empty directory under the system temp dir, removed (with its contents) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `<temp>/<prefix>-<pid>-<nanos>-<n>`.
    pub fn new(prefix: &str) -> TempDir {
        static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("{prefix}-{}-{nanos}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    /// Its path.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process in its own process group, killed with its whole group (grandchildren too) and
/// reaped when dropped — also when the test panics.
pub struct GroupGuard {
    child: std::process::Child,
    stopped: bool,
}

impl GroupGuard {
    /// Spawns `command` as the leader of a new process group (`process_group(0)`).
    pub fn spawn(command: &mut std::process::Command) -> std::io::Result<GroupGuard> {
        use std::os::unix::process::CommandExt;
        let child = command.process_group(0).spawn()?;
        Ok(GroupGuard {
            child,
            stopped: false,
        })
    }

    /// The leader's pid, which is also the group id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child, e.g. to take its pipes.
    pub fn child(&mut self) -> &mut std::process::Child {
        &mut self.child
    }

    /// Kills the group and reaps the leader; true when no member of the group is left alive.
    pub fn stop(&mut self) -> bool {
        let pgid = self.child.id();
        if std::mem::replace(&mut self.stopped, true) {
            return !group_alive(pgid);
        }
        // Signal the group while the leader is still unreaped, so its id cannot have been reused.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        wait_until(Duration::from_secs(5), || !group_alive(pgid))
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What [`run_within`] collected.
#[derive(Debug)]
pub struct Finished {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command` in its own process group with stdout and stderr captured (stdin closed), and
/// waits at most `limit` for it to exit. On timeout the whole group is killed and the test panics
/// with whatever the command had printed.
pub fn run_within(command: &mut std::process::Command, limit: Duration) -> Finished {
    use std::io::Read;
    use std::process::Stdio;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut guard = GroupGuard::spawn(command)
        .unwrap_or_else(|e| panic!("spawn {:?}: {e}", command.get_program()));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let out = drain(Box::new(guard.child().stdout.take().expect("stdout")));
    let err = drain(Box::new(guard.child().stderr.take().expect("stderr")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = guard.child().try_wait().expect("wait") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Ends leftovers of the group too (and closes the pipes they may hold open).
    guard.stop();
    let (stdout, stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        Some(status) => Finished {
            status,
            stdout,
            stderr,
        },
        None => panic!(
            "{:?} did not exit within {limit:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
            command.get_program()
        ),
    }
}

/// Closes the client and checks that the server's whole process group is gone.
pub async fn close_and_check(client: mcp_client::Client<mcp_client::StdioTransport>) {
    let pid = client.transport().pid();
    client.close().await.expect("close");
    assert!(!pid_alive(pid), "server {pid} still alive after close");
    assert!(
        !group_alive(pid),
        "process group {pid} still has members after close"
    );
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
    pub fn everything(bin: &std::path::Path) -> HttpPeer {
        let port = free_port();
        let mut command = std::process::Command::new(bin);
        command.arg("streamableHttp").env("PORT", port.to_string());
        let url = format!("http://127.0.0.1:{port}/mcp");
        HttpPeer::start(command, move |line| {
            line.contains(&format!("listening on port {port}"))
                .then(|| url.clone())
        })
    }

    /// tests/peers/fastmcp_server.py over HTTP, with extra options (`--json-response`, `--stateless`).
    pub fn python(python: &std::path::Path, options: &[&str]) -> HttpPeer {
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

/// A port nobody listens on right now (bound on 127.0.0.1, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}
