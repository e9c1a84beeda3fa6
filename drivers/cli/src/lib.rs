//! The `mcp-client` command: a command-line MCP client that lists and calls the tools of a stdio
//! server, a Streamable HTTP endpoint, or the servers of a config file at once, and lists, reads
//! and follows their resources, gets their prompts, completes their arguments, lists and loads
//! their skills (verified), and runs a tool as a task (`--task`).
//!
//! ```text
#![doc = include_str!("help.txt")]
//! ```
//!
//! This library target is the command's entry point, [`main_with`], which the `mcp-client`
//! binary calls (and so does the workspace's `cargo run --example mcp-client`, which adds an
//! offline demo); it is not a library API. To use MCP servers from Rust, depend on the driver
//! crate, `mcp-client`, which this command is built on.
//!
//! The code reads in the order the command runs: `args` (the options, checked before anything
//! starts), `run` (one server: connect, list or call, close) or `set` (a config's servers as one
//! tool set), `features` (the `resources`, `prompts` and `complete` commands, on either) with `skills` (the `skills` command), `output` (what is printed, plain or `--json`) with `term` (a server's text without
//! its control characters), `ask` (a server's questions on the terminal), and `signals` (Ctrl-C
//! and `kill` in any phase: every server started is closed, then the command exits).

use std::ffi::OsString;
use std::process::ExitCode;

mod args;
mod ask;
mod features;
mod output;
mod run;
mod set;
mod signals;
mod skills;
mod term;

/// The exit code of a command line that cannot run (a wrong option, a missing operand).
const USAGE_ERROR: u8 = 1;

/// What `--help` prints (on stdout, exit 0): every option (the crate's docs show the same text).
const HELP: &str = include_str!("help.txt");

/// Runs the `mcp-client` command with `args`, its arguments without the program's name (as
/// `std::env::args_os().skip(1)` gives them), and returns its exit code: 0 success, 2 the tool
/// reported `isError` (or the command line cannot run: a one-line cause on stderr, nothing
/// started), 3 (with `--config`) the list or the call worked but some servers failed,
/// 1 any other failure, with a one-line cause on stderr; on SIGINT, SIGTERM or SIGHUP, once the
/// servers are closed, 128 + the signal's number (130, 143, 129).
pub fn main_with(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    main_with_extra(args, &Extra::NONE)
}

/// What the usage line and `--help` say beyond the command's own forms: the root package's
/// example names the offline demo and `--serve` it handles itself.
#[doc(hidden)]
pub struct Extra {
    /// Put in the usage line after `usage: mcp-client ` (for example `"[--serve] "`).
    pub usage: &'static str,
    /// Lines printed before the help's own.
    pub help: &'static str,
}

impl Extra {
    /// Nothing beyond the command's own forms.
    const NONE: Extra = Extra {
        usage: "",
        help: "",
    };
}

/// [`main_with`], with `extra`'s forms named in the usage line and the help.
#[doc(hidden)]
pub fn main_with_extra(args: impl IntoIterator<Item = OsString>, extra: &Extra) -> ExitCode {
    let usage = format!("usage: mcp-client {}{}", extra.usage, args::USAGE);
    let options = match args::parse(args.into_iter(), &usage) {
        Ok(o) if o.help => {
            print!("{}{HELP}", extra.help);
            return ExitCode::SUCCESS;
        }
        Ok(o) => o,
        // A command line that cannot run: before anything is started, exit 1, as every failure
        // but a tool's isError (2) is; scripts written against earlier releases rely on it.
        Err(e) => {
            eprintln!("mcp-client: {e}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    // From here on, Ctrl-C and kill end the servers too (`signals`).
    let caught = signals::catch();
    output::install_tracing(options.verbose);
    let started = signals::Started::default();
    let run = async {
        let ran = match &options.config {
            Some(file) => set::run(file, &options, &started).await,
            None => run::run(&options, &started).await,
        };
        match ran {
            Ok(code) => code,
            Err(e) => {
                eprintln!("mcp-client: {}", term::line(&e));
                ExitCode::from(1)
            }
        }
    };
    let run = signals::or_signal(run, &started, caught);
    if options.url.is_some() {
        // Over Streamable HTTP this thread does no I/O of its own: isahc's agent thread makes
        // the exchanges and wakes the caller when an answer is in. Parked on a futex (as
        // isahc's blocking API parks its callers), it is woken by one system call; parked in
        // async-io's reactor, as `smol::block_on` parks it whenever the reactor is free, each
        // wake-up costs an eventfd write, the epoll wait's return and its re-arming (2.5
        // system calls a call more, measured). Timers and signals are the reactor's thread's
        // to drive then.
        smol::future::block_on(run)
    } else {
        // A child's pipes are this thread's to read: parked in the reactor, it is woken by
        // their readiness itself, with no hand-off from the reactor's thread.
        smol::block_on(run)
    }
}
