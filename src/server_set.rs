//! The pure half of a tool set over many servers: the names the model sees (prefixed, kept to
//! what model APIs accept, shortened predictably), which tools each server offers (allow and
//! deny lists), the routing from a name the model sees to a server and the tool's own name, and
//! when a server that died may be started again (backoff, a cap per minute; time is an input),
//! and which era to open a server in, from what earlier connections to it found ([`EraMemory`]).
//! Prompts are named and routed as tools are ([`plan_prompts`]); a resource keeps its URI and
//! is read from the server that lists it ([`resource_owner`]).
//!
//! > Tool names "SHOULD be between 1 and 128 characters in length (inclusive)" and "SHOULD only
//! > contain … uppercase and lowercase ASCII letters (A-Z, a-z), digits (0-9), underscore (_),
//! > hyphen (-), and dot (.)" — MCP 2025-11-25, Tools § Tool Names

use crate::{Era, EraChoice};
use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// The longest name a model sees.
pub const MAX_NAME: usize = 128;

/// When the server's name goes in front of a tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Prefix {
    /// Always: `server__tool` (the default; a name says where it goes).
    #[default]
    Always,
    /// Only for tool names that more than one server offers; the others keep their own.
    OnCollision,
    /// Never: a name offered by two servers goes to the first (in configuration order); the
    /// others are left out with a [`Skipped::Collision`].
    Never,
}

/// How names are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameRules {
    /// Between the server's name and the tool's (default `__`). Sanitized like the names: each
    /// character outside `[A-Za-z0-9_.-]` becomes `_` (`→` gives `a_echo`), so that every name
    /// stays one that tool names allow; an empty separator joins the names directly.
    pub separator: String,
    /// When to prefix.
    pub prefix: Prefix,
}

impl Default for NameRules {
    fn default() -> Self {
        NameRules {
            separator: "__".to_owned(),
            prefix: Prefix::Always,
        }
    }
}

/// Which of a server's tools are offered: only those of `allow` when given, never those of
/// `deny` (exact names, as the server gives them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// The only tools offered, when given.
    pub allow: Option<Vec<String>>,
    /// Tools never offered.
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether `tool` is offered.
    pub fn offers(&self, tool: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|a| a.iter().any(|t| t == tool))
            && !self.deny.iter().any(|t| t == tool)
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// A name with every character outside `[A-Za-z0-9_.-]` replaced by `_` (an empty one is `_`).
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if is_name_char(c) { c } else { '_' })
        .collect();
    if s.is_empty() {
        "_".to_owned()
    } else {
        s
    }
}

/// Eight hex digits of SHA-256 over the parts: what keeps a shortened name apart from others.
fn digest(parts: &[&str]) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize()[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The longest start of `s` of at most `max` bytes that ends on a character boundary. Names are
/// sanitized, so ASCII, and this is `&s[..max]`; it stays safe on any other text.
fn head(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `name`, cut to [`MAX_NAME`] characters when longer: its first 119 characters, `_`, and eight
/// hex digits of a digest of `parts` (the same inputs give the same name, other inputs another).
fn fit(name: String, parts: &[&str]) -> String {
    if name.len() <= MAX_NAME {
        return name;
    }
    let tag = digest(parts);
    format!("{}_{tag}", head(&name, MAX_NAME - 1 - tag.len()))
}

/// The separator as names use it: each character outside `[A-Za-z0-9_.-]` becomes `_` (an empty
/// one stays empty).
fn separator(rules: &NameRules) -> String {
    rules
        .separator
        .chars()
        .map(|c| if is_name_char(c) { c } else { '_' })
        .collect()
}

/// The name the model sees for `tool` of `server`, prefixed: the server's name and the tool's,
/// sanitized, joined by the separator (sanitized too), and shortened predictably past
/// [`MAX_NAME`].
pub fn prefixed_name(server: &str, tool: &str, rules: &NameRules) -> String {
    let name = format!("{}{}{}", sanitize(server), separator(rules), sanitize(tool));
    fit(name, &[server, tool])
}

/// The servers a tool name can only belong to, told from the name alone, before any server has
/// started: with [`Prefix::Always`], those whose prefix (the sanitized server name and the
/// separator) it starts with. A client that makes one call then starts only these. Empty means
/// the name cannot tell (another prefix policy, an unprefixed name, a name shortened past
/// [`MAX_NAME`]): every server must be asked what it offers.
pub fn routes_to<'a>(
    exposed: &str,
    servers: impl IntoIterator<Item = &'a str>,
    rules: &NameRules,
) -> Vec<&'a str> {
    if rules.prefix != Prefix::Always {
        return Vec::new();
    }
    let separator = separator(rules);
    servers
        .into_iter()
        .filter(|server| {
            exposed
                .strip_prefix(sanitize(server).as_str())
                .is_some_and(|rest| {
                    rest.starts_with(separator.as_str()) && rest.len() > separator.len()
                })
        })
        .collect()
}

/// The name the model sees for an unprefixed tool.
pub fn plain_name(tool: &str) -> String {
    fit(sanitize(tool), &[tool])
}

/// One tool of the set: the name the model sees, the server it goes to (its index in the input)
/// and the name sent to that server. A prefix never reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// What the model sees and calls.
    pub exposed: String,
    /// The server, by its index in [`plan`]'s input.
    pub server: usize,
    /// The tool's own name, sent in `tools/call`.
    pub tool: String,
}

/// A tool the plan left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    /// Its server's filter does not offer it.
    Filtered {
        /// The server's index.
        server: usize,
        /// The tool.
        tool: String,
    },
    /// Its name (as the model would see it) is taken by an earlier tool.
    Collision {
        /// The server's index.
        server: usize,
        /// The tool.
        tool: String,
        /// The name both would have.
        exposed: String,
    },
}

/// The routing of a tool set: every tool offered, by the name the model sees, and what was left
/// out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The tools, in server order then each server's order.
    pub routes: Vec<Route>,
    /// Left out, with why.
    pub skipped: Vec<Skipped>,
    by_name: HashMap<String, usize>,
}

impl Plan {
    /// The route of a name the model called.
    pub fn route(&self, exposed: &str) -> Option<&Route> {
        self.by_name.get(exposed).map(|&i| &self.routes[i])
    }
}

/// A server as the plan sees it: its name, its filter, and the names of its tools (in its
/// order).
#[derive(Debug, Clone, Copy)]
pub struct ServerTools<'a> {
    /// The server's configured name.
    pub name: &'a str,
    /// Which tools are offered.
    pub filter: &'a ToolFilter,
    /// Its tools' names.
    pub tools: &'a [String],
}

/// Names and routes every offered tool of `servers`. A name is never given twice: where two
/// tools would have the same one (two servers' names that sanitize alike, a server offering the
/// same name twice), the first keeps it and the later one gets a digest suffix; with
/// [`Prefix::Never`], the later one is left out instead.
pub fn plan(servers: &[ServerTools<'_>], rules: &NameRules) -> Plan {
    // For OnCollision: how many servers offer each name.
    let mut offered_by: HashMap<&str, HashSet<usize>> = HashMap::new();
    for (i, s) in servers.iter().enumerate() {
        for t in s.tools.iter().filter(|t| s.filter.offers(t)) {
            offered_by.entry(t.as_str()).or_default().insert(i);
        }
    }
    let mut out = Plan::default();
    for (i, s) in servers.iter().enumerate() {
        for tool in s.tools {
            if !s.filter.offers(tool) {
                out.skipped.push(Skipped::Filtered {
                    server: i,
                    tool: tool.clone(),
                });
                continue;
            }
            let prefixed = match rules.prefix {
                Prefix::Always => true,
                Prefix::OnCollision => offered_by.get(tool.as_str()).is_some_and(|s| s.len() > 1),
                Prefix::Never => false,
            };
            let mut exposed = if prefixed {
                prefixed_name(s.name, tool, rules)
            } else {
                plain_name(tool)
            };
            if out.by_name.contains_key(&exposed) {
                if rules.prefix == Prefix::Never {
                    out.skipped.push(Skipped::Collision {
                        server: i,
                        tool: tool.clone(),
                        exposed,
                    });
                    continue;
                }
                // Apart by a digest of where it comes from (stable across listings).
                let tag = digest(&[s.name, tool, &i.to_string()]);
                let base = head(&exposed, MAX_NAME - 1 - tag.len());
                exposed = format!("{base}_{tag}");
                if out.by_name.contains_key(&exposed) {
                    out.skipped.push(Skipped::Collision {
                        server: i,
                        tool: tool.clone(),
                        exposed,
                    });
                    continue;
                }
            }
            out.by_name.insert(exposed.clone(), out.routes.len());
            out.routes.push(Route {
                exposed,
                server: i,
                tool: tool.clone(),
            });
        }
    }
    out
}

/// Names and routes the prompts of `servers` (each a server's name and its prompts' names, in
/// its order) as [`plan`] does tools: `server__prompt` under `rules`, no prompt filtered. A
/// prompt is got by the name the plan gives it, and the prompt's own name goes to its server.
pub fn plan_prompts(servers: &[(&str, &[String])], rules: &NameRules) -> Plan {
    let everything = ToolFilter::default();
    let servers: Vec<ServerTools<'_>> = servers
        .iter()
        .map(|&(name, tools)| ServerTools {
            name,
            filter: &everything,
            tools,
        })
        .collect();
    plan(&servers, rules)
}

/// Which server a resource's URI is read from, when the caller did not name one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceOwner {
    /// This server (its index): the only one that lists the URI, or the set's only server.
    Server(usize),
    /// No server lists it (and the set has several): the caller must name one.
    Unlisted,
    /// Several servers list it (their indexes): the caller must name one.
    Several(Vec<usize>),
}

/// Whether a server whose first `tools/list` was refused (a JSON-RPC error) started all the same,
/// with no tools: it did when it never declared `tools` (`capabilities` as it sent them, `None`
/// before the opening completed: then it did not). Such a server offers resources or prompts
/// only; it is still asked, since servers that serve tools without declaring them exist and the
/// official SDKs ask them too.
///
/// > "Servers that support tools **MUST** declare the `tools` capability" — MCP 2025-11-25,
/// > Tools § Capabilities
pub fn refused_listing_means_no_tools(capabilities: Option<&serde_json::Value>) -> bool {
    capabilities.is_some_and(|c| c.get("tools").is_none())
}

/// Which of the servers reads `uri`, from the URIs each lists (`listed[i]`: server `i`'s).
///
/// > "Each resource is uniquely identified by a URI." — MCP 2025-11-25, Resources
///
/// — unique within its server: two servers may list the same URI. URIs are compared exactly: a URI is the resource's identity, and only its server knows which
/// other spellings are the same resource. A URI no server lists (a template's expansion, one the
/// server does not list) goes to the set's only server, if it has one; otherwise the caller
/// names the server.
pub fn resource_owner<S: AsRef<str>>(uri: &str, listed: &[&[S]]) -> ResourceOwner {
    let owners: Vec<usize> = listed
        .iter()
        .enumerate()
        .filter(|(_, uris)| uris.iter().any(|u| u.as_ref() == uri))
        .map(|(i, _)| i)
        .collect();
    match owners[..] {
        [one] => ResourceOwner::Server(one),
        [] if listed.len() == 1 => ResourceOwner::Server(0),
        [] => ResourceOwner::Unlisted,
        _ => ResourceOwner::Several(owners),
    }
}

/// Which of the servers loads skill `skill` — a name as listed, or the URI of a `SKILL.md` —
/// from the skills each lists (`listed[i]`: server `i`'s, as (name, URI) pairs).
///
/// > "Hosts **MUST** identify servers by a host-assigned label, not the server's
/// > self-reported `serverInfo.name`." — SEP-2640 § Security Considerations
///
/// A skill is named by its server's label, then: a name (or URI) one server lists goes to it; one
/// several list must be given with its server ([`ResourceOwner::Several`]) — two servers'
/// skills of one name are different skills, and neither is preferred. A URI no server lists goes
/// to the set's only server, if it has one ("hosts **MUST** support loading a skill given only
/// its URI" — SEP-2640 § Listing Skills); an unlisted name goes nowhere.
pub fn skill_owner<S: AsRef<str>>(skill: &str, listed: &[&[(S, S)]]) -> ResourceOwner {
    let owners: Vec<usize> = listed
        .iter()
        .enumerate()
        .filter(|(_, skills)| {
            skills
                .iter()
                .any(|(name, uri)| name.as_ref() == skill || uri.as_ref() == skill)
        })
        .map(|(i, _)| i)
        .collect();
    match owners[..] {
        [one] => ResourceOwner::Server(one),
        [] if listed.len() == 1 && skill.ends_with("/SKILL.md") => ResourceOwner::Server(0),
        [] => ResourceOwner::Unlisted,
        _ => ResourceOwner::Several(owners),
    }
}

/// When a server that died may be started again: after a backoff that doubles from `initial`
/// to `max` with each restart in the last minute, and at most `per_minute` restarts in any
/// minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The wait before the first restart (default 0: at once).
    pub initial: Duration,
    /// The longest wait (default 8 s).
    pub max: Duration,
    /// The most restarts in any 60 s (default 5).
    pub per_minute: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            initial: Duration::ZERO,
            max: Duration::from_secs(8),
            per_minute: 5,
        }
    }
}

/// The restart history of one server.
#[derive(Debug, Clone, Default)]
pub struct Restarts {
    recent: VecDeque<Instant>,
}

/// Whether a restart may happen now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartVerdict {
    /// Yes, after waiting this long (from `now`).
    After(Duration),
    /// No: the cap is reached; the next one is possible at this instant.
    Exhausted {
        /// When the oldest restart of the last minute leaves the window.
        until: Instant,
    },
}

impl Restarts {
    /// Whether a restart may happen at `now`, by `policy`; a caller that restarts calls
    /// [`record`](Self::record).
    pub fn verdict(&mut self, policy: &RestartPolicy, now: Instant) -> RestartVerdict {
        const WINDOW: Duration = Duration::from_secs(60);
        while self
            .recent
            .front()
            .is_some_and(|&t| now.saturating_duration_since(t) >= WINDOW)
        {
            self.recent.pop_front();
        }
        if self.recent.len() >= policy.per_minute as usize {
            let oldest = self.recent.front().copied().unwrap_or(now);
            return RestartVerdict::Exhausted {
                until: oldest + WINDOW,
            };
        }
        let n = self.recent.len() as u32;
        let wait = if n == 0 {
            policy.initial
        } else {
            let base = policy.initial.max(Duration::from_millis(250));
            base.saturating_mul(1u32 << (n - 1).min(16)).min(policy.max)
        };
        RestartVerdict::After(wait)
    }

    /// Notes a restart at `now`.
    pub fn record(&mut self, now: Instant) {
        self.recent.push_back(now);
        while self.recent.len() > 64 {
            self.recent.pop_front();
        }
    }
}

/// The era each server spoke, remembered from one connection to the next, and the era to open
/// it in next time. A driver keeps one per set of servers or per client configuration (never per
/// process: two applications in one process may configure the same server differently).
///
/// > "The era determination is a property of the server, not of an individual request. Clients
/// > **SHOULD** cache the result for the lifetime of the server process (stdio) or origin (HTTP),
/// > and **MAY** persist it across restarts of the same server configuration, re-probing if the
/// > cached assumption later fails." — MCP 2026-07-28, Versioning § Backward Compatibility
///
/// A server remembered as legacy is opened with [`EraChoice::LegacyFirst`]: `initialize` first,
/// the probe only if that is refused (the re-probe when "the cached assumption later fails").
/// A server remembered as modern is probed as usual (the probe is how the modern era opens).
/// The memory holds at most [`EraMemory::MAX`] servers; past it, it starts afresh.
#[derive(Debug, Clone, Default)]
pub struct EraMemory {
    eras: HashMap<String, Era>,
}

impl EraMemory {
    /// The most servers remembered.
    pub const MAX: usize = 256;

    /// The era remembered for the server `key`, if any.
    pub fn get(&self, key: &str) -> Option<Era> {
        self.eras.get(key).copied()
    }

    /// The era to open the server `key` in, when the application asked for `asked`: a
    /// remembered legacy server refines [`EraChoice::Auto`] into [`EraChoice::LegacyFirst`];
    /// any other choice is the application's.
    pub fn opening(&self, key: &str, asked: EraChoice) -> EraChoice {
        match (asked, self.get(key)) {
            (EraChoice::Auto, Some(Era::Legacy)) => EraChoice::LegacyFirst,
            (asked, _) => asked,
        }
    }

    /// The opening of `key` ended: `Some(era)` remembers the era it found, `None` (a failed
    /// opening) forgets what was remembered, so the next one finds out again.
    pub fn opened(&mut self, key: &str, era: Option<Era>) {
        match era {
            Some(era) => {
                if self.eras.len() >= Self::MAX && !self.eras.contains_key(key) {
                    self.eras.clear();
                }
                self.eras.insert(key.to_owned(), era);
            }
            None => {
                self.eras.remove(key);
            }
        }
    }

    /// Whether an opening that failed is tried once more, in the legacy era, on a new
    /// connection (a stdio server started again): only when the era was being found out
    /// ([`EraChoice::Auto`]), the server ended on the probe, and it ended *because of* the probe:
    /// it read some of what it was sent (`input_read`: the bytes of it the server read, when the
    /// transport can tell; the driver's `Transport::input_read`). A server that exits on an
    /// unknown request is a legacy server that does not survive one:
    ///
    /// > "The server returns any other error, or does not respond … the server is legacy. Fall
    /// > back to the `initialize` handshake." — MCP 2026-07-28, stdio § Backward Compatibility
    ///
    /// A server that exits without having read a byte ended whatever it was sent (a missing
    /// setting, a crash at start-up, a program that is no server at all): starting it again
    /// would run its start-up, and its side effects, twice, and fail the same way. A legacy
    /// server can only end *on* the probe by reading it; the legacy SDK servers do not end at
    /// all, they answer it with a JSON-RPC error. Where the transport cannot tell (`None`), the
    /// server is given the benefit of the doubt.
    pub fn relaunch(
        opened_with: EraChoice,
        ended_on_probe: bool,
        input_read: Option<u64>,
    ) -> Option<EraChoice> {
        let read_it = input_read != Some(0);
        (ended_on_probe && read_it && opened_with == EraChoice::Auto).then_some(EraChoice::Legacy)
    }

    /// The key a stdio server is remembered by: its command line and working directory. Never
    /// its environment, which may hold secrets.
    pub fn stdio_key<'a>(
        command: &str,
        args: impl IntoIterator<Item = &'a str>,
        dir: Option<&str>,
    ) -> String {
        let mut key = format!("stdio:{command}");
        for arg in args {
            key.push('\0');
            key.push_str(arg);
        }
        if let Some(dir) = dir {
            key.push_str("\0@");
            key.push_str(dir);
        }
        key
    }

    /// The key a Streamable HTTP server is remembered by: its endpoint without user info,
    /// query or fragment (so no credential is kept in the memory).
    pub fn http_key(url: &str) -> String {
        let cut = url.find(['?', '#']).unwrap_or(url.len());
        format!("http:{}", crate::http::redact_url(&url[..cut]))
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_refused_listing_is_no_tools_only_where_none_were_declared() {
        use serde_json::json;
        assert!(refused_listing_means_no_tools(Some(
            &json!({"prompts": {}})
        )));
        assert!(refused_listing_means_no_tools(Some(&json!({}))));
        assert!(!refused_listing_means_no_tools(Some(&json!({"tools": {}}))));
        assert!(!refused_listing_means_no_tools(None));
    }

    #[test]
    fn a_prefixed_name_routes_to_its_servers_before_any_started() {
        let rules = NameRules::default();
        let servers = ["alpha", "beta", "my server", "alpha__x"];
        assert_eq!(routes_to("beta__echo", servers, &rules), ["beta"]);
        // Sanitized as the set names them.
        assert_eq!(routes_to("my_server__read", servers, &rules), ["my server"]);
        // A server name that is another's prefix plus more: both can be meant.
        assert_eq!(
            routes_to("alpha__x__echo", servers, &rules),
            ["alpha", "alpha__x"]
        );
        // Nothing to tell: unprefixed, no tool after the separator, another policy.
        assert!(routes_to("echo", servers, &rules).is_empty());
        assert!(routes_to("beta__", servers, &rules).is_empty());
        assert!(routes_to("gamma__echo", servers, &rules).is_empty());
        let collision = NameRules {
            prefix: Prefix::OnCollision,
            ..NameRules::default()
        };
        assert!(routes_to("beta__echo", servers, &collision).is_empty());
    }
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_are_prefixed_sanitized_and_shortened_predictably() {
        let r = NameRules::default();
        assert_eq!(prefixed_name("everything", "echo", &r), "everything__echo");
        assert_eq!(
            prefixed_name("my server/1", "get:item", &r),
            "my_server_1__get_item"
        );
        assert_eq!(prefixed_name("", "x", &r), "___x");
        let long = "s".repeat(200);
        let a = prefixed_name(&long, "echo", &r);
        assert_eq!(a.len(), MAX_NAME);
        assert_eq!(a, prefixed_name(&long, "echo", &r));
        assert_ne!(a, prefixed_name(&long, "echo2", &r));
        assert!(a.chars().all(is_name_char));
        let dot = NameRules {
            separator: ".".into(),
            prefix: Prefix::Always,
        };
        assert_eq!(prefixed_name("fs", "read", &dot), "fs.read");
        assert_eq!(plain_name("ünïcode"), "_n_code");
    }

    #[test]
    fn a_non_ascii_separator_is_sanitized_and_never_panics() {
        let rules = |separator: &str| NameRules {
            separator: separator.into(),
            prefix: Prefix::Always,
        };
        // The review's `toolset_non_ascii_separator_panics`: the cut fell inside the `→`.
        let name = prefixed_name(&"s".repeat(118), "toolname", &rules("→"));
        assert_eq!(name, format!("{}_toolname", "s".repeat(118)));
        let name = prefixed_name(&"s".repeat(125), "toolname", &rules("→"));
        assert_eq!(name.len(), MAX_NAME);
        assert!(name.chars().all(is_name_char), "{name}");
        assert_eq!(prefixed_name("fs", "read", &rules("→")), "fs_read");
        assert_eq!(prefixed_name("fs", "read", &rules("::")), "fs__read");
        assert_eq!(prefixed_name("fs", "read", &rules("")), "fsread");
        // Every cut position, with separators of every UTF-8 width.
        for separator in ["é", "→", "🦀", "ü🦀→", "", "."] {
            for n in 100..=140 {
                let name = prefixed_name(&"s".repeat(n), "tool", &rules(separator));
                assert!(name.len() <= MAX_NAME, "{separator:?} {n}: {name}");
                assert!(name.chars().all(is_name_char), "{separator:?} {n}: {name}");
            }
        }
        // The plan's own cut (a collision's digest suffix), and the plan at all.
        let tools = names(&["t"]);
        let open = ToolFilter::default();
        let (a, b) = ("a b".repeat(40), "a/b".repeat(40));
        let servers = [
            ServerTools {
                name: &a,
                filter: &open,
                tools: &tools,
            },
            ServerTools {
                name: &b,
                filter: &open,
                tools: &tools,
            },
        ];
        let p = plan(&servers, &rules("→"));
        assert_eq!(p.routes.len(), 2);
        assert_ne!(p.routes[0].exposed, p.routes[1].exposed);
        for r in &p.routes {
            assert!(r.exposed.len() <= MAX_NAME && r.exposed.chars().all(is_name_char));
        }
        assert_eq!(head("a→b", 2), "a");
        assert_eq!(head("a→b", 4), "a→");
        assert_eq!(head("ab", 9), "ab");
    }

    #[test]
    fn plans_route_filter_and_never_repeat_a_name() {
        let everything = names(&["echo", "add", "secret"]);
        let python = names(&["echo", "whoami"]);
        let deny = ToolFilter {
            allow: None,
            deny: names(&["secret"]),
        };
        let open = ToolFilter::default();
        let servers = [
            ServerTools {
                name: "everything",
                filter: &deny,
                tools: &everything,
            },
            ServerTools {
                name: "python",
                filter: &open,
                tools: &python,
            },
        ];
        let p = plan(&servers, &NameRules::default());
        let exposed: Vec<_> = p.routes.iter().map(|r| r.exposed.as_str()).collect();
        assert_eq!(
            exposed,
            [
                "everything__echo",
                "everything__add",
                "python__echo",
                "python__whoami"
            ]
        );
        let r = p.route("python__echo").unwrap();
        assert_eq!((r.server, r.tool.as_str()), (1, "echo"));
        assert_eq!(
            p.skipped,
            [Skipped::Filtered {
                server: 0,
                tool: "secret".into()
            }]
        );
        // Only where two servers collide.
        let rules = NameRules {
            prefix: Prefix::OnCollision,
            ..NameRules::default()
        };
        let p = plan(&servers, &rules);
        let exposed: Vec<_> = p.routes.iter().map(|r| r.exposed.as_str()).collect();
        assert_eq!(
            exposed,
            ["everything__echo", "add", "python__echo", "whoami"]
        );
        // Never: the first keeps it.
        let rules = NameRules {
            prefix: Prefix::Never,
            ..NameRules::default()
        };
        let p = plan(&servers, &rules);
        assert_eq!(p.route("echo").unwrap().server, 0);
        assert!(
            matches!(&p.skipped[1], Skipped::Collision { server: 1, tool, .. } if tool == "echo")
        );
        // Two server names that sanitize alike: the later gets a digest, stably.
        let a = names(&["t"]);
        let servers = [
            ServerTools {
                name: "a b",
                filter: &open,
                tools: &a,
            },
            ServerTools {
                name: "a/b",
                filter: &open,
                tools: &a,
            },
        ];
        let p = plan(&servers, &NameRules::default());
        assert_eq!(p.routes[0].exposed, "a_b__t");
        assert!(p.routes[1].exposed.starts_with("a_b__t_"));
        assert_eq!(
            p.routes[1].exposed,
            plan(&servers, &NameRules::default()).routes[1].exposed
        );
        // The allow list.
        let allow = ToolFilter {
            allow: Some(names(&["add"])),
            deny: vec![],
        };
        assert!(allow.offers("add") && !allow.offers("echo"));
    }

    #[test]
    fn prompts_are_named_and_routed_like_tools() {
        let a = names(&["greet", "sum"]);
        let b = names(&["greet"]);
        let plan = plan_prompts(&[("a", &a), ("b c", &b)], &NameRules::default());
        let exposed: Vec<&str> = plan.routes.iter().map(|r| r.exposed.as_str()).collect();
        assert_eq!(exposed, ["a__greet", "a__sum", "b_c__greet"]);
        let route = plan.route("b_c__greet").unwrap();
        assert_eq!((route.server, route.tool.as_str()), (1, "greet"));
        assert!(plan.route("greet").is_none());
        assert!(plan.skipped.is_empty());
    }

    #[test]
    fn a_resource_goes_to_the_one_server_that_lists_it() {
        let a = names(&["file:///a", "mem://x"]);
        let b = names(&["mem://x", "file:///b"]);
        let both: [&[String]; 2] = [&a, &b];
        assert_eq!(resource_owner("file:///b", &both), ResourceOwner::Server(1));
        assert_eq!(
            resource_owner("mem://x", &both),
            ResourceOwner::Several(vec![0, 1])
        );
        assert_eq!(resource_owner("file:///c", &both), ResourceOwner::Unlisted);
        // Exact comparison: another spelling is not the same URI here.
        assert_eq!(resource_owner("FILE:///a", &both), ResourceOwner::Unlisted);
        // The only server reads what it does not list (a template's expansion).
        assert_eq!(
            resource_owner("file:///c", &[&a[..]]),
            ResourceOwner::Server(0)
        );
        let none: [&[String]; 0] = [];
        assert_eq!(resource_owner("file:///c", &none), ResourceOwner::Unlisted);
    }

    #[test]
    fn restarts_back_off_and_are_capped_per_minute() {
        let policy = RestartPolicy::default();
        let mut r = Restarts::default();
        let t0 = Instant::now();
        let mut waits = Vec::new();
        for i in 0..5 {
            let now = t0 + Duration::from_secs(i);
            match r.verdict(&policy, now) {
                RestartVerdict::After(d) => waits.push(d),
                v => panic!("{v:?}"),
            }
            r.record(now);
        }
        assert_eq!(waits, [0, 250, 500, 1000, 2000].map(Duration::from_millis));
        let now = t0 + Duration::from_secs(10);
        assert_eq!(
            r.verdict(&policy, now),
            RestartVerdict::Exhausted {
                until: t0 + Duration::from_secs(60)
            }
        );
        // A minute after the first, one more is allowed.
        assert!(matches!(
            r.verdict(&policy, t0 + Duration::from_secs(60)),
            RestartVerdict::After(_)
        ));
    }

    #[test]
    fn a_remembered_legacy_server_opens_legacy_first_and_a_failure_forgets_it() {
        let mut memory = EraMemory::default();
        let key = EraMemory::stdio_key("npx", ["-y", "srv"], None);
        assert_eq!(memory.opening(&key, EraChoice::Auto), EraChoice::Auto);
        memory.opened(&key, Some(Era::Legacy));
        assert_eq!(
            memory.opening(&key, EraChoice::Auto),
            EraChoice::LegacyFirst
        );
        // The application's explicit choice is never overridden.
        assert_eq!(memory.opening(&key, EraChoice::Modern), EraChoice::Modern);
        assert_eq!(memory.opening(&key, EraChoice::Legacy), EraChoice::Legacy);
        // Another server, or the same command elsewhere, is not this one.
        let elsewhere = EraMemory::stdio_key("npx", ["-y", "srv"], Some("/tmp"));
        let other = EraMemory::stdio_key("npx", ["-y srv"], None);
        assert_eq!(memory.opening(&elsewhere, EraChoice::Auto), EraChoice::Auto);
        assert_eq!(memory.opening(&other, EraChoice::Auto), EraChoice::Auto);
        // A modern server is probed as usual.
        memory.opened(&key, Some(Era::Modern));
        assert_eq!(memory.opening(&key, EraChoice::Auto), EraChoice::Auto);
        memory.opened(&key, Some(Era::Legacy));
        memory.opened(&key, None);
        assert_eq!(memory.get(&key), None);
        assert_eq!(memory.opening(&key, EraChoice::Auto), EraChoice::Auto);
    }

    #[test]
    fn the_memory_is_bounded_and_keys_hold_no_credentials() {
        let mut memory = EraMemory::default();
        for i in 0..EraMemory::MAX {
            memory.opened(&format!("k{i}"), Some(Era::Legacy));
        }
        assert_eq!(memory.get("k0"), Some(Era::Legacy));
        // Updating a known server does not start afresh; a new one past the cap does.
        memory.opened("k1", Some(Era::Modern));
        assert_eq!(memory.get("k0"), Some(Era::Legacy));
        memory.opened("new", Some(Era::Legacy));
        assert_eq!(memory.get("k0"), None);
        assert_eq!(memory.get("new"), Some(Era::Legacy));
        let key = EraMemory::http_key("https://user:pw@mcp.example.com/mcp?token=secret#x");
        assert!(!key.contains("pw") && !key.contains("secret"), "{key}");
        assert!(
            key.starts_with("http:https://") && key.contains("mcp.example.com/mcp"),
            "{key}"
        );
    }

    #[test]
    fn only_a_server_that_ended_on_the_probe_being_found_out_is_relaunched_legacy() {
        assert_eq!(
            EraMemory::relaunch(EraChoice::Auto, true, None),
            Some(EraChoice::Legacy)
        );
        assert_eq!(
            EraMemory::relaunch(EraChoice::Auto, true, Some(120)),
            Some(EraChoice::Legacy)
        );
        // It ended without reading a byte: whatever it was sent.
        assert_eq!(EraMemory::relaunch(EraChoice::Auto, true, Some(0)), None);
        assert_eq!(EraMemory::relaunch(EraChoice::Auto, false, None), None);
        assert_eq!(
            EraMemory::relaunch(EraChoice::LegacyFirst, true, None),
            None
        );
        assert_eq!(EraMemory::relaunch(EraChoice::Modern, true, None), None);
        assert_eq!(EraMemory::relaunch(EraChoice::Legacy, true, None), None);
    }

    #[test]
    fn a_skill_goes_to_the_one_server_that_lists_it() {
        let a = [
            ("pdf", "skill://pdf/SKILL.md"),
            ("csv", "skill://csv/SKILL.md"),
        ];
        let b = [("pdf", "skill://b-pdf/SKILL.md")];
        let listed: [&[(&str, &str)]; 2] = [&a, &b];
        assert_eq!(skill_owner("csv", &listed), ResourceOwner::Server(0));
        assert_eq!(
            skill_owner("skill://b-pdf/SKILL.md", &listed),
            ResourceOwner::Server(1)
        );
        assert_eq!(
            skill_owner("pdf", &listed),
            ResourceOwner::Several(vec![0, 1])
        );
        assert_eq!(skill_owner("nope", &listed), ResourceOwner::Unlisted);
        assert_eq!(
            skill_owner("skill://x/SKILL.md", &listed),
            ResourceOwner::Unlisted
        );
        // One server: an unlisted URI is its to load, an unlisted name no one's.
        let one: [&[(&str, &str)]; 1] = [&a];
        assert_eq!(
            skill_owner("skill://x/SKILL.md", &one),
            ResourceOwner::Server(0)
        );
        assert_eq!(skill_owner("nope", &one), ResourceOwner::Unlisted);
    }
}
