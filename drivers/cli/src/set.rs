//! `--config FILE [--server NAME]...`: the servers of a config file as one tool set
//! ([`ServerSet`]): all started at once, their tools listed under prefixed names
//! (`server__tool`), a call routed to its server — which is then the only one started, when the
//! name says which; a server that failed is reported on stderr and the exit code says so (3,
//! when what was asked for still worked). A chosen entry that uses a variable that is not set
//! fails like a server that does not start (said before the others start); one not chosen is
//! no error.

use crate::args::{call_arguments, Options};
use crate::output::{describe, print_result, print_set_tools};
use crate::run::{client_config, stderr_printer, Outcome, Rate, ROOTS_SETTLE, ROOTS_WAIT};
use crate::signals::Started;
use crate::term;
use mcp_connect::config::{ConfigErrorKind, ExpandOptions, FailedEntry, ServersConfig};
use mcp_connect::proto::server_set::{routes_to, NameRules};
use mcp_connect::{Error, Launch, ServerSet, ServerSetConfig, ServerSpec, SetError, SetTool};
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// The exit code when the list or the call worked but some servers failed.
pub(crate) const SOME_FAILED: u8 = 3;

/// Loads the config, starts its servers (all enabled ones, or those of `--server`), lists or
/// calls, and closes them all.
pub(crate) async fn run(
    file: &Path,
    options: &Options,
    to_close: &Started,
) -> Result<ExitCode, String> {
    // FILE:LINE:COLUMN: server "NAME": what is wrong
    let expand = options
        .inputs
        .iter()
        .fold(ExpandOptions::from_env(), |e, (id, v)| e.input(id, v));
    let config = mcp_connect::config::load_with(file, &expand).map_err(|e| e.to_string())?;
    // Entries that are no MCP server for us (a host's built-in extension): said when the tools
    // are listed, or with --verbose.
    if options.call.is_none() || options.verbose {
        for skipped in &config.skipped {
            let line = format!("{}:{skipped}", file.display());
            eprintln!("mcp-client: {}", term::line(&line));
        }
    }
    let (specs, unset) = chosen(&config, options)?;
    // Checked before anything is started.
    let arguments = call_arguments(options)?;
    // Known now: said before the others start.
    for failed in &unset {
        eprintln!("mcp-client: {}", term::line(&unset_line(failed)));
    }
    if specs.is_empty() {
        return Err(format!("no server started ({} failed)", unset.len()));
    }
    let progress = std::io::stderr().is_terminal();
    let count = specs.len();
    if progress {
        eprintln!("starting {count} server{}…", plural(count));
    }
    let started = Instant::now();
    let mut set_config = ServerSetConfig::default();
    if progress {
        // Each server's line as its start-up ends, while the others go on starting.
        set_config.on_started = Some(std::sync::Arc::new(move |name, outcome| {
            if let Ok(n) = outcome {
                eprintln!(
                    "ok {} ({n} tool{}, {:.2} s)",
                    term::line(name),
                    plural(n),
                    started.elapsed().as_secs_f64()
                );
            }
        }));
    }
    let set = ServerSet::connect(specs, set_config).await;
    to_close.set(&set);
    let outcome = session(&set, &unset, options, arguments, progress, started).await;
    set.close().await;
    let outcome = outcome?;
    if let Some(rate) = outcome.rate {
        eprintln!("{rate}");
    }
    Ok(outcome.code)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A chosen entry that uses a variable that is not set, as a failed server: where, which
/// variable, and how to give it.
fn unset_line(failed: &FailedEntry) -> String {
    let e = &failed.error;
    let at = match e.position {
        Some((line, column)) => format!("{}:{line}:{column}", e.path.display()),
        None => e.path.display().to_string(),
    };
    let how = match &e.kind {
        ConfigErrorKind::MissingVariable(var) => format!("; set {var} in the environment"),
        ConfigErrorKind::MissingInput { id, .. } => format!("; give it with --input {id}=VALUE"),
        _ => String::new(),
    };
    format!("server {:?} failed: {at}: {}{how}", failed.name, e.kind)
}

/// The specs of the servers to start, in file order: the `--server` ones (also when the file
/// disables them: naming one asks for it), else every enabled one; and the chosen entries that
/// cannot start, their variables not set. The entries not chosen are not looked at: a variable
/// one of them uses and that is not set is no error.
fn chosen<'a>(
    config: &'a ServersConfig,
    options: &Options,
) -> Result<(Vec<ServerSpec>, Vec<&'a FailedEntry>), String> {
    let file = config.path.display();
    // Every entry naming a server, failed or not, and whether it is enabled.
    let entries: Vec<(&str, bool)> = config
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.enabled))
        .chain(config.failed.iter().map(|f| (f.name.as_str(), f.enabled)))
        .collect();
    let names = || {
        entries
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(missing) = options
        .servers
        .iter()
        .find(|n| !entries.iter().any(|(name, _)| name == n))
    {
        return Err(if entries.is_empty() {
            format!("--server {missing:?}: {file} names no server")
        } else {
            format!(
                "--server {missing:?}: no such server in {file} (it has: {})",
                names()
            )
        });
    }
    // A call names its server in its prefix: only that one starts (a listing starts them all,
    // and so does a name that cannot tell).
    let routed = match &options.call {
        Some(call) if options.servers.is_empty() && options.feature.is_none() => routes_to(
            call,
            entries
                .iter()
                .filter(|(_, enabled)| *enabled)
                .map(|(name, _)| *name),
            &NameRules::default(),
        ),
        _ => Vec::new(),
    };
    let is_chosen = |name: &str, enabled: bool| {
        if !routed.is_empty() {
            routed.contains(&name)
        } else if options.servers.is_empty() {
            enabled
        } else {
            options.servers.iter().any(|s| s == name)
        }
    };
    let unset: Vec<&FailedEntry> = config
        .failed
        .iter()
        .filter(|f| is_chosen(&f.name, f.enabled))
        .collect();
    let specs: Vec<ServerSpec> = config
        .servers
        .iter()
        .filter(|s| is_chosen(&s.name, s.enabled))
        .filter_map(|s| {
            let mut entry = s.clone();
            entry.enabled = true;
            let mut spec = ServerSpec::from_entry(&entry, client_config(options, Some(&s.name)))?;
            // --verbose: each server's stderr as it comes, one line each, named; its failure
            // line then says its exit status without repeating the tail.
            if let (true, Launch::Stdio(stdio)) = (options.verbose, &mut spec.launch) {
                stdio.stderr = stderr_printer(Some(&s.name));
            }
            Some(spec)
        })
        .collect();
    if specs.is_empty() && unset.is_empty() {
        return Err(if entries.is_empty() {
            format!("{file} names no server")
        } else {
            format!(
                "every server in {file} is disabled (name one with --server to start it anyway: {})",
                names()
            )
        });
    }
    Ok((specs, unset))
}

/// Reports how the start-up went, then lists or calls.
async fn session(
    set: &ServerSet,
    unset: &[&FailedEntry],
    options: &Options,
    arguments: serde_json::Value,
    progress: bool,
    started: Instant,
) -> Result<Outcome, String> {
    let failures = set.failures().await;
    let tools = set.tools().await;
    for name in set.server_names() {
        if let Some((_, cause)) = failures.iter().find(|(n, _)| n == name) {
            // With --verbose its stderr was shown as it came: only its exit status here.
            let cause = match cause {
                Error::ServerExited { status, .. } if options.verbose => {
                    describe(Error::ServerExited {
                        status: *status,
                        stderr: String::new(),
                    })
                }
                Error::ExitedAfterPrinting {
                    status,
                    printed,
                    more,
                    ..
                } if options.verbose => describe(Error::ExitedAfterPrinting {
                    status: *status,
                    printed: printed.clone(),
                    more: *more,
                    stderr: String::new(),
                }),
                cause => describe(cause),
            };
            let line = format!("server {name:?} failed: {cause}");
            eprintln!("mcp-client: {}", term::line(&line))
        }
    }
    // The entries whose variables are not set count as failed servers (said already).
    let total = set.server_names().len() + unset.len();
    let failed = failures.len() + unset.len();
    if progress {
        // Of those "starting N servers…" named: the entries whose variables are not set were
        // said failed before it.
        let starting = set.server_names().len();
        eprintln!(
            "started {} of {starting} server{} in {:.2} s",
            starting - failures.len(),
            plural(starting),
            started.elapsed().as_secs_f64()
        );
    }
    if options.verbose {
        for (server, tool, why) in set.skipped() {
            let line = format!("left out {server:?}'s tool {tool:?}: {why}");
            eprintln!("mcp-client: {}", term::line(&line));
        }
    }
    if failed == total {
        return Err(format!("no server started ({total} failed)"));
    }
    let partial = if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(SOME_FAILED)
    };
    if options.call.is_some() && !options.roots.is_empty() {
        // As for one server (`run::ROOTS_WAIT`): the call would reach a server that reads its
        // roots before it has them.
        if set.roots_listed(ROOTS_WAIT).await {
            smol::Timer::after(ROOTS_SETTLE).await;
        }
    }
    if let Some(feature) = &options.feature {
        let reported: Vec<&str> = failures.iter().map(|(n, _)| n.as_str()).collect();
        let code = crate::features::across(set, feature, options, partial, &reported).await?;
        return Ok(Outcome { code, rate: None });
    }
    let mut out = std::io::stdout().lock();
    let Some(name) = &options.call else {
        print_set_tools(&mut out, &tools, options.json);
        return Ok(Outcome {
            code: partial,
            rate: None,
        });
    };

    let (result, rate) = Rate::measure(options.repeat, async {
        let mut result = None;
        for _ in 0..options.repeat.max(1) {
            let called = set.call(name, arguments.clone()).await;
            let down =
                || (failures.iter().map(|(n, _)| n.as_str())).chain(unset.iter().map(|f| &*f.name));
            result = Some(called.map_err(|e| call_failure(e, down(), &tools))?);
        }
        Ok::<_, String>(result.expect("at least one call was made"))
    })
    .await;
    let result = result?;
    print_result(&mut out, &result, options.json);
    Ok(Outcome {
        code: if result.is_error {
            ExitCode::from(2)
        } else {
            partial
        },
        rate,
    })
}

/// Why a call failed, on one line; a name that would be a failed server's says so, and one
/// close to the names the servers offered says which it may have meant.
fn call_failure<'a>(
    e: SetError,
    mut down: impl Iterator<Item = &'a str>,
    tools: &[SetTool],
) -> String {
    match e {
        SetError::UnknownTool(name) => {
            let separator = NameRules::default().separator;
            let down = down.find(|server| name.starts_with(&format!("{server}{separator}")));
            if let Some(server) = down {
                return format!("no tool named {name:?}: server {server:?} is not running");
            }
            let offered = tools.iter().map(|t| t.definition().name.as_str());
            match did_you_mean(&name, offered, &separator).as_slice() {
                [] => format!("no tool named {name:?} (without --call, the tools are listed)"),
                [one] => format!("no tool named {name:?}; did you mean {one:?}?"),
                many => format!(
                    "no tool named {name:?}; did you mean one of {}?",
                    many.iter()
                        .map(|m| format!("{m:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        other => describe(other),
    }
}

/// The offered names `name` may have meant (at most five): those that are `name` with a
/// server's prefix (`echo` for `everything__echo`), else the closest within a small edit
/// distance of it (a typo, a prefix misspelt).
fn did_you_mean<'a>(
    name: &str,
    offered: impl Iterator<Item = &'a str>,
    separator: &str,
) -> Vec<&'a str> {
    let offered: Vec<&str> = offered.collect();
    let suffix = format!("{separator}{name}");
    let prefixed: Vec<&str> = offered
        .iter()
        .copied()
        .filter(|o| o.ends_with(&suffix))
        .collect();
    if !prefixed.is_empty() {
        return prefixed.into_iter().take(5).collect();
    }
    let most = (name.chars().count() / 3).clamp(1, 3);
    let mut close: Vec<(usize, &str)> = offered
        .iter()
        .map(|o| (edit_distance(name, o), *o))
        .filter(|(d, _)| *d <= most)
        .collect();
    close.sort();
    // The closest only: a near miss does not drown in farther ones.
    let best = close.first().map(|(d, _)| *d);
    close
        .into_iter()
        .take_while(|(d, _)| Some(*d) == best)
        .take(5)
        .map(|(_, o)| o)
        .collect()
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_come_from_the_names_offered() {
        let offered = [
            "everything__echo",
            "everything__add",
            "fs__read_file",
            "fs__echo",
        ];
        let names = || offered.iter().copied();
        // The unprefixed name: every server's tool of that name.
        assert_eq!(
            did_you_mean("echo", names(), "__"),
            ["everything__echo", "fs__echo"]
        );
        // A typo, in the tool or the server.
        assert_eq!(
            did_you_mean("fs__raed_file", names(), "__"),
            ["fs__read_file"]
        );
        assert_eq!(
            did_you_mean("everthing__add", names(), "__"),
            ["everything__add"]
        );
        // Nothing close.
        assert!(did_you_mean("deploy", names(), "__").is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("é", "e"), 1);
    }
}
