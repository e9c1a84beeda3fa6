//! The config readers (`mcp_connect::config`): the six formats (ten hosts), variables, inputs, `envFile`,
//! JSONC, the driver configs they turn into, `Debug` without secrets, and every error message.
//!
//! In the error tables, `‸` marks where the error must point; it is removed before parsing, and
//! the expected `FILE:LINE:COLUMN: ` is computed from it.

use mcp_connect::config::{
    load, load_with, parse, ConfigError, ConfigErrorKind, ConfigFormat, ExpandOptions, ServerEntry,
    ServerTransport, ServersConfig,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const MARK: char = '‸';

fn path_of(format: ConfigFormat) -> &'static str {
    match format {
        ConfigFormat::McpServers => "/ws/mcp.json",
        ConfigFormat::VsCode => "/ws/.vscode/mcp.json",
        ConfigFormat::Gemini => "/ws/.gemini/settings.json",
        ConfigFormat::Zed => "/ws/.zed/settings.json",
        ConfigFormat::Goose => "/ws/config.yaml",
        _ => "/ws/config.toml",
    }
}

fn options() -> ExpandOptions {
    ExpandOptions::default()
        .var("HOME", "/home/me")
        .var("TOKEN", "s3cr3t")
        .var("EMPTY", "")
}

fn read(format: ConfigFormat, text: &str) -> Result<ServersConfig, ConfigError> {
    parse(text, format, path_of(format), &options())
}

fn servers(format: ConfigFormat, text: &str) -> Vec<ServerEntry> {
    match read(format, text) {
        Ok(config) => config.servers,
        Err(e) => panic!("{e}"),
    }
}

fn one(format: ConfigFormat, text: &str) -> ServerEntry {
    let mut servers = servers(format, text);
    assert_eq!(servers.len(), 1);
    servers.remove(0)
}

/// Checks that `marked` (with `‸` where the error points) fails with `message` after the
/// position.
fn fails(format: ConfigFormat, marked: &str, message: &str) {
    let at = marked
        .find(MARK)
        .unwrap_or_else(|| panic!("no mark in {marked}"));
    let before = &marked[..at];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    let text = marked.replacen(MARK, "", 1);
    // An unset variable fails its entry (the only one of these tables), any other error the file.
    let error = match read(format, &text) {
        Ok(mut config) if config.failed.len() == 1 && config.servers.is_empty() => {
            let failed = config.failed.remove(0);
            assert!(failed.error.kind.is_unset_variable(), "{marked}");
            assert_eq!(Some(&failed.name), failed.error.server.as_ref());
            failed.error
        }
        Ok(config) => panic!("{marked}: read as {config:?}"),
        Err(error) => {
            assert!(!error.kind.is_unset_variable(), "{marked}: {error}");
            error
        }
    };
    assert_eq!(
        error.to_string(),
        format!("{}:{line}:{column}: {message}", path_of(format)),
        "{marked}"
    );
}

fn stdio(command: &str, args: &[&str]) -> ServerTransport {
    ServerTransport::Stdio {
        command: command.into(),
        args: args.iter().map(|&a| a.into()).collect(),
        env: BTreeMap::new(),
        cwd: None,
    }
}

fn http(url: &str, headers: &[(&str, &str)]) -> ServerTransport {
    ServerTransport::Http {
        url: url.into(),
        headers: headers.iter().map(|&(k, v)| (k.into(), v.into())).collect(),
    }
}

use ConfigFormat::{Codex, Gemini, Goose, McpServers, VsCode, Zed};

// The same servers in the three formats.

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/config")
        .join(name)
}

#[test]
fn the_three_formats_load_to_the_same_servers() {
    let dir = data("");
    let dir = dir.to_str().unwrap().trim_end_matches('/');
    let options = ExpandOptions::default()
        .var("REPO", "/repo")
        .var("PY_PORT", "8931")
        .var("PY_TOKEN", "tok")
        .input("py-token", "tok");
    let mut everything = stdio("npx", &["-y", "@modelcontextprotocol/server-everything"]);
    if let ServerTransport::Stdio { env, .. } = &mut everything {
        env.insert("LOG_LEVEL".into(), "debug".into());
    }
    let mut python = stdio(
        "/repo/.peers/bin/python",
        &[
            "/repo/drivers/tests/peers/fastmcp_server.py",
            "--transport",
            "stdio",
        ],
    );
    if let ServerTransport::Stdio { cwd, .. } = &mut python {
        *cwd = Some("/repo".into());
    }
    let expected = vec![
        ServerEntry::new("everything", everything),
        ServerEntry::new(
            "filesystem",
            stdio(
                "npx",
                &["-y", "@modelcontextprotocol/server-filesystem", dir],
            ),
        ),
        ServerEntry::new("python", python),
        ServerEntry::new(
            "python-http",
            http(
                "http://127.0.0.1:8931/mcp",
                &[("Authorization", "Bearer tok")],
            ),
        ),
    ];
    for (file, format) in [
        ("claude_desktop_config.json", McpServers),
        ("mcp.json", VsCode),
        ("config.toml", Codex),
    ] {
        let config = load_with(data(file), &options).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.format, format, "{file}");
        assert_eq!(config.path, data(file));
        assert_eq!(config.servers, expected, "{file}");
    }
}

#[test]
fn load_tells_the_format_and_refuses_what_it_cannot_tell() {
    let dir = std::env::temp_dir().join(format!("mcp-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let options = ExpandOptions::default();

    let any = write("any.conf", r#"{"mcpServers": {}}"#);
    assert_eq!(load_with(&any, &options).unwrap().format, McpServers);
    let vscode = write("x.json", r#"{"servers": {}}"#);
    assert_eq!(load_with(&vscode, &options).unwrap().format, VsCode);
    let codex = write("x.TOML", "[mcp_servers]\n");
    assert_eq!(load_with(&codex, &options).unwrap().format, Codex);

    let neither = write("neither.json", "\n  {\"other\": {}}");
    assert_eq!(
        load_with(&neither, &options).unwrap_err().to_string(),
        format!(
            "{}:2:3: found neither \"mcpServers\" (Claude Desktop, Cursor, Windsurf, Gemini CLI and \
             most others), \"servers\" (VS Code) nor \"context_servers\" (Zed) at the top level",
            neither.display()
        )
    );
    let both = write("both.json", "{\"mcpServers\": {},\n \"servers\": {}}");
    assert_eq!(
        load_with(&both, &options).unwrap_err().to_string(),
        format!(
            "{}:2:2: has both \"mcpServers\" and \"servers\" at the top level: cannot tell the \
             format",
            both.display()
        )
    );
    let not_object = write("array.json", "[]");
    assert_eq!(
        load_with(&not_object, &options).unwrap_err().to_string(),
        format!(
            "{}:1:1: the top level must be an object",
            not_object.display()
        )
    );
    let bad_toml = write("bad.toml", "[mcp_servers\n");
    assert!(load_with(&bad_toml, &options)
        .unwrap_err()
        .to_string()
        .starts_with(&format!("{}:1:", bad_toml.display())));

    let missing = dir.join("missing.json");
    let error = load(&missing).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: cannot read the file: No such file or directory (os error 2)",
            missing.display()
        )
    );
    assert!(matches!(error.kind, ConfigErrorKind::Read { .. }));
    assert_eq!(error.position, None);
    let source = std::error::Error::source(&error).expect("the io error");
    assert_eq!(
        source.downcast_ref::<std::io::Error>().map(|e| e.kind()),
        Some(std::io::ErrorKind::NotFound)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// The mcpServers format.

#[test]
fn mcp_servers_reads_stdio_and_http_in_file_order() {
    let servers = servers(
        McpServers,
        r#"{
          "mcpServers": {
            "z": {"command": "z-server", "args": ["a", "b"], "env": {"B": "2", "A": "1"}, "cwd": "/srv"},
            "a": {"url": "https://example.com/mcp", "headers": {"X-Key": "${TOKEN}", "X-Team": "core"}},
            "m": {"type": "stdio", "command": "m", "disabled": true, "autoApprove": ["x"]},
            "h1": {"type": "http", "url": "http://h/mcp"},
            "h2": {"type": "streamable-http", "url": "http://h/mcp"},
            "h3": {"type": "streamable_http", "url": "http://h/mcp"},
            "h4": {"type": "streamableHttp", "url": "http://h/mcp"},
            "rel": {"command": "r", "cwd": "sub/dir", "disabled": false}
          }
        }"#,
    );
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["z", "a", "m", "h1", "h2", "h3", "h4", "rel"]);
    assert_eq!(
        servers[0].transport,
        ServerTransport::Stdio {
            command: "z-server".into(),
            args: vec!["a".into(), "b".into()],
            env: [("A".into(), "1".into()), ("B".into(), "2".into())].into(),
            cwd: Some("/srv".into()),
        }
    );
    assert_eq!(
        servers[1].transport,
        http(
            "https://example.com/mcp",
            &[("X-Key", "s3cr3t"), ("X-Team", "core")]
        )
    );
    assert!(servers[0].enabled && servers[1].enabled && !servers[2].enabled);
    assert_eq!(servers[2].transport, stdio("m", &[]));
    for s in &servers[3..7] {
        assert_eq!(s.transport, http("http://h/mcp", &[]));
    }
    assert_eq!(
        servers[7].transport,
        ServerTransport::Stdio {
            command: "r".into(),
            args: vec![],
            env: BTreeMap::new(),
            cwd: Some("/ws/sub/dir".into()),
        }
    );
    assert!(servers[7].enabled);
    let entry = &servers[0];
    assert_eq!(
        (
            entry.startup_timeout,
            entry.tool_timeout,
            &entry.enabled_tools,
            entry.disabled_tools.len()
        ),
        (None, None, &None, 0)
    );
}

#[test]
fn both_json_formats_accept_jsonc() {
    let text = |key: &str| {
        format!(
            "// servers\n{{\n  /* block */ \"{key}\": {{\n    \"a\": {{\"command\": \"x\", \"args\": [\"1\",],}}, // trailing\n  }},\n}}\n"
        )
    };
    for (format, key) in [(McpServers, "mcpServers"), (VsCode, "servers")] {
        assert_eq!(one(format, &text(key)).transport, stdio("x", &["1"]));
    }
    assert!(servers(McpServers, r#"{"mcpServers": {}}"#).is_empty());
}

#[test]
fn mcp_servers_errors() {
    let m = McpServers;
    fails(
        m,
        "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n  \"args\": ‸\"-y\"}}}",
        r#"server "a": "args" must be an array of strings"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", "args": ["ok", ‸3]}}}"#,
        r#"server "a": "args" must be an array of strings"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": ‸["x"]}}}"#,
        r#"server "a": "command" must be a string"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": ‸""}}}"#,
        r#"server "a": "command" must not be empty"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", "env": ‸["A=1"]}}}"#,
        r#"server "a": "env" must be an object of strings"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", "env": {"A": ‸1}}}}"#,
        r#"server "a": "env" must be an object of strings"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", "env": {"A": "1", ‸"A": "2"}}}}"#,
        r#"server "a": "A" is given twice in "env""#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", "cwd": ‸1}}}"#,
        r#"server "a": "cwd" must be a string"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", "cwd": ‸""}}}"#,
        r#"server "a": "cwd" must not be empty"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", "disabled": ‸"yes"}}}"#,
        r#"server "a": "disabled" must be true or false"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", ‸"command": "y"}}}"#,
        r#"server "a": "command" is given twice"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x"}, ‸"a": {"command": "y"}}}"#,
        r#"server "a": listed twice"#,
    );
    fails(
        m,
        r#"{"mcpServers": {‸"": {"command": "x"}}}"#,
        r#"a server's name must not be empty"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": ‸"npx"}}"#,
        r#"server "a": must be an object"#,
    );
    fails(
        m,
        r#"{"mcpServers": ‸[]}"#,
        r#""mcpServers" must be an object"#,
    );
    fails(
        m,
        r#"‸{"servers": {}}"#,
        r#"no "mcpServers" at the top level"#,
    );
    fails(m, r#"‸"mcpServers""#, r#"the top level must be an object"#);
    fails(
        m,
        "‸// nothing but a comment\n",
        r#"the file holds no JSON value"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", ‸"url": "http://h/"}}}"#,
        r#"server "a": has both "command" and "url": a server is either a command to start (stdio) or a URL (Streamable HTTP)"#,
    );
    fails(
        m,
        r#"{"mcpServers": {‸"a": {"args": ["x"]}}}"#,
        r#"server "a": has neither "command" (a stdio server) nor "url" (a Streamable HTTP server)"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"type": ‸"stdio", "url": "http://h/"}}}"#,
        r#"server "a": "type" is "stdio" but "command" is missing"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"type": ‸"streamable-http", "command": "x"}}}"#,
        r#"server "a": "type" is "streamable-http" but "url" is missing"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"type": ‸"websocket", "url": "ws://h/"}}}"#,
        r#"server "a": unknown "type" "websocket": expected "stdio", "http", "streamable-http", "streamable_http" or "streamableHttp""#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"type": ‸7, "url": "http://h/"}}}"#,
        r#"server "a": "type" must be a string"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"type": ‸"sse", "url": "http://h/sse"}}}"#,
        r#"server "a": "type" "sse" is the HTTP+SSE transport of MCP 2024-11-05, deprecated since 2025-03-26 and not supported: use "http" (Streamable HTTP) if the server offers it"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"url": ‸"ftp://h/mcp"}}}"#,
        r#"server "a": "url" must be an http or https URL, not ftp:"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"url": ‸"/mcp"}}}"#,
        r#"server "a": "url" is not a URL: relative URL without a base"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"url": ‸true}}}"#,
        r#"server "a": "url" must be a string"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"url": "http://h/", "headers": ‸"X: 1"}}}"#,
        r#"server "a": "headers" must be an object of strings"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"url": "http://h/", "headers": {"x-key": "1", ‸"X-Key": "2"}}}}"#,
        r#"server "a": header "X-Key" is given twice"#,
    );
}

#[test]
fn json_syntax_errors_have_a_position() {
    fails(
        McpServers,
        "{\"mcpServers\": {\n  \"a\": {\"command\" ‸\"x\"}}}",
        "invalid JSON: expected colon after the string or word in object property",
    );
    fails(
        McpServers,
        "{\"mcpServers\": {\"a\": ‸'x'}}",
        "invalid JSON: single-quoted strings are not allowed",
    );
    fails(
        VsCode,
        "{\"servers\": ‸{\"a\": {}",
        "invalid JSON: unterminated object",
    );
    fails(
        VsCode,
        "{\"servers\": {‸a: {}}}",
        "invalid JSON: expected string for object property",
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let json = format!("{{\"mcpServers\": {}", "[".repeat(100_000));
    let error = read(McpServers, &json).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid JSON: maximum nesting depth exceeded"),
        "{error}"
    );
    let toml = format!("x = {}", "[".repeat(100_000));
    let error = read(Codex, &toml).unwrap_err();
    assert!(
        error.to_string().starts_with("/ws/config.toml:1:"),
        "{error}"
    );
}

// Variables.

#[test]
fn variables_are_expanded_in_every_value() {
    let entry = one(
        McpServers,
        r#"{"mcpServers": {"a": {
            "command": "${HOME}/bin/${env:TOKEN}",
            "args": ["--home=${userHome}", "${workspaceFolder}", "${workspaceFolderBasename}", "a${/}b${pathSeparator}c"],
            "env": {"T": "Bearer ${TOKEN}", "E": "[${EMPTY}]"},
            "cwd": "${workspaceFolder}/x"
        }}}"#,
    );
    assert_eq!(
        entry.transport,
        ServerTransport::Stdio {
            command: "/home/me/bin/s3cr3t".into(),
            args: vec![
                "--home=/home/me".into(),
                "/ws".into(),
                "ws".into(),
                "a/b/c".into()
            ],
            env: [
                ("E".into(), "[]".into()),
                ("T".into(), "Bearer s3cr3t".into())
            ]
            .into(),
            cwd: Some("/ws/x".into()),
        }
    );
    let entry = one(
        McpServers,
        r#"{"mcpServers": {"a": {"url": "https://${TOKEN}.example/mcp?k=${env:TOKEN}", "headers": {"K": "${TOKEN}"}}}}"#,
    );
    assert_eq!(
        entry.transport,
        http("https://s3cr3t.example/mcp?k=s3cr3t", &[("K", "s3cr3t")])
    );
}

#[test]
fn dollar_escapes_and_plain_dollars() {
    let entry = one(
        Codex,
        r#"[mcp_servers.a]
command = "sh"
args = ["-c", "echo $HOME $$ $", "$${HOME}", "$$${TOKEN}", "a$b", "${TOKEN}$"]
"#,
    );
    assert_eq!(
        entry.transport,
        stdio(
            "sh",
            &[
                "-c",
                "echo $HOME $$ $",
                "${HOME}",
                "$${TOKEN}",
                "a$b",
                "s3cr3t$"
            ]
        )
    );
    // Names, keys, tool lists and `type` are not expanded.
    let entry = one(
        Codex,
        "[mcp_servers.\"${TOKEN}\"]\ncommand = \"x\"\nenv = { \"${K}\" = \"v\" }\nenabled_tools = [\"${T}\"]\n",
    );
    assert_eq!(entry.name, "${TOKEN}");
    assert_eq!(entry.enabled_tools, Some(vec!["${T}".to_owned()]));
    if let ServerTransport::Stdio { env, .. } = &entry.transport {
        assert!(env.contains_key("${K}"));
    }
}

#[test]
fn variable_errors_name_the_variable_and_point_at_it() {
    let m = McpServers;
    fails(
        m,
        r#"{"mcpServers": {"github": {"command": "x", "env": {"T": "Bearer ‸${GITHUB_TOKEN}"}}}}"#,
        r#"server "github": environment variable "GITHUB_TOKEN" is not set"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x", "args": ["‸${env:NOPE}"]}}}"#,
        r#"server "a": environment variable "NOPE" is not set"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"url": "http://h/${TOKEN}/‸${env:MISSING}"}}}"#,
        r#"server "a": environment variable "MISSING" is not set"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "‸${config:editor.tabSize}"}}}"#,
        r#"server "a": unknown variable "${config:editor.tabSize}": expected ${VAR}, ${env:VAR}, ${input:ID}, ${workspaceFolder} or ${userHome}"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "x‸${TOKEN"}}}"#,
        r#"server "a": "${" without its closing "}""#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "‸${}"}}}"#,
        r#"server "a": "${}" names no variable"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": "‸${env:}"}}}"#,
        r#"server "a": "${}" names no variable"#,
    );
    // With an escape in the string the position is the string's start.
    fails(
        m,
        r#"{"mcpServers": {"a": {"command": ‸"\u0078${NOPE}"}}}"#,
        r#"server "a": environment variable "NOPE" is not set"#,
    );
    fails(
        Codex,
        "[mcp_servers.a]\ncommand = '‸${NOPE}'\n",
        r#"server "a": environment variable "NOPE" is not set"#,
    );

    let error = parse(
        r#"{"mcpServers": {"a": {"command": "${userHome}/x"}}}"#,
        McpServers,
        "/ws/mcp.json",
        &ExpandOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"/ws/mcp.json:1:35: server "a": "${userHome}" is used but HOME is not set"#
    );
    let config = read(
        McpServers,
        r#"{"mcpServers": {"github": {"command": "x", "env": {"T": "${GITHUB_TOKEN}"}}}}"#,
    )
    .unwrap();
    let error = config.failure("github").unwrap().error.clone();
    assert_eq!(
        error.kind,
        ConfigErrorKind::MissingVariable("GITHUB_TOKEN".into())
    );
    assert_eq!(error.server.as_deref(), Some("github"));
    assert_eq!(error.position, Some((1, 58)));
    assert_eq!(error.path, PathBuf::from("/ws/mcp.json"));
}

#[test]
fn userprofile_stands_in_for_home() {
    let options = ExpandOptions::default().var("USERPROFILE", "C:/Users/me");
    let config = parse(
        r#"{"mcpServers": {"a": {"command": "${userHome}/x"}}}"#,
        McpServers,
        "/ws/mcp.json",
        &options,
    )
    .unwrap();
    assert_eq!(config.servers[0].transport, stdio("C:/Users/me/x", &[]));
}

#[test]
fn an_unset_variable_fails_its_entry_not_the_file() {
    // In each format: "bad" uses an unset variable, "off" too but is disabled, "good" is fine.
    let cases: &[(ConfigFormat, &str)] = &[
        (
            McpServers,
            r#"{"mcpServers": {
  "bad": {"command": "x", "env": {"T": "${env:NOPE}"}},
  "good": {"command": "y"},
  "off": {"url": "${NOPE}", "disabled": true}
}}"#,
        ),
        (
            Gemini,
            r#"{"mcpServers": {
  "bad": {"command": "x", "args": ["$NOPE"]},
  "good": {"command": "y"},
  "off": {"httpUrl": "$NOPE", "disabled": true}
}}"#,
        ),
        (
            VsCode,
            r#"{"servers": {
  "bad": {"command": "x", "args": ["${input:nope}"]},
  "good": {"command": "y"}
}}"#,
        ),
        (
            Codex,
            "[mcp_servers.bad]\nurl = 'https://h/mcp'\nbearer_token_env_var = 'NOPE'\n\n\
             [mcp_servers.good]\ncommand = 'y'\n\n\
             [mcp_servers.off]\ncommand = '${NOPE}'\nenabled = false\n",
        ),
        (
            Zed,
            r#"{"context_servers": {
  "bad": {"command": "${NOPE}"},
  "good": {"command": "y"},
  "off": {"command": "${NOPE}", "enabled": false}
}}"#,
        ),
        (
            Goose,
            "extensions:\n  bad:\n    type: stdio\n    cmd: x\n    env_keys: [NOPE]\n\
             \x20 good:\n    type: stdio\n    cmd: y\n\
             \x20 off:\n    type: stdio\n    cmd: ${NOPE}\n    enabled: false\n",
        ),
    ];
    for (format, text) in cases {
        let config = read(*format, text).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good"], "{format:?}");
        let failed: Vec<(&str, bool)> = config
            .failed
            .iter()
            .map(|f| (f.name.as_str(), f.enabled))
            .collect();
        let expected: &[(&str, bool)] = if *format == VsCode {
            &[("bad", true)]
        } else {
            &[("bad", true), ("off", false)]
        };
        assert_eq!(failed, expected, "{format:?}");
        let bad = config.failure("bad").unwrap();
        assert!(bad.error.kind.is_unset_variable(), "{format:?}");
        assert_eq!(bad.error.server.as_deref(), Some("bad"));
        // The line of the variable (Codex's, Goose's: the key naming it).
        let line = match format {
            Codex => 3,
            Goose => 5,
            _ => 2,
        };
        assert_eq!(bad.error.position.map(|(l, _)| l), Some(line), "{format:?}");
        assert!(config.get("bad").is_none());
        // Said in the user's words, naming the variable and where it is used.
        let said = bad.to_string();
        assert!(
            said.contains("\"NOPE\" is not set") || said.contains("input \"nope\" is not given"),
            "{said}"
        );
        assert!(!said.contains("::"), "{said}");
    }
    // A name is still listed once, failed or not; other errors still fail the file.
    fails(
        McpServers,
        r#"{"mcpServers": {"a": {"command": "${NOPE}"}, ‸"a": {"command": "y"}}}"#,
        r#"server "a": listed twice"#,
    );
    fails(
        McpServers,
        r#"{"mcpServers": {"a": {"command": "${NOPE}"}, "b": {"command": ‸7}}}"#,
        r#"server "b": "command" must be a string"#,
    );
}

// VS Code.

#[test]
fn vscode_reads_types_inputs_and_the_workspace_folder() {
    let text = r#"{
      "inputs": [{"type": "promptString", "id": "key", "description": "API key", "password": true}],
      "servers": {
        "fs": {"type": "stdio", "command": "npx", "args": ["${workspaceFolder}"], "dev": {"watch": "src/**"}},
        "remote": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${input:key}"}},
        "plain": {"url": "https://h/mcp"}
      }
    }"#;
    let config = parse(
        text,
        VsCode,
        "/proj/.vscode/mcp.json",
        &ExpandOptions::default().input("key", "k-123"),
    )
    .unwrap();
    assert_eq!(config.format, VsCode);
    assert_eq!(config.servers[0].transport, stdio("npx", &["/proj"]));
    assert_eq!(
        config.servers[1].transport,
        http("https://h/mcp", &[("Authorization", "Bearer k-123")])
    );
    assert_eq!(config.servers[2].transport, http("https://h/mcp", &[]));
    // Outside a .vscode folder (or in .cursor's), the workspace folder is the file's own.
    for (path, folder) in [
        ("/proj/conf/mcp.json", "/proj/conf"),
        ("/proj/.cursor/mcp.json", "/proj"),
    ] {
        let config = parse(
            r#"{"servers": {"a": {"command": "${workspaceFolder}"}}}"#,
            VsCode,
            path,
            &ExpandOptions::default(),
        )
        .unwrap();
        assert_eq!(config.servers[0].transport, stdio(folder, &[]));
    }
}

#[test]
fn an_input_must_be_supplied() {
    let text = r#"{"inputs": [{"type": "promptString", "id": "key", "description": "API key"}, {"id": "other"}],
      "servers": {"remote": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${input:key}"}}}}"#;
    let error = read(VsCode, text).unwrap().failed.remove(0).error;
    assert_eq!(
        error.to_string(),
        r#"/ws/.vscode/mcp.json:2:91: server "remote": input "key" ("API key") is not given (inputs are never prompted for)"#
    );
    assert_eq!(
        error.kind,
        ConfigErrorKind::MissingInput {
            id: "key".into(),
            description: Some("API key".into())
        }
    );
    fails(
        VsCode,
        r#"{"servers": {"a": {"command": "x", "args": ["‸${input:undeclared}"]}}}"#,
        r#"server "a": input "undeclared" is not given (inputs are never prompted for)"#,
    );
    fails(
        VsCode,
        r#"{"inputs": ‸{"id": "x"}, "servers": {}}"#,
        r#""inputs" must be an array of objects with a string "id""#,
    );
    fails(
        VsCode,
        r#"{"inputs": [‸{"type": "promptString"}], "servers": {}}"#,
        r#""inputs" must be an array of objects with a string "id""#,
    );
}

#[test]
fn vscode_errors() {
    let v = VsCode;
    fails(
        v,
        r#"{"servers": {"a": {"type": ‸"sse", "url": "http://h/sse"}}}"#,
        r#"server "a": "type" "sse" is the HTTP+SSE transport of MCP 2024-11-05, deprecated since 2025-03-26 and not supported: use "http" (Streamable HTTP) if the server offers it"#,
    );
    fails(
        v,
        r#"{"servers": {"a": {"type": ‸"streamable-http", "url": "http://h/"}}}"#,
        r#"server "a": unknown "type" "streamable-http": expected "stdio" or "http""#,
    );
    fails(
        v,
        r#"{"servers": {"a": {"type": ‸"http", "command": "x"}}}"#,
        r#"server "a": "type" is "http" but "url" is missing"#,
    );
    fails(
        v,
        r#"‸{"mcpServers": {}}"#,
        r#"no "servers" at the top level"#,
    );
    fails(v, r#"{"servers": ‸"a"}"#, r#""servers" must be an object"#);
    fails(
        v,
        r#"{"servers": {"a": {"command": "x", "envFile": ‸3}}}"#,
        r#"server "a": "envFile" must be a string"#,
    );
    fails(
        v,
        r#"{"servers": {"a": {"command": "x", "envFile": "‸${NOPE}/.env"}}}"#,
        r#"server "a": environment variable "NOPE" is not set"#,
    );
    fails(
        v,
        r#"{"servers": {"a": {"command": "x", "envFile": ‸"/nonexistent/.env"}}}"#,
        r#"server "a": cannot read "envFile" /nonexistent/.env: No such file or directory (os error 2)"#,
    );
}

/// A workspace folder in the temporary directory with `.vscode/mcp.json` and `.env`.
struct Workspace(PathBuf);

impl Workspace {
    fn new(name: &str, env_file: &str) -> Workspace {
        let dir = std::env::temp_dir().join(format!("mcp-config-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".vscode")).unwrap();
        std::fs::write(dir.join(".env"), env_file).unwrap();
        Workspace(dir)
    }

    fn load(&self, server: &str) -> Result<ServersConfig, ConfigError> {
        let path = self.0.join(".vscode/mcp.json");
        std::fs::write(&path, format!(r#"{{"servers": {{"a": {server}}}}}"#)).unwrap();
        load_with(&path, &options())
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn vscode_env_file() {
    let workspace = Workspace::new(
        "envfile",
        "# comment\n\nPLAIN=a b  # trailing comment\nexport EXPORTED = yes\nDOUBLE=\"line\\none \\\"q\\\" # not a comment\"  # comment\nSINGLE='$x \\n'\nEMPTY=\nHASH=a#b\nOVERRIDDEN=from file\n",
    );
    for server in [
        r#"{"command": "x", "envFile": "${workspaceFolder}/.env", "env": {"OVERRIDDEN": "from env"}}"#,
        r#"{"command": "x", "envFile": ".env", "env": {"OVERRIDDEN": "from env"}}"#,
    ] {
        let config = workspace.load(server).unwrap_or_else(|e| panic!("{e}"));
        let ServerTransport::Stdio { env, .. } = &config.servers[0].transport else {
            panic!("stdio")
        };
        let expected: BTreeMap<String, String> = [
            ("PLAIN", "a b"),
            ("EXPORTED", "yes"),
            ("DOUBLE", "line\none \"q\" # not a comment"),
            ("SINGLE", "$x \\n"),
            ("EMPTY", ""),
            ("HASH", "a#b"),
            ("OVERRIDDEN", "from env"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(env, &expected);
    }
}

#[test]
fn vscode_env_file_errors_point_into_it() {
    for (file, position, message) in [
        ("A=1\n  NOVALUE\n", "2:3", "expected KEY=VALUE"),
        (
            "A B=1\n",
            "1:1",
            "expected KEY=VALUE, KEY made of letters, digits, '_', '.' and '-'",
        ),
        (
            "=1\n",
            "1:1",
            "expected KEY=VALUE, KEY made of letters, digits, '_', '.' and '-'",
        ),
        (
            "\nA=\"open\n",
            "2:1",
            "a quoted value without its closing quote",
        ),
        ("A='x' y\n", "1:1", "text after a quoted value"),
    ] {
        let workspace = Workspace::new("envfile-errors", file);
        let error = workspace
            .load(r#"{"command": "x", "envFile": ".env"}"#)
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}:{position}: server \"a\": {message}",
                workspace.0.join(".env").display()
            ),
            "{file:?}"
        );
    }
}

// Codex.

#[test]
fn codex_reads_its_keys() {
    let servers = servers(
        Codex,
        r#"
model = "o3"
[profiles.x]
whatever = 1

[mcp_servers.local]
command = "npx"
args = ["-y", "server"]
env = { "A" = "1" }
cwd = "rel"
startup_timeout_sec = 20
tool_timeout_sec = 60.5
enabled_tools = ["echo", "add"]
disabled_tools = ["add"]

[mcp_servers.remote]
url = "https://h/mcp"
bearer_token_env_var = "TOKEN"
http_headers = { "X-Team" = "core" }
env_http_headers = { "X-Home" = "HOME" }
enabled = false
startup_timeout_ms = 1500

[mcp_servers.dotted]
command = "d"
env.B = "2"
"#,
    );
    assert_eq!(servers.len(), 3);
    let local = &servers[0];
    assert_eq!(
        local.transport,
        ServerTransport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "server".into()],
            env: [("A".into(), "1".into())].into(),
            cwd: Some("/ws/rel".into()),
        }
    );
    assert_eq!(local.startup_timeout, Some(Duration::from_secs(20)));
    assert_eq!(local.tool_timeout, Some(Duration::from_millis(60_500)));
    assert_eq!(
        local.enabled_tools,
        Some(vec!["echo".to_owned(), "add".to_owned()])
    );
    assert_eq!(local.disabled_tools, ["add"]);
    assert!(local.enabled);
    let remote = &servers[1];
    assert_eq!(
        remote.transport,
        http(
            "https://h/mcp",
            &[
                ("X-Team", "core"),
                ("X-Home", "/home/me"),
                ("Authorization", "Bearer s3cr3t")
            ]
        )
    );
    assert!(!remote.enabled);
    assert_eq!(remote.startup_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(remote.tool_timeout, None);
    let ServerTransport::Stdio { env, .. } = &servers[2].transport else {
        panic!()
    };
    assert_eq!(env.get("B").map(String::as_str), Some("2"));
    assert!(read(Codex, "model = \"o3\"\n").unwrap().servers.is_empty());
}

#[test]
fn codex_errors() {
    let c = Codex;
    fails(
        c,
        "[mcp_servers.a]\nurl = \"http://h/\"\nbearer_token_env_var = ‸\"NOPE\"\n",
        r#"server "a": environment variable "NOPE" is not set"#,
    );
    fails(
        c,
        "[mcp_servers.a]\nurl = \"http://h/\"\nbearer_token_env_var = ‸\"EMPTY\"\n",
        r#"server "a": environment variable "EMPTY" (from "bearer_token_env_var") is empty"#,
    );
    fails(
        c,
        "[mcp_servers.a]\nurl = \"http://h/\"\nbearer_token_env_var = ‸[\"TOKEN\"]\n",
        r#"server "a": "bearer_token_env_var" must be a string"#,
    );
    fails(c, "[mcp_servers.a]\nurl = \"http://h/\"\nhttp_headers = { ‸authorization = \"x\" }\nbearer_token_env_var = \"TOKEN\"\n", r#"server "a": an "Authorization" header and "bearer_token_env_var": give one"#);
    fails(
        c,
        "[mcp_servers.a]\nurl = \"http://h/\"\nenv_http_headers = { \"X-Key\" = ‸\"NOPE\" }\n",
        r#"server "a": environment variable "NOPE" is not set"#,
    );
    fails(
        c,
        "[mcp_servers.a]\nurl = \"http://h/\"\nenv_http_headers = { \"X-Key\" = ‸\"EMPTY\" }\n",
        r#"server "a": environment variable "EMPTY" (from "env_http_headers") is empty"#,
    );
    fails(
        c,
        "[mcp_servers.a]\nurl = \"http://h/\"\nenv_http_headers = { \"X-Key\" = ‸1 }\n",
        r#"server "a": "env_http_headers" must be a table of strings"#,
    );
    fails(c, "[mcp_servers.a]\nurl = \"http://h/\"\nhttp_headers = { \"X-Key\" = \"1\" }\nenv_http_headers = { ‸\"x-key\" = \"TOKEN\" }\n", r#"server "a": header "x-key" is given twice"#);
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nenv = ‸[\"A=1\"]\n",
        r#"server "a": "env" must be a table of strings"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nargs = [\"a\", ‸{ b = 1 }]\n",
        r#"server "a": "args" must be an array of strings"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = ‸-1\n",
        r#"server "a": "startup_timeout_sec" must be a positive number of seconds"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = ‸0\n",
        r#"server "a": "startup_timeout_sec" must be a positive number of seconds"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = ‸\"10\"\n",
        r#"server "a": "startup_timeout_sec" must be a positive number of seconds"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = ‸nan\n",
        r#"server "a": "startup_timeout_sec" must be a positive number of seconds"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = ‸inf\n",
        r#"server "a": "tool_timeout_sec" is more than a year"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = ‸1e12\n",
        r#"server "a": "tool_timeout_sec" is more than a year"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_ms = ‸1.5\n",
        r#"server "a": "startup_timeout_ms" must be a positive whole number of milliseconds"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = 1\n‸startup_timeout_ms = 1000\n",
        r#"server "a": both "startup_timeout_sec" and "startup_timeout_ms": give one"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nenabled = ‸\"no\"\n",
        r#"server "a": "enabled" must be true or false"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\nenabled_tools = ‸\"echo\"\n",
        r#"server "a": "enabled_tools" must be an array of strings"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\ndisabled_tools = [‸1]\n",
        r#"server "a": "disabled_tools" must be an array of strings"#,
    );
    fails(
        c,
        "[mcp_servers.a]\ncommand = \"x\"\n‸url = \"http://h/\"\n",
        r#"server "a": has both "command" and "url": a server is either a command to start (stdio) or a URL (Streamable HTTP)"#,
    );
    fails(
        c,
        "[mcp_servers.‸a]\nargs = [\"x\"]\n",
        r#"server "a": has neither "command" (a stdio server) nor "url" (a Streamable HTTP server)"#,
    );
    fails(
        c,
        "[mcp_servers.‸\"\"]\ncommand = \"x\"\n",
        r#"a server's name must not be empty"#,
    );
    fails(c, "mcp_servers = ‸[]\n", r#""mcp_servers" must be a table"#);
    fails(
        c,
        "mcp_servers.a = ‸\"npx\"\n",
        r#"server "a": must be a table"#,
    );
}

#[test]
fn toml_syntax_errors_have_a_position() {
    for (text, expected) in [
        (
            "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a]\n",
            "/ws/config.toml:3:14: invalid TOML: duplicate key",
        ),
        (
            "[mcp_servers.a]\ncommand = \"x\"\ncommand = \"y\"\n",
            "/ws/config.toml:3:1: invalid TOML: duplicate key",
        ),
        (
            "[mcp_servers.a]\ncommand = \"x\n",
            "/ws/config.toml:2:13: invalid TOML: invalid basic string, expected `\"`",
        ),
    ] {
        let error = read(Codex, text).unwrap_err();
        assert_eq!(error.to_string(), expected, "{text:?}");
        assert!(matches!(
            error.kind,
            ConfigErrorKind::Syntax { syntax: "TOML", .. }
        ));
    }
}

// What the entries become, and what they show.

#[test]
fn entries_turn_into_driver_configs() {
    let servers = servers(
        McpServers,
        r#"{"mcpServers": {
            "s": {"command": "srv", "args": ["a"], "env": {"K": "${TOKEN}"}, "cwd": "/tmp"},
            "h": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        }}"#,
    );
    let stdio = servers[0].stdio_config().unwrap();
    assert_eq!(stdio.command, "srv");
    assert_eq!(stdio.args, ["a"]);
    assert_eq!(stdio.env, [("K".into(), "s3cr3t".into())]);
    assert_eq!(stdio.dir, Some("/tmp".into()));
    assert!(servers[0].http_config().is_none());
    let http = servers[1].http_config().unwrap();
    assert_eq!(http.rules.url, "https://h/mcp");
    assert_eq!(
        http.rules.headers,
        [("Authorization".to_owned(), "Bearer s3cr3t".to_owned())]
    );
    assert!(servers[1].stdio_config().is_none());
}

#[test]
fn debug_shows_no_env_or_header_value() {
    let config = read(
        Codex,
        r#"
[mcp_servers.s]
command = "srv"
env = { SECRET_ENV = "${TOKEN}" }
[mcp_servers.h]
url = "https://user:${TOKEN}@h/mcp?key=${TOKEN}"
bearer_token_env_var = "TOKEN"
http_headers = { "X-Key" = "${TOKEN}" }
"#,
    )
    .unwrap();
    let debug = format!("{config:?} {:#?}", config.servers);
    assert!(!debug.contains("s3cr3t"), "{debug}");
    assert!(debug.contains("SECRET_ENV=…"), "{debug}");
    assert!(debug.contains("Authorization=…"), "{debug}");
    assert!(debug.contains("X-Key=…"), "{debug}");
    assert!(debug.contains("https://h/mcp"), "{debug}");
    let driver = format!(
        "{:?} {:?}",
        config.servers[0].stdio_config().unwrap(),
        config.servers[1].http_config().unwrap()
    );
    assert!(!driver.contains("s3cr3t"), "{driver}");
    let options = format!("{:?}", options().input("id", "s3cr3t"));
    assert!(!options.contains("s3cr3t"), "{options}");
    assert!(options.contains("TOKEN=…"), "{options}");
}

#[test]
fn errors_never_show_a_value() {
    let cases = [
        r#"{"mcpServers": {"a": {"url": "s3cr3t"}}}"#,
        r#"{"mcpServers": {"a": {"url": "ftp://s3cr3t/"}}}"#,
        r#"{"mcpServers": {"a": {"command": "s3cr3t${"}}}"#,
        r#"{"mcpServers": {"a": {"command": "x", "env": {"A": "s3cr3t", "A": "s3cr3t"}}}}"#,
    ];
    for text in cases {
        let error = read(McpServers, text).unwrap_err();
        assert!(!error.to_string().contains("s3cr3t"), "{error}");
        assert!(!format!("{error:?}").contains("s3cr3t"), "{error:?}");
    }
}

// Files read: regular files only, capped (T11).

/// `load_with(path)` on a thread: its outcome, or a failure of the test when it has not ended
/// within 30 s (a loader blocked on a FIFO would never end).
fn load_within(path: &Path) -> Result<ServersConfig, ConfigError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(load_with(&path, &options()));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("loading ended (it must not wait on a FIFO or read without end)")
}

/// A FIFO nobody writes to, made with `mkfifo`.
fn fifo(dir: &Path) -> PathBuf {
    let path = dir.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    path
}

#[test]
fn a_config_or_env_file_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = mcp_testkit::TempDir::new("mcp-config-files");
    let fifo = fifo(dir.path());
    let linked = dir.path().join("zero-link");
    std::os::unix::fs::symlink("/dev/zero", &linked).unwrap();
    let cases: [(&Path, &str); 5] = [
        (Path::new("/dev/zero"), "a character device"),
        (&fifo, "a FIFO"),
        (dir.path(), "a directory"),
        (&linked, "a character device"),
        // The test's stdin: /dev/null (a device), a pipe or a terminal — never a regular file.
        (Path::new("/dev/stdin"), ""),
    ];
    for (path, found) in cases {
        // The config file itself.
        let error = load_within(path).unwrap_err();
        let ConfigErrorKind::NotAFile { what, found: is } = &error.kind else {
            panic!("{}: {error}", path.display())
        };
        assert_eq!(what, "the file");
        if !found.is_empty() {
            assert_eq!(*is, found);
            assert_eq!(
                error.to_string(),
                format!(
                    "{}: the file is not a regular file: it is {found}",
                    path.display()
                )
            );
        }
        // An envFile.
        let config = dir.path().join("mcp.json");
        let server = serde_json::json!({"servers": {"a": {"command": "x", "envFile": path}}});
        std::fs::write(&config, server.to_string()).unwrap();
        let error = load_within(&config).unwrap_err();
        let ConfigErrorKind::NotAFile { what, .. } = &error.kind else {
            panic!("{}: {error}", path.display())
        };
        assert_eq!(what, &format!("\"envFile\" {}", path.display()));
        assert!(
            error
                .to_string()
                .starts_with(&format!("{}:1:", config.display())),
            "{error}"
        );
        assert!(
            error.to_string().contains("is not a regular file"),
            "{error}"
        );
    }
}

#[test]
fn a_config_or_env_file_past_its_cap_is_refused_and_one_at_its_cap_is_read() {
    use mcp_connect::config::{MAX_CONFIG_FILE, MAX_ENV_FILE};
    let dir = mcp_testkit::TempDir::new("mcp-config-caps");
    let sized = |name: &str, head: &str, size: u64| {
        let path = dir.path().join(name);
        let mut text = head.to_owned();
        text.push_str(&" ".repeat(size as usize - head.len() - 1));
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        path
    };
    let head = r#"{"servers": {"a": {"command": "x", "envFile": "env"}}}"#;
    // A symlink to a regular file is read (the user's config may be one).
    let at_cap = sized("at-cap.json", head, MAX_CONFIG_FILE);
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&at_cap, &link).unwrap();
    sized("env", "A=1", MAX_ENV_FILE);
    for path in [&at_cap, &link] {
        let config = load_within(path).unwrap_or_else(|e| panic!("{e}"));
        let ServerTransport::Stdio { env, .. } = &config.servers[0].transport else {
            panic!("stdio")
        };
        assert_eq!(env["A"], "1");
    }
    let past = sized("past-cap.json", head, MAX_CONFIG_FILE + 1);
    let error = load_within(&past).unwrap_err();
    assert_eq!(
        error.kind,
        ConfigErrorKind::TooLarge {
            what: "the file".into(),
            cap: MAX_CONFIG_FILE
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{}: the file is larger than 16 MiB, the most it may hold",
            past.display()
        )
    );
    let env = sized("env", "A=1", MAX_ENV_FILE + 1);
    let error = load_within(&at_cap).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}:1:47: server \"a\": \"envFile\" {} is larger than 4 MiB, the most it may hold",
            at_cap.display(),
            env.display()
        )
    );
}

// The ten hosts: the same three servers as each host writes them.

#[test]
fn the_ten_hosts_formats_load_the_same_servers_into_the_same_model() {
    let options = ExpandOptions::default()
        .var("TOKEN", "tok")
        .input("token", "tok");
    let mut everything = stdio("npx", &["-y", "@modelcontextprotocol/server-everything"]);
    if let ServerTransport::Stdio { env, .. } = &mut everything {
        env.insert("LOG_LEVEL".into(), "debug".into());
    }
    let expected = vec![
        ServerEntry::new("everything", everything),
        ServerEntry::new(
            "git",
            stdio("uvx", &["mcp-server-git", "--repository", "/srv/repo"]),
        ),
        ServerEntry::new(
            "remote",
            http(
                "https://mcp.example.com/mcp",
                &[("Authorization", "Bearer tok")],
            ),
        ),
    ];
    let hosts = [
        ("claude-desktop/claude_desktop_config.json", McpServers),
        ("cursor/.cursor/mcp.json", McpServers),
        ("claude-code/.mcp.json", McpServers),
        ("cline/cline_mcp_settings.json", McpServers),
        ("windsurf/mcp_config.json", McpServers),
        ("gemini/.gemini/settings.json", Gemini),
        ("vscode/.vscode/mcp.json", VsCode),
        ("codex/config.toml", Codex),
        ("zed/settings.json", Zed),
        ("goose/config.yaml", Goose),
    ];
    for (file, format) in hosts {
        let path = data(&format!("hosts/{file}"));
        let config = load_with(&path, &options).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.format, format, "{file}");
        let mut expected = expected.clone();
        if format == Goose {
            // Goose writes `timeout: 300` (seconds) for every extension.
            for server in &mut expected {
                server.tool_timeout = Some(Duration::from_secs(300));
            }
        }
        assert_eq!(config.servers, expected, "{file}");
        let skipped: Vec<&str> = config.skipped.iter().map(|s| s.name.as_str()).collect();
        let expected_skipped: &[&str] = match format {
            Goose => &["developer"],
            Zed => &["mcp-server-context7"],
            _ => &[],
        };
        assert_eq!(skipped, expected_skipped, "{file}");
    }
}

#[test]
fn load_tells_the_new_formats_from_name_and_content() {
    let dir = std::env::temp_dir().join(format!("mcp-config-formats-{}", std::process::id()));
    std::fs::create_dir_all(dir.join(".gemini")).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let options = ExpandOptions::default();
    let format = |path: &Path| load_with(path, &options).map(|c| c.format);

    let goose = "extensions:\n  a:\n    type: stdio\n    cmd: a\n";
    assert_eq!(format(&write("config.yaml", goose)), Ok(Goose));
    assert_eq!(format(&write("config.YML", goose)), Ok(Goose));
    // No extension: YAML is told from its first line.
    assert_eq!(
        format(&write("goose-config", &format!("# Goose\n---\n{goose}"))),
        Ok(Goose)
    );
    assert_eq!(
        format(&write(
            "zed.json",
            r#"{"theme": "x", "context_servers": {}}"#
        )),
        Ok(Zed)
    );
    // Gemini CLI's by its folder, or by an `httpUrl`.
    assert_eq!(
        format(&write(".gemini/settings.json", r#"{"mcpServers": {}}"#)),
        Ok(Gemini)
    );
    assert_eq!(
        format(&write(
            "settings.json",
            r#"{"mcpServers": {"a": {"httpUrl": "http://h/mcp"}}}"#
        )),
        Ok(Gemini)
    );
    assert_eq!(
        format(&write(
            "plain.json",
            r#"{"mcpServers": {"a": {"serverUrl": "http://h/mcp"}}}"#
        )),
        Ok(McpServers)
    );

    let both = write(
        "both.json",
        "{\"mcpServers\": {},\n \"context_servers\": {}}",
    );
    assert_eq!(
        load_with(&both, &options).unwrap_err().to_string(),
        format!(
            "{}:2:2: has both \"mcpServers\" and \"context_servers\" at the top level: cannot tell \
             the format",
            both.display()
        )
    );
    // A YAML file is reported as YAML, never as invalid JSON, with its position.
    let bad = write("bad.yaml", "extensions:\n  a: [1, 2\n  b: 3\n");
    let error = load_with(&bad, &options).unwrap_err();
    assert!(
        matches!(error.kind, ConfigErrorKind::Syntax { syntax: "YAML", .. }),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{}:3:4: invalid YAML: illegal placement of ':' indicator",
            bad.display()
        )
    );
    let bad = write("bad-no-extension", "extensions:\n  a: {type: stdio\n");
    let error = load_with(&bad, &options).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}:3:1: invalid YAML: while parsing a flow mapping, did not find expected ',' or '}}'",
            bad.display()
        )
    );
    let empty = write("empty.yaml", "# nothing\n");
    assert_eq!(
        load_with(&empty, &options).unwrap_err().to_string(),
        format!("{}:1:1: the file holds no YAML document", empty.display())
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// Zed.

#[test]
fn zed_reads_its_three_shapes_and_the_older_ones() {
    let config = read(
        Zed,
        r#"// Zed settings (JSONC)
        {
          "theme": "One Dark",
          "context_servers": {
            "everything": {"command": "npx", "args": ["-y", "x"], "env": {"LOG": "${TOKEN}"}, "timeout": 120},
            "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "enabled": false},
            "older": {"source": "custom", "command": {"path": "old", "args": ["--stdio"], "env": {"A": "1"}}},
            "ext": {"source": "extension", "settings": {"key": "v"}},
            "ext-new": {"enabled": true, "settings": {}},
            "remote-dev": {"command": "r", "args": [], "remote": true},
          },
        }"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.format, Zed);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["everything", "remote", "older", "remote-dev"]);
    assert_eq!(
        config.servers[0].transport,
        ServerTransport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "x".into()],
            env: [("LOG".into(), "s3cr3t".into())].into(),
            cwd: None,
        }
    );
    assert_eq!(
        config.servers[0].tool_timeout,
        Some(Duration::from_secs(120))
    );
    assert_eq!(
        config.servers[1].transport,
        http(
            "https://example.com/mcp",
            &[("Authorization", "Bearer s3cr3t")]
        )
    );
    assert!(config.servers[0].enabled && !config.servers[1].enabled);
    assert_eq!(
        config.servers[2].transport,
        ServerTransport::Stdio {
            command: "old".into(),
            args: vec!["--stdio".into()],
            env: [("A".into(), "1".into())].into(),
            cwd: None,
        }
    );
    let skipped: Vec<String> = config.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        skipped,
        [
            "8:13: \"ext\" skipped: a server of a Zed extension: its command comes from the extension",
            "9:13: \"ext-new\" skipped: a server of a Zed extension: its command comes from the extension",
        ]
    );
}

#[test]
fn zed_errors() {
    let z = Zed;
    fails(
        z,
        r#"{"context_servers": {"a": {"command": "x", "args": ‸"y"}}}"#,
        r#"server "a": "args" must be an array of strings"#,
    );
    fails(
        z,
        r#"{"context_servers": {‸"a": {"args": []}}}"#,
        r#"server "a": has neither "command" (a stdio server) nor "url" (a Streamable HTTP server)"#,
    );
    fails(
        z,
        r#"{"context_servers": {"a": {"command": "x", ‸"url": "http://h"}}}"#,
        r#"server "a": has both "command" and "url": a server is either a command to start (stdio) or a URL (Streamable HTTP)"#,
    );
    fails(
        z,
        r#"{"context_servers": {"a": {"command": ‸{"args": []}}}}"#,
        r#"server "a": "command" must be a string, or an object with a "path""#,
    );
    fails(
        z,
        r#"{"context_servers": {"a": {"command": {"path": ‸7}}}}"#,
        r#"server "a": "path" must be a string"#,
    );
    fails(
        z,
        r#"{"context_servers": {"a": {"source": ‸"npm", "command": "x"}}}"#,
        r#"server "a": unknown "source" "npm": expected "custom" or "extension""#,
    );
    fails(
        z,
        r#"{"context_servers": {"a": {"command": "x", "enabled": ‸"yes"}}}"#,
        r#"server "a": "enabled" must be true or false"#,
    );
    fails(
        z,
        r#"{"context_servers": {"a": {"command": "x", "timeout": ‸0}}}"#,
        r#"server "a": "timeout" must be a positive number of seconds"#,
    );
    fails(
        z,
        r#"{"context_servers": {"a": {"url": ‸"ftp://h"}}}"#,
        r#"server "a": "url" must be an http or https URL, not ftp:"#,
    );
    fails(
        z,
        r#"{"context_servers": ‸[]}"#,
        r#""context_servers" must be an object"#,
    );
}

// Goose.

#[test]
fn goose_reads_stdio_and_streamable_http_and_skips_the_rest() {
    let config = read(
        Goose,
        "GOOSE_PROVIDER: openai\n\
         extensions:\n\
         \x20 developer:\n\
         \x20   enabled: true\n\
         \x20   type: builtin\n\
         \x20   name: developer\n\
         \x20 github:\n\
         \x20   enabled: false\n\
         \x20   type: stdio\n\
         \x20   name: GitHub\n\
         \x20   cmd: npx\n\
         \x20   args: [-y, \"@modelcontextprotocol/server-github\"]\n\
         \x20   envs: {GITHUB_HOST: github.com, A: \"${TOKEN}\"}\n\
         \x20   env_keys: [TOKEN]\n\
         \x20   timeout: 60\n\
         \x20   available_tools: [search_issues]\n\
         \x20 remote:\n\
         \x20   type: streamable_http\n\
         \x20   uri: 'https://example.com/mcp'\n\
         \x20   headers:\n\
         \x20     X-Key: \"${TOKEN}\"\n\
         \x20   available_tools: []\n\
         \x20 todo:\n\
         \x20   enabled: true\n\
         \x20   type: platform\n\
         \x20 ui:\n\
         \x20   type: frontend\n\
         \x20   tools: []\n\
         \x20 py:\n\
         \x20   type: inline_python\n\
         \x20   code: print(1)\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["github", "remote"]);
    let github = &config.servers[0];
    assert_eq!(
        github.transport,
        ServerTransport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "@modelcontextprotocol/server-github".into()],
            env: [
                ("A".into(), "s3cr3t".into()),
                ("GITHUB_HOST".into(), "github.com".into()),
                ("TOKEN".into(), "s3cr3t".into()),
            ]
            .into(),
            cwd: None,
        }
    );
    assert!(!github.enabled);
    assert_eq!(github.tool_timeout, Some(Duration::from_secs(60)));
    assert_eq!(github.enabled_tools, Some(vec!["search_issues".to_owned()]));
    let remote = &config.servers[1];
    assert_eq!(
        remote.transport,
        http("https://example.com/mcp", &[("X-Key", "s3cr3t")])
    );
    assert!(remote.enabled);
    assert_eq!((remote.tool_timeout, &remote.enabled_tools), (None, &None));
    let skipped: Vec<String> = config.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        skipped,
        [
            "3:3: \"developer\" skipped: a Goose \"builtin\" extension runs inside Goose, not as an MCP server",
            "23:3: \"todo\" skipped: a Goose \"platform\" extension runs inside Goose, not as an MCP server",
            "26:3: \"ui\" skipped: a Goose \"frontend\" extension runs inside Goose, not as an MCP server",
            "29:3: \"py\" skipped: a Goose \"inline_python\" extension runs inside Goose, not as an MCP server",
        ]
    );
}

#[test]
fn goose_errors() {
    let g = Goose;
    fails(
        g,
        "extensions:\n  a:\n    type: stdio\n    cmd: x\n    args: ‸x\n",
        r#"server "a": "args" must be an array of strings"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: ‸stdio\n    args: []\n",
        r#"server "a": "type" is "stdio" but "cmd" is missing"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: ‸streamable_http\n",
        r#"server "a": "type" is "streamable_http" but "uri" is missing"#,
    );
    fails(
        g,
        "extensions:\n  old:\n    type: ‸sse\n    uri: http://h/sse\n",
        r#"server "old": "type" "sse" is the HTTP+SSE transport of MCP 2024-11-05, deprecated since 2025-03-26 and not supported: use "streamable_http" if the server offers it"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: ‸websocket\n",
        r#"server "a": unknown "type" "websocket": expected "stdio", "streamable_http", "builtin", "platform", "frontend" or "inline_python""#,
    );
    fails(
        g,
        "extensions:\n  ‸a:\n    cmd: x\n",
        r#"server "a": has no "type": expected "stdio" or "streamable_http""#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: stdio\n    cmd: x\n    env_keys: [‸NOPE]\n",
        r#"server "a": environment variable "NOPE" is not set"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: stdio\n    cmd: x\n    env_keys: [TOKEN, ‸EMPTY]\n",
        r#"server "a": environment variable "EMPTY" (from "env_keys") is empty"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: stdio\n    cmd: \"bin/‸${NOPE}\"\n",
        r#"server "a": environment variable "NOPE" is not set"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: stdio\n    cmd: x\n    enabled: ‸yes\n",
        r#"server "a": "enabled" must be true or false"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: stdio\n    cmd: x\n    envs: ‸[A]\n",
        r#"server "a": "envs" must be a mapping of strings"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: stdio\n    cmd: x\n    timeout: ‸-1\n",
        r#"server "a": "timeout" must be a positive number of seconds"#,
    );
    fails(
        g,
        "extensions:\n  a:\n    type: stdio\n    cmd: x\n  ‸a:\n    type: stdio\n    cmd: y\n",
        r#"server "a": listed twice"#,
    );
    fails(g, "extensions: ‸[a]\n", r#""extensions" must be a mapping"#);
    fails(
        g,
        "‸GOOSE_PROVIDER: openai\n",
        r#"no "extensions" at the top level"#,
    );
    fails(
        g,
        "base: &b {type: stdio, cmd: x}\nextensions:\n  a: ‸*b\n",
        "invalid YAML: aliases (*name) are not supported",
    );
    fails(
        g,
        "extensions: {}\n‸---\nextensions: {}\n",
        "invalid YAML: a second YAML document: a config file holds one",
    );
    let deep = format!("extensions: {}{}\n", "[".repeat(200), "]".repeat(200));
    let error = read(g, &deep).unwrap_err();
    assert_eq!(
        error.to_string(),
        "/ws/config.yaml:1:140: invalid YAML: nested too deeply"
    );
}

#[test]
fn yaml_scalars_are_typed_by_the_core_schema_and_positions_count_characters() {
    // Quoted numbers and booleans are strings; plain ones are not.
    let entry = one(
        Goose,
        "extensions:\n  é:\n    type: stdio\n    cmd: \"007\"\n    args: ['true', \"1.5\", x, !!str 12]\n    timeout: 1.5\n",
    );
    assert_eq!(entry.transport, stdio("007", &["true", "1.5", "x", "12"]));
    assert_eq!(entry.tool_timeout, Some(Duration::from_millis(1500)));
    fails(
        Goose,
        "extensions:\n  é:\n    type: stdio\n    cmd: x\n    args: [‸true]\n",
        r#"server "é": "args" must be an array of strings"#,
    );
    fails(
        Goose,
        "extensions:\n  é:\n    type: stdio\n    cmd: ‸0x1F\n",
        r#"server "é": "cmd" must be a string"#,
    );
    fails(
        Goose,
        "# ééé\nextensions:\n  é:\n    type: stdio\n    cmd: ‸~\n",
        r#"server "é": "cmd" must be a string"#,
    );
}

// Gemini CLI and Windsurf: the common shape plus their keys.

#[test]
fn gemini_reads_http_url_timeouts_tool_lists_and_dollar_variables() {
    let servers = servers(
        Gemini,
        r#"{
          "theme": "GitHub",
          "mcp": {"allowed": ["a"]},
          "mcpServers": {
            "py": {"command": "python", "args": ["-m", "srv", "$HOME/x", "a$", "$1"], "cwd": "./srv",
                   "env": {"KEY": "$TOKEN", "B": "${TOKEN}"}, "timeout": 15000, "trust": true,
                   "includeTools": ["a", "b"], "excludeTools": ["b"]},
            "h": {"httpUrl": "http://h/mcp", "headers": {"Authorization": "Bearer $TOKEN"}},
            "u": {"url": "http://h/mcp", "type": "http"},
            "bare": {"url": "http://h/mcp"}
          }
        }"#,
    );
    assert_eq!(
        servers[0].transport,
        ServerTransport::Stdio {
            command: "python".into(),
            args: ["-m", "srv", "/home/me/x", "a$", "$1"]
                .map(String::from)
                .into(),
            env: [
                ("B".into(), "s3cr3t".into()),
                ("KEY".into(), "s3cr3t".into())
            ]
            .into(),
            cwd: Some("/ws/./srv".into()),
        }
    );
    assert_eq!(servers[0].tool_timeout, Some(Duration::from_secs(15)));
    assert_eq!(
        servers[0].enabled_tools,
        Some(vec!["a".to_owned(), "b".to_owned()])
    );
    assert_eq!(servers[0].disabled_tools, ["b"]);
    assert_eq!(
        servers[1].transport,
        http("http://h/mcp", &[("Authorization", "Bearer s3cr3t")])
    );
    for s in &servers[2..] {
        assert_eq!(s.transport, http("http://h/mcp", &[]));
    }
    // `$VAR` is Gemini CLI's only: elsewhere it stays as written; `timeout` is not read (Cline's
    // is in seconds).
    let entry = one(
        McpServers,
        r#"{"mcpServers": {"a": {"command": "x", "args": ["$HOME"], "timeout": 60}}}"#,
    );
    assert_eq!(entry.transport, stdio("x", &["$HOME"]));
    assert_eq!(entry.tool_timeout, None);
}

#[test]
fn gemini_errors() {
    let g = Gemini;
    fails(
        g,
        r#"{"mcpServers": {"a": {"url": "http://h/sse", "type": ‸"sse"}}}"#,
        r#"server "a": "type" "sse" is the HTTP+SSE transport of MCP 2024-11-05, deprecated since 2025-03-26 and not supported: use "http" (Streamable HTTP) if the server offers it"#,
    );
    fails(
        g,
        r#"{"mcpServers": {"a": {"url": "http://h", ‸"httpUrl": "http://h"}}}"#,
        r#"server "a": has both "url" and "httpUrl": give one"#,
    );
    fails(
        g,
        r#"{"mcpServers": {"a": {"command": "x", ‸"httpUrl": "http://h"}}}"#,
        r#"server "a": has both "command" and "httpUrl": a server is either a command to start (stdio) or a URL (Streamable HTTP)"#,
    );
    fails(
        g,
        r#"{"mcpServers": {"a": {"httpUrl": ‸"h"}}}"#,
        r#"server "a": "httpUrl" is not a URL: relative URL without a base"#,
    );
    fails(
        g,
        r#"{"mcpServers": {"a": {"command": "x", "timeout": ‸1.5}}}"#,
        r#"server "a": "timeout" must be a positive whole number of milliseconds"#,
    );
    fails(
        g,
        r#"{"mcpServers": {"a": {"command": "x", "args": ["--key=‸$NOPE"]}}}"#,
        r#"server "a": environment variable "NOPE" is not set"#,
    );
    fails(
        g,
        r#"{"mcpServers": {"a": {"command": "x", "includeTools": ‸"a"}}}"#,
        r#"server "a": "includeTools" must be an array of strings"#,
    );
    fails(
        g,
        r#"{"mcpServers": {"a": {‸"tcp": "ws://h:9000"}}}"#,
        r#"server "a": "tcp" (Gemini CLI's WebSocket transport) is not an MCP transport this client speaks: give "command" (stdio) or "url" (Streamable HTTP)"#,
    );
    fails(
        g,
        r#"{"mcpServers": {‸"a": {"trust": true}}}"#,
        r#"server "a": has neither "command" (a stdio server) nor "url" (a Streamable HTTP server)"#,
    );
}

#[test]
fn windsurf_server_url() {
    let entry = one(
        McpServers,
        r#"{"mcpServers": {"w": {"serverUrl": "https://h/mcp", "headers": {"K": "${env:TOKEN}"}, "disabled": true}}}"#,
    );
    assert_eq!(entry.transport, http("https://h/mcp", &[("K", "s3cr3t")]));
    assert!(!entry.enabled);
    let m = McpServers;
    fails(
        m,
        r#"{"mcpServers": {"w": {"serverUrl": ‸"ws://h/mcp"}}}"#,
        r#"server "w": "serverUrl" must be an http or https URL, not ws:"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"w": {"command": "x", ‸"serverUrl": "http://h"}}}"#,
        r#"server "w": has both "command" and "serverUrl": a server is either a command to start (stdio) or a URL (Streamable HTTP)"#,
    );
    fails(
        m,
        r#"{"mcpServers": {"w": {"serverUrl": "http://h", "type": ‸"sse"}}}"#,
        r#"server "w": "type" "sse" is the HTTP+SSE transport of MCP 2024-11-05, deprecated since 2025-03-26 and not supported: use "http" (Streamable HTTP) if the server offers it"#,
    );
}

#[test]
fn the_file_limits_hold_for_yaml_too() {
    let dir = std::env::temp_dir().join(format!("mcp-config-yaml-limits-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("config.yaml")).unwrap();
    let error = load_with(dir.join("config.yaml"), &ExpandOptions::default()).unwrap_err();
    assert_eq!(
        error.kind,
        ConfigErrorKind::NotAFile {
            what: "the file".into(),
            found: "a directory"
        }
    );
    let big = dir.join("big.yaml");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(mcp_connect::config::MAX_CONFIG_FILE + 1)
        .unwrap();
    let error = load_with(&big, &ExpandOptions::default()).unwrap_err();
    assert!(
        matches!(error.kind, ConfigErrorKind::TooLarge { .. }),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
