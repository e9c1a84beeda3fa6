//! The commands beside the tools: `resources` (list, templates, read, watch), `prompts` (list,
//! get) and `complete`, on one server (`-- COMMAND`, `--url`) or across a config's servers
//! (`--config`, each item named by its server). Read as `git` and `kubectl` users expect: a
//! command word, a verb (`list` by default), its operands, its own options; every other option
//! works as with tools. Output as for tools: the server's objects on one line with `--json`,
//! otherwise its text escaped ([`term`]), a blob as a placeholder line unless `--out FILE`.

use crate::args::Options;
use crate::term;
use mcp_connect::proto::bridge::render_block;
use mcp_connect::proto::prompts::CompletionRef;
use mcp_connect::proto::{
    Completion, ContentBlock, GetPromptResult, Prompt, ReadResourceResult, Request, Resource,
    ResourceTemplate,
};
use mcp_connect::servers::{FromServer, SetPrompt};
use mcp_connect::{Client, Error, ResourceUpdatedCallback, ServerSet, SetError};
use serde_json::{json, Map, Value};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// What a command asks for.
#[derive(Debug)]
pub(crate) enum Feature {
    /// `resources [list]`.
    Resources,
    /// `resources templates`.
    Templates,
    /// `resources read URI`.
    Read(String),
    /// `resources watch URI`.
    Watch(String),
    /// `prompts [list]`.
    Prompts,
    /// `prompts get NAME`.
    Prompt(String),
    /// `skills [list]`.
    Skills,
    /// `skills load NAME [--file PATH]`.
    Skill(String),
    /// `complete (--prompt NAME | --resource TEMPLATE) ARG [VALUE]`.
    Complete {
        /// A prompt (`true`) or a resource template, by its name or template.
        prompt: bool,
        target: String,
        argument: String,
        value: String,
    },
}

/// The options only these commands take.
#[derive(Debug, Default)]
pub(crate) struct Flags {
    /// `--arg K=V`, repeatable: a prompt's arguments.
    args: Vec<(String, String)>,
    /// `--context K=V`, repeatable: the arguments a completion already has.
    context: Vec<(String, String)>,
    /// `--out FILE`: a read's contents written there, as bytes.
    out: Option<PathBuf>,
    /// `--read`: a watched resource read again at each update.
    reread: bool,
    /// `--prompt NAME`, `--resource TEMPLATE`: what a completion is for.
    prompt: Option<String>,
    resource: Option<String>,
    /// `--file PATH`: a loaded skill's supporting file.
    file: Option<String>,
    /// Which were given, for the checks.
    given: Vec<&'static str>,
}

/// The options of [`Flags`].
pub(crate) const FLAGS: [&str; 7] = [
    "--arg",
    "--context",
    "--out",
    "--read",
    "--prompt",
    "--resource",
    "--file",
];

/// The most `--arg` and `--context` pairs (a bound on what the command line may make it hold).
const MAX_PAIRS: usize = 256;

/// One option of [`Flags`]; `value` reads its value.
pub(crate) fn flag(
    f: &mut Flags,
    flag: &str,
    value: &mut dyn FnMut() -> Result<String, String>,
) -> Result<(), String> {
    let Some(flag) = FLAGS.iter().copied().find(|f| *f == flag) else {
        return Err(format!("unexpected argument {flag:?}"));
    };
    if !f.given.contains(&flag) {
        f.given.push(flag);
    }
    let pair = |value: String| match value.split_once('=').filter(|(k, _)| !k.is_empty()) {
        Some((k, v)) => Ok((k.to_owned(), v.to_owned())),
        None => Err(format!("{flag} takes KEY=VALUE, not {value:?}")),
    };
    let once = |given: bool| {
        if given {
            Err(format!("{flag} is given twice"))
        } else {
            Ok(())
        }
    };
    match flag {
        "--arg" | "--context" => {
            let list = if flag == "--arg" {
                &mut f.args
            } else {
                &mut f.context
            };
            if list.len() >= MAX_PAIRS {
                return Err(format!("{flag}: at most {MAX_PAIRS}"));
            }
            list.push(pair(value()?)?);
        }
        "--out" => {
            once(f.out.is_some())?;
            f.out = Some(value()?.into());
        }
        "--read" => f.reread = true,
        "--prompt" => {
            once(f.prompt.is_some())?;
            f.prompt = Some(value()?);
        }
        "--file" => {
            once(f.file.is_some())?;
            f.file = Some(value()?);
        }
        _ => {
            once(f.resource.is_some())?;
            f.resource = Some(value()?);
        }
    }
    Ok(())
}

/// The command the words say, checked with its options; `None` for none (the tools).
pub(crate) fn parse(o: &Options, usage: &str) -> Result<Option<Feature>, String> {
    let words: Vec<&str> = o.words.iter().map(String::as_str).collect();
    let f = &o.feature_flags;
    let feature = match words[..] {
        [] => None,
        ["resources"] | ["resources", "list"] => Some(Feature::Resources),
        ["resources", "templates"] => Some(Feature::Templates),
        ["resources", "read", uri] => Some(Feature::Read(uri.to_owned())),
        ["resources", "watch", uri] => Some(Feature::Watch(uri.to_owned())),
        ["prompts"] | ["prompts", "list"] => Some(Feature::Prompts),
        ["prompts", "get", name] => Some(Feature::Prompt(name.to_owned())),
        ["skills"] | ["skills", "list"] => Some(Feature::Skills),
        ["skills", "load", name] => Some(Feature::Skill(name.to_owned())),
        ["complete", argument, ref value @ ..] if value.len() <= 1 => {
            let (prompt, target) = match (&f.prompt, &f.resource) {
                (Some(p), None) => (true, p.clone()),
                (None, Some(r)) => (false, r.clone()),
                _ => return Err("complete needs --prompt NAME or --resource TEMPLATE".into()),
            };
            Some(Feature::Complete {
                prompt,
                target,
                argument: argument.to_owned(),
                value: value.first().copied().unwrap_or("").to_owned(),
            })
        }
        ["resources", ..] => {
            return Err(
                "resources takes list, templates, read URI or watch URI (one URI)".into(),
            )
        }
        ["prompts", ..] => return Err("prompts takes list or get NAME (one name)".into()),
        ["skills", ..] => return Err("skills takes list or load NAME (one name)".into()),
        ["complete", ..] => return Err("complete takes ARG [VALUE]".into()),
        [other, ..] => {
            return Err(format!(
                "unknown command {other:?}: give resources, prompts, skills or complete (tools: --call)\n{usage}"
            ))
        }
    };
    let needs = |flag: &str, ok: bool, what: &str| {
        if f.given.contains(&flag) && !ok {
            Err(format!("{flag} needs {what}"))
        } else {
            Ok(())
        }
    };
    let is = |p: fn(&Feature) -> bool| feature.as_ref().is_some_and(p);
    needs(
        "--arg",
        is(|f| matches!(f, Feature::Prompt(_))),
        "prompts get",
    )?;
    needs(
        "--out",
        is(|f| matches!(f, Feature::Read(_) | Feature::Skill(_))),
        "resources read or skills load",
    )?;
    needs(
        "--file",
        is(|f| matches!(f, Feature::Skill(_))),
        "skills load",
    )?;
    needs(
        "--read",
        is(|f| matches!(f, Feature::Watch(_))),
        "resources watch",
    )?;
    for flag in ["--context", "--prompt", "--resource"] {
        needs(
            flag,
            is(|f| matches!(f, Feature::Complete { .. })),
            "complete",
        )?;
    }
    if feature.is_some() {
        if o.info {
            return Err(format!("give --info or {}, not both", words[0]));
        }
        // A watch may make one call once subscribed: what changes the resource.
        if o.call.is_some() && !is(|f| matches!(f, Feature::Watch(_))) {
            return Err(format!(
                "give --call or {} (--call goes with resources watch only)",
                words[0]
            ));
        }
        if o.repeat != 1 {
            return Err(format!("--repeat needs --call without {}", words[0]));
        }
        if o.task {
            return Err(format!("--task needs --call without {}", words[0]));
        }
    }
    Ok(feature)
}

impl Flags {
    /// `--file PATH`.
    pub(crate) fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// `--out FILE`.
    pub(crate) fn out_path(&self) -> Option<&std::path::Path> {
        self.out.as_deref()
    }
}

/// `--arg`'s or `--context`'s pairs as the request's object (string values, as prompts take).
fn object(pairs: &[(String, String)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect()
}

/// A resource update: the server it came from (with `--config`) and the URI.
type Update = (Option<String>, String);

/// The most updates waiting to be printed: past it, an update is dropped (the next one names
/// the resource again) and counted.
const MAX_WAITING: usize = 1024;

struct Updates {
    tx: smol::channel::Sender<Update>,
    rx: smol::channel::Receiver<Update>,
    dropped: std::sync::atomic::AtomicU64,
}

fn updates() -> &'static Updates {
    static UPDATES: OnceLock<Updates> = OnceLock::new();
    UPDATES.get_or_init(|| {
        let (tx, rx) = smol::channel::bounded(MAX_WAITING);
        Updates {
            tx,
            rx,
            dropped: Default::default(),
        }
    })
}

/// With `resources watch`: the callback that hands a client's resource updates to the watch
/// (`server`: its name in the config).
pub(crate) fn on_updated(
    options: &Options,
    server: Option<&str>,
) -> Option<ResourceUpdatedCallback> {
    if !matches!(options.feature, Some(Feature::Watch(_))) {
        return None;
    }
    let server = server.map(str::to_owned);
    Some(ResourceUpdatedCallback(Arc::new(move |uri: &str| {
        let u = updates();
        if u.tx.try_send((server.clone(), uri.to_owned())).is_err() {
            u.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    })))
}

/// Writes one line; a closed stdout (`| head`) is no failure of the command.
fn say(line: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{line}");
}

/// One line of JSON.
fn say_json(value: &Value) {
    say(&term::json(&value.to_string()));
}

/// A typed value as JSON (`null` should it not serialize, which the server's objects do).
macro_rules! to_json {
    ($v:expr) => {
        serde_json::to_value($v).unwrap_or(Value::Null)
    };
}

/// `{"server": S, KEY: RAW}` for an item of a config's listing.
fn tagged(server: &str, key: &str, item: Value) -> Value {
    json!({ "server": server, key: item })
}

/// A listed item's line: NAME (its first column), then its name, MIME type and description.
fn item_line(first: &str, name: &str, mime: Option<&str>, description: Option<&str>) -> String {
    let mut text = name.to_owned();
    if let Some(mime) = mime {
        text.push_str(&format!(" ({mime})"));
    }
    if let Some(d) = description.filter(|d| !d.is_empty()) {
        text.push_str(": ");
        text.push_str(d);
    }
    crate::output::listed(first, &text)
}

fn print_resources(items: &[(Option<&str>, &Resource)], json: bool) {
    print_listed(
        items,
        json,
        "resource",
        |r| to_json!(r),
        |r| {
            (
                &r.uri,
                &r.name,
                r.mime_type.as_deref(),
                r.description.as_deref(),
            )
        },
    );
}

fn print_templates(items: &[(Option<&str>, &ResourceTemplate)], json: bool) {
    print_listed(
        items,
        json,
        "resourceTemplate",
        |t| to_json!(t),
        |t| {
            (
                &t.uri_template,
                &t.name,
                t.mime_type.as_deref(),
                t.description.as_deref(),
            )
        },
    );
}

/// A listing of resources or templates: one JSON array (each item under `key` with its server in
/// a config's listing; `raw`: the item as sent), or a line each from `fields` (URI, name, MIME
/// type, description).
fn print_listed<T>(
    items: &[(Option<&str>, &T)],
    json: bool,
    key: &str,
    raw: impl Fn(&T) -> Value,
    fields: impl Fn(&T) -> (&str, &str, Option<&str>, Option<&str>),
) {
    if json {
        let all: Vec<Value> = items
            .iter()
            .map(|(server, item)| match server {
                Some(s) => tagged(s, key, raw(item)),
                None => raw(item),
            })
            .collect();
        return say_json(&Value::Array(all));
    }
    for (server, item) in items {
        let (uri, name, mime, description) = fields(item);
        let first = match server {
            Some(s) => format!("{s} {uri}"),
            None => uri.to_owned(),
        };
        say(&item_line(&first, name, mime, description));
    }
}

/// A prompt's description, then its arguments (`NAME` or `NAME (required)`).
fn prompt_text(p: &Prompt) -> String {
    let mut text = p.description.clone().unwrap_or_default();
    if !p.arguments.is_empty() {
        let args: Vec<String> = p
            .arguments
            .iter()
            .map(|a| {
                if a.required {
                    format!("{} (required)", a.name)
                } else {
                    a.name.clone()
                }
            })
            .collect();
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("arguments: {}", args.join(", ")));
    }
    text
}

fn print_prompts(prompts: &[Prompt], json: bool) {
    if json {
        return say_json(&to_json!(prompts));
    }
    for p in prompts {
        say(&crate::output::listed(&p.name, &prompt_text(p)));
    }
}

fn print_set_prompts(prompts: &[SetPrompt], json: bool) {
    if json {
        let all: Vec<Value> = prompts
            .iter()
            .map(|p| {
                let prompt = to_json!(&p.prompt);
                json!({"name": p.name, "server": p.server, "prompt": prompt})
            })
            .collect();
        return say_json(&Value::Array(all));
    }
    for p in prompts {
        say(&crate::output::listed(&p.name, &prompt_text(&p.prompt)));
    }
}

/// A read's contents: each text as it is, each blob as a placeholder line (its URI, MIME type
/// and size); with `--out FILE`, their bytes written there instead; with `--json`, the result
/// object (`{"server", "result"}` with `--config`).
fn print_read(
    read: &ReadResourceResult,
    server: Option<&str>,
    options: &Options,
) -> Result<(), String> {
    if let Some(path) = &options.feature_flags.out {
        let mut bytes = Vec::new();
        for c in &read.contents {
            match (&c.text, c.blob_bytes()) {
                (Some(text), _) => bytes.extend_from_slice(text.as_bytes()),
                (None, Some(blob)) => bytes.extend(blob.map_err(|e| e.to_string())?),
                (None, None) => {}
            }
        }
        std::fs::write(path, &bytes).map_err(|e| format!("--out {}: {e}", path.display()))?;
        eprintln!("wrote {} bytes to {}", bytes.len(), path.display());
        return Ok(());
    }
    if options.json {
        match server {
            Some(s) => say_json(&tagged(s, "result", to_json!(read))),
            None => say_json(&to_json!(read)),
        }
        return Ok(());
    }
    for c in &read.contents {
        let mut text = String::new();
        render_block(
            &ContentBlock::Resource {
                resource: c.clone(),
            },
            &mut text,
        );
        say(&term::display(&text, term::Layout::Text).to_string());
    }
    Ok(())
}

/// A prompt's messages, `ROLE: TEXT` (a block that is not text as a placeholder line).
fn print_prompt(got: &GetPromptResult, json: bool) {
    if json {
        return say_json(&to_json!(got));
    }
    for m in &got.messages {
        let mut text = String::new();
        render_block(&m.content, &mut text);
        let role = term::line(&m.role);
        say(&format!(
            "{role}: {}",
            term::display(&text, term::Layout::Text)
        ));
    }
}

/// The suggestions, one a line; more than shown is said on stderr.
fn print_completion(c: &Completion, json: bool) {
    if json {
        return say_json(&json!({"values": c.values, "total": c.total, "hasMore": c.has_more}));
    }
    for v in &c.values {
        say(&term::line(v));
    }
    if c.has_more {
        let total = c
            .total
            .map(|t| format!(" ({t} in all)"))
            .unwrap_or_default();
        eprintln!("mcp-client: more suggestions than shown{total}");
    }
}

/// How long a watch waits, without updates, before it asks whether the server is still there.
///
/// > "Implementations **SHOULD** periodically issue pings to detect connection health." —
/// > MCP 2025-11-25, Utilities § Ping
const WATCH_PING: Duration = Duration::from_secs(15);

/// Prints updates until a signal ends the command ([`crate::signals`]); an update is re-read
/// with `--read` by `read`. Fails when `alive` says the server is gone.
async fn follow<R, A>(options: &Options, read: R, alive: A) -> Result<ExitCode, String>
where
    R: AsyncFn(Option<&str>, &str) -> Result<(), String>,
    A: AsyncFn() -> Result<(), String>,
{
    let u = updates();
    if std::io::stderr().is_terminal() {
        eprintln!("watching; Ctrl-C to stop");
    }
    loop {
        let next = smol::future::or(async { Some(u.rx.recv().await) }, async {
            smol::Timer::after(WATCH_PING).await;
            None
        })
        .await;
        let (server, uri) = match next {
            None => {
                alive().await?;
                continue;
            }
            // The sender lives in a static: never closed.
            Some(Err(_)) => return Err("the updates ended".into()),
            Some(Ok(update)) => update,
        };
        let dropped = u.dropped.swap(0, std::sync::atomic::Ordering::Relaxed);
        if dropped > 0 {
            eprintln!("mcp-client: {dropped} updates dropped (printed too slowly)");
        }
        if options.json {
            match &server {
                Some(s) => say_json(&json!({"server": s, "uri": uri})),
                None => say_json(&json!({"uri": uri})),
            }
        } else {
            match &server {
                Some(s) => say(&term::line(&format!("updated {s} {uri}"))),
                None => say(&term::line(&format!("updated {uri}"))),
            }
        }
        if options.feature_flags.reread {
            read(server.as_deref(), &uri).await?;
        }
    }
}

/// Runs `feature` on one server's open client.
pub(crate) async fn one(
    client: &Client,
    feature: &Feature,
    options: &Options,
    fail: &dyn Fn(Error) -> String,
) -> Result<ExitCode, String> {
    let json = options.json;
    match feature {
        Feature::Resources => {
            let all = client.list_resources().await.map_err(fail)?;
            let items: Vec<_> = all.iter().map(|r| (None, r)).collect();
            print_resources(&items, json);
        }
        Feature::Templates => {
            let all = client.list_resource_templates().await.map_err(fail)?;
            let items: Vec<_> = all.iter().map(|t| (None, t)).collect();
            print_templates(&items, json);
        }
        Feature::Read(uri) => {
            let read = client.read_resource(uri).await.map_err(fail)?;
            print_read(&read, None, options)?;
        }
        Feature::Prompts => print_prompts(&client.list_prompts().await.map_err(fail)?, json),
        Feature::Skills => {
            let all = client.list_skills().await.map_err(fail)?;
            let items: Vec<_> = all.iter().map(|s| (None, s)).collect();
            crate::skills::print_list(&items, json);
        }
        Feature::Skill(name) => crate::skills::load_one(client, name, options, fail).await?,
        Feature::Prompt(name) => {
            let args = object(&options.feature_flags.args);
            print_prompt(&client.get_prompt(name, &args).await.map_err(fail)?, json);
        }
        Feature::Complete {
            prompt,
            target,
            argument,
            value,
        } => {
            let reference = completion_ref(*prompt, target.clone());
            let context = object(&options.feature_flags.context);
            let c = client
                .complete(&reference, argument, value, &context)
                .await
                .map_err(fail)?;
            print_completion(&c, json);
        }
        Feature::Watch(uri) => {
            client.subscribe_resource(uri).await.map_err(fail)?;
            if let Some(name) = &options.call {
                let arguments = crate::args::call_arguments(options)?;
                let r = client.call_tool(name, arguments).await.map_err(fail)?;
                called(name, r.is_error, &r.text())?;
            }
            let read = async |_: Option<&str>, uri: &str| {
                let read = client.read_resource(uri).await.map_err(fail)?;
                print_read(&read, None, options)
            };
            let alive = async || {
                client
                    .request(Request::new("ping", None))
                    .await
                    .map(drop)
                    .map_err(fail)
            };
            return follow(options, read, alive).await;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn completion_ref(prompt: bool, target: String) -> CompletionRef {
    if prompt {
        CompletionRef::Prompt { name: target }
    } else {
        CompletionRef::ResourceTemplate { uri: target }
    }
}

/// A watch's `--call`: its text on stderr (stdout is the updates'); a tool error fails the
/// command.
fn called(name: &str, is_error: bool, text: &str) -> Result<(), String> {
    if is_error {
        return Err(term::line(&format!("tools/call {name:?} failed: {text}")));
    }
    eprintln!("{}", term::display(text, term::Layout::Text));
    Ok(())
}

/// The servers that failed a listing, each on its own line (but those down since their
/// start-up, `reported` already); whether any failed.
fn report(failed: &[SetError], reported: &[&str]) -> bool {
    for e in failed {
        if matches!(e, SetError::Down { server, .. } if reported.contains(&server.as_str())) {
            continue;
        }
        eprintln!("mcp-client: {}", term::line(&crate::output::describe(e)));
    }
    !failed.is_empty()
}

/// A set's error on one line, in the command's words where it asks the person for something.
fn set_failure(e: SetError) -> String {
    let text = match e {
        SetError::UnknownResource { uri, servers } if servers.is_empty() => {
            format!("no server lists the resource {uri:?}: name its server with --server")
        }
        SetError::UnknownResource { uri, servers } => {
            format!("the resource {uri:?} is listed by servers {servers:?}: name one with --server")
        }
        SetError::UnknownPrompt(name) => {
            format!("no prompt named {name:?} (prompts list shows them, as SERVER__PROMPT)")
        }
        e => crate::output::describe(e),
    };
    term::line(&text)
}

/// The one server `--server` names, if exactly one is given.
fn named(options: &Options) -> Option<&str> {
    match &options.servers[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// Runs `feature` across a config's servers; `partial` is the exit code when everything worked
/// but some servers had failed to start (3).
pub(crate) async fn across(
    set: &ServerSet,
    feature: &Feature,
    options: &Options,
    partial: ExitCode,
    reported: &[&str],
) -> Result<ExitCode, String> {
    let json = options.json;
    let fail = set_failure;
    let some_failed = ExitCode::from(crate::set::SOME_FAILED);
    let listed = |failed: bool| if failed { some_failed } else { partial };
    match feature {
        Feature::Resources => {
            let all = set.list_resources().await;
            let failed = report(&all.failed, reported);
            let items: Vec<_> = all
                .items
                .iter()
                .map(|r: &FromServer<Resource>| (Some(r.server.as_str()), &r.item))
                .collect();
            print_resources(&items, json);
            return Ok(listed(failed));
        }
        Feature::Templates => {
            let all = set.list_resource_templates().await;
            let failed = report(&all.failed, reported);
            let items: Vec<_> = all
                .items
                .iter()
                .map(|t| (Some(t.server.as_str()), &t.item))
                .collect();
            print_templates(&items, json);
            return Ok(listed(failed));
        }
        Feature::Prompts => {
            let all = set.list_prompts().await;
            let failed = report(&all.failed, reported);
            print_set_prompts(&all.items, json);
            return Ok(listed(failed));
        }
        Feature::Skills => {
            let all = set.list_skills().await;
            let failed = report(&all.failed, reported);
            let items: Vec<_> = all
                .items
                .iter()
                .map(|s| (Some(s.server.as_str()), &s.item))
                .collect();
            crate::skills::print_list(&items, json);
            return Ok(listed(failed));
        }
        Feature::Skill(name) => {
            crate::skills::load_across(set, name, named(options), options, &fail).await?
        }
        Feature::Read(uri) => {
            let read = set.read_resource(named(options), uri).await.map_err(fail)?;
            print_read(&read.item, Some(&read.server), options)?;
        }
        Feature::Prompt(name) => {
            let args = object(&options.feature_flags.args);
            print_prompt(&set.get_prompt(name, &args).await.map_err(fail)?, json);
        }
        Feature::Complete {
            prompt,
            target,
            argument,
            value,
        } => {
            let (server, reference) = if *prompt {
                let (server, own) = set.prompt_route(target).await.map_err(fail)?;
                (server, completion_ref(true, own))
            } else {
                let server = template_server(set, options, target).await?;
                (server, completion_ref(false, target.clone()))
            };
            let context = object(&options.feature_flags.context);
            let c = set
                .complete(&server, &reference, argument, value, &context)
                .await
                .map_err(fail)?;
            print_completion(&c, json);
        }
        Feature::Watch(uri) => {
            // Routed as a read is: the server named, else the one that lists it.
            let server = match named(options) {
                Some(s) => s.to_owned(),
                None => set.resource_server(uri).await.map_err(fail)?,
            };
            let client = set.client(&server).await.map_err(fail)?;
            client
                .subscribe_resource(uri)
                .await
                .map_err(|e| fail(server_error(&server, e)))?;
            if let Some(name) = &options.call {
                let arguments = crate::args::call_arguments(options)?;
                let r = set.call(name, arguments).await.map_err(fail)?;
                called(name, r.is_error, &r.text())?;
            }
            let read = async |server: Option<&str>, uri: &str| {
                let read = set.read_resource(server, uri).await.map_err(fail)?;
                print_read(&read.item, Some(&read.server), options)
            };
            let alive = async || {
                client
                    .request(Request::new("ping", None))
                    .await
                    .map(drop)
                    .map_err(|e| fail(server_error(&server, e)))
            };
            return follow(options, read, alive).await;
        }
    }
    Ok(partial)
}

fn server_error(server: &str, cause: Error) -> SetError {
    SetError::Server {
        server: server.to_owned(),
        cause,
    }
}

/// The server of a resource template: the one `--server` names, else the one that lists it.
async fn template_server(
    set: &ServerSet,
    options: &Options,
    template: &str,
) -> Result<String, String> {
    if let Some(s) = named(options) {
        return Ok(s.to_owned());
    }
    let names = set.server_names();
    let listed = set.list_resource_templates().await;
    report(&listed.failed, &[]);
    let per: Vec<Vec<&str>> = names
        .iter()
        .map(|n| {
            listed
                .items
                .iter()
                .filter(|t| t.server == *n)
                .map(|t| t.item.uri_template.as_str())
                .collect()
        })
        .collect();
    let per: Vec<&[&str]> = per.iter().map(Vec::as_slice).collect();
    use mcp_connect::proto::server_set::{resource_owner, ResourceOwner};
    match resource_owner(template, &per) {
        ResourceOwner::Server(i) => Ok(names[i].to_owned()),
        ResourceOwner::Unlisted => Err(term::line(&format!(
            "no server lists the template {template:?}: name its server with --server"
        ))),
        ResourceOwner::Several(_) => Err(term::line(&format!(
            "several servers list the template {template:?}: name one with --server"
        ))),
    }
}
