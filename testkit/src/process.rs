//! Child processes and their process groups, polling, temporary directories, free ports.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    pub fn path(&self) -> &Path {
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

/// A command running in its own process group ([`GroupGuard`]), its stderr gathered line by line
/// as it comes, for tests that act on what it says while it runs.
pub struct Watched {
    guard: GroupGuard,
    /// What it wrote so far, and whether its stderr reached its end.
    stderr: std::sync::Arc<std::sync::Mutex<(String, bool)>>,
}

impl Watched {
    /// Spawns `command` (its stderr piped; its other streams as `command` says).
    pub fn spawn(command: &mut std::process::Command) -> Watched {
        let mut guard = GroupGuard::spawn(command.stderr(std::process::Stdio::piped()))
            .unwrap_or_else(|e| panic!("spawn {:?}: {e}", command.get_program()));
        let pipe = guard.child().stderr.take().expect("its stderr");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new((String::new(), false)));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                s.0.push_str(&line);
                s.0.push('\n');
            }
            sink.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        });
        Watched { guard, stderr }
    }

    /// The process group's leader (the command).
    pub fn guard(&mut self) -> &mut GroupGuard {
        &mut self.guard
    }

    /// The command's pid.
    pub fn pid(&self) -> u32 {
        self.guard.pid()
    }

    /// What it wrote on its stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// Waits at most `limit` until it has written `line` on its stderr; panics otherwise.
    pub fn wait_for_line(&self, line: &str, limit: Duration) {
        assert!(
            wait_until(limit, || self.stderr().contains(line)),
            "{line:?} never came; its stderr: {}",
            self.stderr()
        );
    }

    /// Its exit status, which must come within `limit` (it panics otherwise), once the rest of
    /// its stderr is read too: what it wrote before it exited may still be in the pipe. (A
    /// process it left holding the pipe open makes this wait out the rest of `limit`.)
    pub fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = self.guard.child().try_wait().expect("wait") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "it did not exit within {limit:?}; its stderr: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let left = deadline.saturating_duration_since(Instant::now());
        wait_until(left, || {
            self.stderr.lock().unwrap_or_else(|e| e.into_inner()).1
        });
        status
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
pub async fn close_and_check(client: mcp_connect::Client) {
    let pid = client.transport().pid().expect("a child process");
    client.close().await.expect("close");
    assert!(!pid_alive(pid), "server {pid} still alive after close");
    assert!(
        !group_alive(pid),
        "process group {pid} still has members after close"
    );
}

/// A port nobody listens on right now (bound on 127.0.0.1, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// A server process that printed `LISTENING <url>` as its first line and serves until its stdin
/// closes (`mcp-testkit-serve --http`, a bench's `--serve-child`); dropped, its stdin is closed
/// and it is waited for.
pub struct Listening {
    child: std::process::Child,
    /// The URL it printed.
    pub url: String,
}

impl Listening {
    /// Starts `command` with piped stdin and stdout and reads its `LISTENING <url>` line.
    pub fn start(command: &mut std::process::Command) -> Listening {
        use std::io::BufRead;
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {:?}: {e}", command.get_program()));
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("read its LISTENING line");
        let url = line
            .strip_prefix("LISTENING ")
            .unwrap_or_else(|| panic!("LISTENING <url>, not {line:?}"))
            .trim()
            .to_owned();
        Listening { child, url }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a command writes just before it exits is in [`Watched::stderr`] once [`Watched::wait`]
    /// returns: the exit can be seen before the reader has taken the last line from the pipe.
    #[test]
    fn watched_wait_returns_with_the_whole_stderr() {
        for i in 0..50 {
            let mut command = std::process::Command::new("sh");
            command
                .args(["-c", &format!("echo first >&2; echo last {i} >&2")])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null());
            let mut watched = Watched::spawn(&mut command);
            assert!(watched.wait(Duration::from_secs(60)).success());
            assert_eq!(watched.stderr(), format!("first\nlast {i}\n"));
        }
    }
}
