//! Ctrl-C and `kill` (SIGINT, SIGTERM, SIGHUP) while the command works: it exits 128 + the
//! signal's number, having ended every server it started with its whole process group. Each
//! server is a wrapper `sh` script that starts a grandchild (`sleep 1000 &`) and then runs the
//! test kit's server as its child; all three write their pids to files, and the server's stderr
//! goes to a file too, so the tests wait for those events (never for a fixed time): the pids
//! written, the server's "not answering call" line.

use mcp_testkit::{pid_alive, serve_bin, wait_until, TempDir, Watched};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The `mcp-client` binary, built by cargo for this package's tests.
const CLI: &str = env!("CARGO_BIN_EXE_mcp-client");

/// `sh wrap.sh [deaf] DIR NAME COMMAND...`: writes its pid to DIR/NAME.wrapper, starts a
/// grandchild (DIR/NAME.grandchild), then runs COMMAND as its child (DIR/NAME.server, its
/// stderr in DIR/NAME.stderr) and waits for it. `deaf`: it and all it starts ignore SIGTERM.
/// Each pid file appears whole (written, then renamed).
const WRAPPER: &str = r#"
if [ "$1" = deaf ]; then trap '' TERM; shift; fi
dir=$1 name=$2
shift 2
put() { echo "$2" > "$dir/$name.$1.tmp" && mv "$dir/$name.$1.tmp" "$dir/$name.$1"; }
put wrapper $$
sleep 1000 &
put grandchild $!
sh -c 'echo $$ > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@" 2>"$0.stderr"' "$dir/$name.server" "$@"
"#;

/// What a server's processes are: the wrapper (its group's leader), the test kit's server and
/// the grandchild.
const ROLES: [&str; 3] = ["wrapper", "server", "grandchild"];

/// Generous bounds: a loaded machine is slow, but never this slow.
const EVENT: Duration = Duration::from_secs(60);

/// The command running, its stderr collected as it comes; the servers' groups it started are
/// SIGKILLed when it is dropped (a failed test leaves nothing behind either).
struct Cli {
    dir: TempDir,
    cli: Watched,
    servers: Vec<String>,
}

impl Cli {
    fn dir_and_wrapper() -> (TempDir, PathBuf) {
        let dir = TempDir::new("mcp-cli-signals");
        let wrapper = dir.path().join("wrap.sh");
        std::fs::write(&wrapper, WRAPPER).expect("write the wrapper");
        (dir, wrapper)
    }

    /// `mcp-client ARGS`, whose servers are `servers`.
    fn start(dir: TempDir, args: &[String], servers: &[&str]) -> Cli {
        Cli::start_program(CLI, dir, args, servers)
    }

    /// [`start`](Self::start), `program` (which runs `mcp-client` as itself, `exec`).
    fn start_program(program: &str, dir: TempDir, args: &[String], servers: &[&str]) -> Cli {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        Cli {
            dir,
            cli: Watched::spawn(&mut command),
            servers: servers.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// The pid in `NAME.ROLE`, once it is there.
    fn pid(&self, server: &str, role: &str) -> Option<u32> {
        std::fs::read_to_string(self.path(&format!("{server}.{role}")))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Every process of every server, once each has written its pid.
    fn wait_for_pids(&self) -> Vec<u32> {
        let all = || {
            self.servers
                .iter()
                .flat_map(|s| ROLES.map(|r| self.pid(s, r)))
                .collect::<Option<Vec<u32>>>()
        };
        assert!(
            wait_until(EVENT, || all().is_some()),
            "the servers never started: {}",
            self.stderr()
        );
        let pids = all().expect("checked");
        assert!(pids.iter().all(|&p| pid_alive(p)), "{pids:?}");
        pids
    }

    /// Waits until the server `name` has written `line` on its stderr.
    fn wait_for_server_line(&self, server: &str, line: &str) {
        let file = self.path(&format!("{server}.server.stderr"));
        assert!(
            wait_until(EVENT, || std::fs::read_to_string(&file)
                .is_ok_and(|s| s.contains(line))),
            "server {server} never wrote {line:?}; mcp-client said: {}",
            self.stderr()
        );
    }

    /// Waits until the command has written `line` on its stderr.
    fn wait_for_line(&self, line: &str) {
        self.cli.wait_for_line(line, EVENT);
    }

    fn stderr(&self) -> String {
        self.cli.stderr()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.cli.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Its exit status, which must come within `limit`, and the rest of its stderr.
    fn wait(&mut self, limit: Duration) -> ExitStatus {
        self.cli.wait(limit)
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        for server in &self.servers {
            if let Some(group) = self.pid(server, "wrapper") {
                if pid_alive(group) {
                    let _ = Command::new("kill")
                        .args(["-KILL", "--", &format!("-{group}")])
                        .stderr(Stdio::null())
                        .status();
                }
            }
        }
    }
}

/// The test kit's server behind the wrapper, as args after `--`.
fn wrapped(wrapper: &Path, dir: &Path, deaf: bool, name: &str, behave: &str) -> Vec<String> {
    let mut args = vec!["sh".to_owned(), wrapper.display().to_string()];
    if deaf {
        args.push("deaf".to_owned());
    }
    args.extend([
        dir.display().to_string(),
        name.to_owned(),
        serve_bin().display().to_string(),
        "--behave".to_owned(),
        behave.to_owned(),
    ]);
    args
}

/// `signal` while a call is in flight (the server never answers it): the command exits
/// 128 + its number, and the server, the wrapper and the grandchild have all ended by then.
fn during_a_call(signal: &str, code: i32) {
    let (dir, wrapper) = Cli::dir_and_wrapper();
    let mut args = vec!["--call".to_owned(), "echo".to_owned(), "--".to_owned()];
    args.extend(wrapped(&wrapper, dir.path(), false, "one", "hang"));
    let mut cli = Cli::start(dir, &args, &["one"]);
    let pids = cli.wait_for_pids();
    cli.wait_for_server_line("one", "not answering call");
    cli.signal(signal);
    let status = cli.wait(EVENT);
    assert_eq!(status.code(), Some(code), "{}", cli.stderr());
    assert!(
        cli.stderr()
            .contains(&format!("mcp-client: SIG{signal}: closing the servers")),
        "{}",
        cli.stderr()
    );
    // Closed before the exit, not left to die after it.
    let left: Vec<u32> = pids.into_iter().filter(|&p| pid_alive(p)).collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn sigint_during_a_call_ends_everything_and_exits_130() {
    during_a_call("INT", 130);
}

#[test]
fn sigterm_during_a_call_ends_everything_and_exits_143() {
    during_a_call("TERM", 143);
}

#[test]
fn sighup_during_a_call_ends_everything_and_exits_129() {
    during_a_call("HUP", 129);
}

/// A config of three wrapped servers (`behave`), each named in `--server`, with `extra` args.
fn config_of_three(behave: &str, extra: &[&str]) -> Cli {
    let (dir, wrapper) = Cli::dir_and_wrapper();
    let names = ["s1", "s2", "s3"];
    let servers: Vec<String> = names
        .iter()
        .map(|name| {
            let mut command = wrapped(&wrapper, dir.path(), false, name, behave);
            let program = command.remove(0);
            format!(
                r#""{name}": {{"command": {}, "args": {}}}"#,
                serde_json::json!(program),
                serde_json::json!(command)
            )
        })
        .collect();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        format!(r#"{{"mcpServers": {{{}}}}}"#, servers.join(", ")),
    )
    .expect("write the config");
    let mut args = vec!["--config".to_owned(), config.display().to_string()];
    for name in names {
        args.extend(["--server".to_owned(), name.to_owned()]);
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    Cli::start(dir, &args, &names)
}

/// `signal` while a config's three servers are starting (their first `tools/list` is never
/// answered, so the start-up cannot end): every one of them ends, with its wrapper and
/// grandchild, before the command exits 128 + its number.
fn during_start_up(signal: &str, code: i32) {
    let mut cli = config_of_three("hang-list", &[]);
    let pids = cli.wait_for_pids();
    for server in ["s1", "s2", "s3"] {
        cli.wait_for_server_line(server, "not answering tools/list");
    }
    cli.signal(signal);
    let status = cli.wait(EVENT);
    assert_eq!(status.code(), Some(code), "{}", cli.stderr());
    let left: Vec<u32> = pids.into_iter().filter(|&p| pid_alive(p)).collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn sigint_during_a_sets_start_up_ends_every_server_and_exits_130() {
    during_start_up("INT", 130);
}

#[test]
fn sigterm_during_a_sets_start_up_ends_every_server_and_exits_143() {
    during_start_up("TERM", 143);
}

#[test]
fn sighup_during_a_sets_start_up_ends_every_server_and_exits_129() {
    during_start_up("HUP", 129);
}

#[test]
fn sigint_during_a_sets_call_ends_every_server_and_exits_130() {
    let mut cli = config_of_three("hang", &["--call", "s2__echo"]);
    let pids = cli.wait_for_pids();
    cli.wait_for_server_line("s2", "not answering call");
    cli.signal("INT");
    let status = cli.wait(EVENT);
    assert_eq!(status.code(), Some(130), "{}", cli.stderr());
    let left: Vec<u32> = pids.into_iter().filter(|&p| pid_alive(p)).collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

/// A server deaf to SIGTERM and to its stdin closing: the first Ctrl-C waits for the graceful
/// sequence (stdin closed, 2 s, SIGTERM, 2 s, SIGKILL), the second kills the group at once.
#[test]
fn a_second_sigint_kills_a_deaf_server_at_once() {
    let (dir, wrapper) = Cli::dir_and_wrapper();
    let mut args = vec!["--call".to_owned(), "echo".to_owned(), "--".to_owned()];
    args.extend(wrapped(
        &wrapper,
        dir.path(),
        true,
        "deaf",
        "hang,ignore-eof",
    ));
    let mut cli = Cli::start(dir, &args, &["deaf"]);
    let pids = cli.wait_for_pids();
    cli.wait_for_server_line("deaf", "not answering call");
    let first = Instant::now();
    cli.signal("INT");
    cli.wait_for_line("mcp-client: SIGINT: closing the servers");
    // Stdin is closed, which the server ignores: the first Ctrl-C is still waiting on it.
    assert!(cli.cli.guard().child().try_wait().expect("wait").is_none());
    cli.signal("INT");
    let status = cli.wait(EVENT);
    assert_eq!(status.code(), Some(130), "{}", cli.stderr());
    assert!(
        cli.stderr()
            .contains("mcp-client: SIGINT: killed 1 server group"),
        "{}",
        cli.stderr()
    );
    // Killed, not waited for: the graceful sequence could not have ended a server deaf to
    // SIGTERM before its two graces (2 s each) had passed.
    assert!(
        first.elapsed() < Duration::from_secs(4),
        "the second Ctrl-C took {:?}",
        first.elapsed()
    );
    // SIGKILL was sent as the command exited; the kernel ends them right after.
    assert!(
        wait_until(Duration::from_secs(10), || pids
            .iter()
            .all(|&p| !pid_alive(p))),
        "left running: {:?}",
        pids.iter().filter(|&&p| pid_alive(p)).collect::<Vec<_>>()
    );
}

/// Started with SIGHUP ignored (`nohup`, a shell's `trap '' HUP`), the command leaves it
/// ignored: a hangup does not end it, and the next signal it catches is the one it reports.
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    let (dir, wrapper) = Cli::dir_and_wrapper();
    let mut args = vec![
        "-c".to_owned(),
        r#"trap '' HUP; exec "$@""#.to_owned(),
        "sh".to_owned(),
        CLI.to_owned(),
        "--call".to_owned(),
        "echo".to_owned(),
        "--".to_owned(),
    ];
    args.extend(wrapped(&wrapper, dir.path(), false, "one", "hang"));
    let mut cli = Cli::start_program("sh", dir, &args, &["one"]);
    let pids = cli.wait_for_pids();
    cli.wait_for_server_line("one", "not answering call");
    // An ignored signal is discarded as it is sent: the SIGTERM after it comes second.
    cli.signal("HUP");
    cli.signal("TERM");
    let status = cli.wait(EVENT);
    assert_eq!(status.code(), Some(143), "{}", cli.stderr());
    assert!(!cli.stderr().contains("SIGHUP"), "{}", cli.stderr());
    let left: Vec<u32> = pids.into_iter().filter(|&p| pid_alive(p)).collect();
    assert!(left.is_empty(), "left running: {left:?}");
}

/// SIGINT while a call over `--url` is in flight (the test kit's HTTP server runs its `slow`
/// tool for a minute): the command ends the session with its `DELETE` and exits 130. No server
/// process is the command's, so its line does not offer to kill one.
#[test]
fn sigint_during_a_url_call_deletes_the_session_and_exits_130() {
    use mcp_testkit::http_server;
    let server = http_server::start(http_server::Behaviour::default()).expect("start the server");
    let (dir, _) = Cli::dir_and_wrapper();
    let args: Vec<String> = [
        "--url",
        &server.url,
        "--call",
        "slow",
        "--args",
        r#"{"ms": 60000}"#,
    ]
    .map(str::to_owned)
    .to_vec();
    let mut cli = Cli::start(dir, &args, &[]);
    let calls = || {
        server
            .log()
            .iter()
            .filter(|r| r.rpc_method().as_deref() == Some("tools/call"))
            .count()
    };
    assert!(
        wait_until(EVENT, || calls() == 1),
        "the call never came: {}",
        cli.stderr()
    );
    let session = server
        .log()
        .iter()
        .find_map(|r| r.header("mcp-session-id").map(str::to_owned))
        .expect("the call carried its session");
    cli.signal("INT");
    let status = cli.wait(EVENT);
    assert_eq!(status.code(), Some(130), "{}", cli.stderr());
    // Read whole (the lines are collected as they come).
    cli.wait_for_line("mcp-client: SIGINT: closing the servers\n");
    assert_eq!(
        cli.stderr(),
        "mcp-client: SIGINT: closing the servers\n",
        "no server process to kill"
    );
    // The session was ended before the exit: its DELETE came (the close is bounded, and
    // waited for).
    let deleted: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .collect();
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    assert_eq!(deleted[0].header("mcp-session-id"), Some(session.as_str()));
}

/// SIGTERM during `--repeat` (a server that pings the client after each call, and logs its
/// answer): once some calls were made, the command ends the server with its group and exits
/// 143, without the rate line of a finished run.
#[test]
fn sigterm_during_repeat_ends_everything_and_exits_143() {
    let (dir, wrapper) = Cli::dir_and_wrapper();
    let mut args: Vec<String> = ["--call", "echo", "--repeat", "100000000", "--"]
        .map(str::to_owned)
        .to_vec();
    args.extend(wrapped(&wrapper, dir.path(), false, "one", "ping-idle"));
    let mut cli = Cli::start(dir, &args, &["one"]);
    let pids = cli.wait_for_pids();
    let stderr = cli.path("one.server.stderr");
    let pongs = || {
        std::fs::read_to_string(&stderr)
            .map(|s| s.matches("serve: idle pong").count())
            .unwrap_or(0)
    };
    assert!(
        wait_until(EVENT, || pongs() >= 3),
        "the calls never went round: {}",
        cli.stderr()
    );
    cli.signal("TERM");
    let status = cli.wait(EVENT);
    assert_eq!(status.code(), Some(143), "{}", cli.stderr());
    cli.wait_for_line("(again to kill them at once)\n");
    assert!(
        cli.stderr()
            .starts_with("mcp-client: SIGTERM: closing the servers (again to kill them at once)\n"),
        "{}",
        cli.stderr()
    );
    assert!(!cli.stderr().contains("calls/s"), "{}", cli.stderr());
    let left: Vec<u32> = pids.into_iter().filter(|&p| pid_alive(p)).collect();
    assert!(left.is_empty(), "left running: {left:?}");
}
