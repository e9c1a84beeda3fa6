//! The client the official MCP conformance suite (`@modelcontextprotocol/conformance`) drives: it is
//! run as `conformance URL` with `MCP_CONFORMANCE_SCENARIO` set, performs that scenario over
//! Streamable HTTP, and exits 0 when everything it did succeeded.
//!
//! The runner also sets `MCP_CONFORMANCE_PROTOCOL_VERSION` (0.2.0 on; absent before, which means
//! 2025-11-25) and, for some scenarios, `MCP_CONFORMANCE_CONTEXT` (JSON). The client always opens
//! in the default era, `Auto` (`server/discover` first, `initialize` if the server is legacy): every
//! scenario server below settles it (see drivers/tests/peers/CONFORMANCE-2026.md), and a dual-era client
//! must not need to be told. When the runner asks for 2026-07-28 the client checks that the
//! opening did settle on the modern era, and when it asks for a 2025 version, on the legacy one.
//!
//! Scenarios (all: open, list tools, then):
//! - `initialize`, `request-metadata`, `json-schema-ref-no-deref`: nothing more (the last must
//!   never fetch a network `$ref`, and this client never resolves any);
//! - `tools_call`: call `add_numbers {"a":2,"b":3}`;
//! - `sse-retry`: call the first tool with `{}` (the transport resumes the cut stream);
//! - `http-standard-headers`: call every tool, list and read every resource, list and get every
//!   prompt (raw requests: the core adds `Mcp-Method` and `Mcp-Name`);
//! - `http-custom-headers`: call each of the context's `toolCalls` with its arguments verbatim
//!   (the core mirrors the `x-mcp-header` arguments into `Mcp-Param-*`);
//! - `http-invalid-tool-headers`: call every tool the client kept (it leaves out the invalid ones
//!   itself, with a warning each: this example filters nothing), then check that none it kept is
//!   one it warned about;
//! - `json-schema-2020-12-preservation`: call `json_schema_echo {"schema": <the inputSchema of
//!   json_schema_2020_12_tool as received>}`;
//! - `elicitation-sep1034-client-defaults` (2025-11-25): call `test_client_elicitation_defaults`;
//!   the server's `elicitation/create` (sent on the standalone GET stream) is accepted with no
//!   values, and the core fills every field from the schema's defaults;
//! - `sep-2322-client-request-state` (2026-07-28): call `test_mrtr_echo_state` and
//!   `test_mrtr_unrelated` at once (the unrelated call must carry no `inputResponses` nor
//!   `requestState` while the other is between its rounds), then `test_mrtr_no_state` and
//!   `test_mrtr_no_result_type`; the input requests of the `input_required` rounds are answered by
//!   the same elicitation handler, and the core sends the call again with a new id, the
//!   `inputResponses` and the exact `requestState`.
//!
//! - `sep-2640-client-no-prefetch` (the skills extension, run with `--force`): list the skills
//!   and print their index; no skill is loaded, so no skill file is read;
//! - `sep-2640-client-verify-digest`, `-verify-size`, `-verify-frontmatter`: list the skills and
//!   load each (its `SKILL.md` read and verified), then read each loaded skill's files (each
//!   verified). Each scenario serves a `SKILL.md` that lies (its digest, its size, its
//!   frontmatter): the client refuses the skill, reads none of its files, and the flow fails with
//!   the refusal.
//!
//! Only the two elicitation scenarios register a handler (an elicitation handler that accepts, see
//! [`accepting_user`]): the others declare no client capability.
//!
//! Any other scenario: call the first tool with `{}`.

use mcp_connect::proto::oauth::{AuthorizationRequest, IdentityProvider, PreRegistered, Secret};
use mcp_connect::proto::{Era, Reply, Warning};
use mcp_connect::{
    Authorize, Client, ClientConfig, ElicitAnswer, Elicitation, HandlerError, Handlers,
    HttpTransport, HttpTransportConfig, OAuthConfig, Request, Tool,
};
use serde_json::{json, Map, Value};
use std::process::ExitCode;

/// The protocol version the runner assumes when it does not say (0.1.x never does).
const DEFAULT_PROTOCOL_VERSION: &str = "2025-11-25";

/// What the client prints (after `conformance client (<scenario>): `) when the whole flow
/// succeeded.
const DONE: &str = "flow completed";

/// The tool whose schema `json-schema-2020-12-preservation` wants echoed, and the echo tool.
const FOCAL_TOOL: &str = "json_schema_2020_12_tool";
const ECHO_TOOL: &str = "json_schema_echo";

/// The scenarios whose servers ask the client for input, and so get an elicitation handler.
const ELICITING: [&str; 2] = [
    "elicitation-sep1034-client-defaults",
    "sep-2322-client-request-state",
];

fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance URL   (with MCP_CONFORMANCE_SCENARIO set)");
        return ExitCode::from(1);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .unwrap_or_else(|_| DEFAULT_PROTOCOL_VERSION.to_owned());
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT").ok();
    match smol::block_on(run(&url, &scenario, &version, context.as_deref())) {
        Ok(()) => {
            // Read by tests/conformance.rs: a runner that ignores the exit code
            // (`http-invalid-tool-headers`) must not hide a failed flow.
            eprintln!("conformance client ({scenario}): {DONE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance client ({scenario}): {e}");
            ExitCode::from(1)
        }
    }
}

async fn run(
    url: &str,
    scenario: &str,
    version: &str,
    context: Option<&str>,
) -> Result<(), String> {
    let mut http = HttpTransportConfig::new(url);
    if scenario.starts_with("auth/") {
        http = http.oauth(oauth_config(url, scenario, context).await?);
    }
    let transport = HttpTransport::new(http).map_err(s)?;
    let handlers = if ELICITING.contains(&scenario) {
        Handlers::new().elicitation(accepting_user)
    } else {
        Handlers::new()
    };
    let config = ClientConfig {
        handlers,
        ..ClientConfig::default()
    };
    let client = Client::with_config(transport, config);
    let outcome = run_flow(&client, scenario, version, context).await;
    // Closed whatever happened; the flow's error comes first.
    let closed = client.close().await.map_err(s);
    outcome.and(closed)
}

/// The OAuth settings of an `auth/*` scenario: pre-registered credentials from the context
/// (`client_id`, `client_secret` or `private_key_pem`), the client credentials grant for its extension scenarios,
/// this client's metadata document URL for CIMD, and a headless person: the authorization URL
/// is fetched without following redirects, and its `Location` is the redirect back (the suite's
/// authorization server answers at once).
async fn oauth_config(
    url: &str,
    scenario: &str,
    context: Option<&str>,
) -> Result<OAuthConfig, String> {
    let context: Value = context
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("MCP_CONFORMANCE_CONTEXT: {e}"))?
        .unwrap_or(Value::Null);
    let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut pre = text("client_id").map(|client_id| PreRegistered {
        client_id,
        client_secret: text("client_secret").map(Secret::new),
        // `auth/client-credentials-jwt`: a P-256 key for private_key_jwt (ES256).
        private_key: text("private_key_pem").map(Secret::new),
        auth_method: None,
        issuer: text("issuer"),
    });
    // A secret or key is bound to the authorization server that issued it (the client refuses
    // one without). The context names it for the newer scenarios; for the others, the
    // scenario's own authorization server issued it, and the harness looks it up the way a
    // person configuring the client would: in the scenario server's metadata.
    if let Some(pre) = pre
        .as_mut()
        .filter(|p| p.is_confidential() && p.issuer.is_none())
    {
        pre.issuer = Some(scenario_issuer(url).await?);
    }
    let mut config = match (scenario, pre) {
        // Workload identity federation: the platform's JWT (the context's valid one) is the
        // grant; the client is registered by id alone.
        ("auth/wif-jwt-bearer", Some(pre)) => {
            OAuthConfig::jwt_bearer(pre, text("valid_jwt").map(Secret::new))
        }
        // Enterprise-managed authorization: the ID token is exchanged at the identity provider
        // for an ID-JAG, the JWT-bearer grant at the authorization server.
        ("auth/enterprise-managed-authorization", Some(pre)) => {
            let need = |k: &str| text(k).ok_or(format!("no {k} in MCP_CONFORMANCE_CONTEXT"));
            let idp = IdentityProvider {
                token_endpoint: need("idp_token_endpoint")?,
                client_id: need("idp_client_id")?,
                client_secret: None,
                id_token: Secret::new(need("idp_id_token")?),
            };
            OAuthConfig::enterprise_managed(pre, idp)
        }
        (s, Some(pre)) if s.starts_with("auth/client-credentials") => {
            OAuthConfig::client_credentials(pre)
        }
        (s, None)
            if s.starts_with("auth/client-credentials")
                || s == "auth/wif-jwt-bearer"
                || s == "auth/enterprise-managed-authorization" =>
        {
            return Err("no client_id in MCP_CONFORMANCE_CONTEXT".into())
        }
        (_, pre) => {
            let mut config = OAuthConfig::new(Authorize::callback(follow_authorization));
            config.options.pre_registered = pre;
            config
        }
    };
    config.options.client_metadata_url = Some(CLIENT_METADATA_URL.to_owned());
    Ok(config)
}

/// The first authorization server the scenario's protected resource metadata names (at its
/// well-known URIs).
async fn scenario_issuer(url: &str) -> Result<String, String> {
    use isahc::AsyncReadResponseExt;
    for prm in mcp_connect::proto::oauth::resource_metadata_urls(url, None) {
        let Ok(mut response) = isahc::get_async(prm.as_str()).await else {
            continue;
        };
        let Ok(body) = response.bytes().await else {
            continue;
        };
        let Ok(doc) = serde_json::from_slice::<Value>(&body) else {
            continue;
        };
        if let Some(issuer) = doc["authorization_servers"][0].as_str() {
            return Ok(issuer.to_owned());
        }
    }
    Err(format!("no protected resource metadata for {url}"))
}

/// The client metadata document URL this client presents where CIMD is supported.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Plays the person: GETs the authorization URL and returns where it redirects.
async fn follow_authorization(request: AuthorizationRequest) -> Result<String, String> {
    use isahc::config::{Configurable, RedirectPolicy};
    let http = isahc::Request::get(request.url.as_str())
        .redirect_policy(RedirectPolicy::None)
        .body(())
        .map_err(s)?;
    let response = isahc::send_async(http).await.map_err(s)?;
    let location = response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            format!(
                "the authorization endpoint answered {} with no redirect",
                response.status()
            )
        })?;
    Ok(location.to_owned())
}

/// An error and its causes, on one line.
fn s(e: impl std::error::Error) -> String {
    mcp_connect::chain(&e)
}

async fn run_flow(
    client: &Client,
    scenario: &str,
    version: &str,
    context: Option<&str>,
) -> Result<(), String> {
    let init = client.initialize().await.map_err(s)?;
    let era = client.era();
    eprintln!(
        "opened: {:?} {} (protocol {}, era {era:?}, runner's version {version})",
        init.server_info.name, init.server_info.version, init.protocol_version
    );
    let expected = if version.starts_with("2025-") {
        Era::Legacy
    } else {
        Era::Modern
    };
    if era != Some(expected) {
        return Err(format!(
            "the runner speaks {version} but the opening settled on {era:?}"
        ));
    }
    let tools = client.list_tools().await.map_err(s)?;
    eprintln!("tools: {:?}", names(&tools));
    match scenario {
        "initialize" | "request-metadata" => Ok(()),
        "json-schema-ref-no-deref" => {
            // The schema is kept as received: its network `$ref` is there, unresolved.
            for tool in &tools {
                eprintln!("{} inputSchema: {}", tool.name, schema_text(tool));
            }
            Ok(())
        }
        "tools_call" => call(client, "add_numbers", json!({"a": 2, "b": 3}))
            .await
            .map(drop),
        "elicitation-sep1034-client-defaults" => {
            let text = call(client, "test_client_elicitation_defaults", json!({})).await?;
            // The server echoes what it received: the defaults, filled in by the core.
            expect(&text, r#""name":"John Doe""#)
        }
        "sep-2322-client-request-state" => request_state(client).await,
        "sep-2640-client-no-prefetch" => {
            let skills = client.list_skills().await.map_err(s)?;
            eprint!(
                "{}",
                mcp_connect::proto::skills::index("conformance", &skills)
            );
            Ok(())
        }
        "sep-2640-client-verify-digest"
        | "sep-2640-client-verify-size"
        | "sep-2640-client-verify-frontmatter" => load_skills(client).await,
        "http-standard-headers" => standard_headers(client, &tools).await,
        "http-custom-headers" => custom_headers(client, context).await,
        "http-invalid-tool-headers" => invalid_tool_headers(client, &tools).await,
        "json-schema-2020-12-preservation" => {
            let focal = tools
                .iter()
                .find(|t| t.name == FOCAL_TOOL)
                .ok_or_else(|| format!("no tool {FOCAL_TOOL} listed"))?;
            let schema: Value = serde_json::from_str(schema_text(focal)).map_err(s)?;
            call(client, ECHO_TOOL, json!({ "schema": schema }))
                .await
                .map(drop)
        }
        _ => match tools.first() {
            Some(tool) => call(client, &tool.name, json!({})).await.map(drop),
            None => Ok(()),
        },
    }
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// A tool's `inputSchema` as the server sent it (`{}` when it sent none).
fn schema_text(tool: &Tool) -> &str {
    tool.input_schema.as_deref().map_or("{}", |r| r.get())
}

/// Calls a tool; a tool error fails the flow. Returns the result's text.
async fn call(client: &Client, name: &str, arguments: Value) -> Result<String, String> {
    let result = client
        .call_tool(name, arguments)
        .await
        .map_err(|e| format!("{name}: {}", s(e)))?;
    let text = result.text();
    eprintln!("{name} -> {text}");
    if result.is_error {
        return Err(format!("tool {name} reported an error: {text}"));
    }
    Ok(text)
}

/// Fails the flow unless `text` contains `wanted`.
fn expect(text: &str, wanted: &str) -> Result<(), String> {
    if text.contains(wanted) {
        Ok(())
    } else {
        Err(format!("expected {wanted:?} in the result, got {text:?}"))
    }
}

/// The user of these scenarios: accepts every form, answering `true` to each boolean field that
/// has no default, and leaving every field that has one to the core (which fills in the
/// schema's defaults). A URL elicitation is declined (none is declared).
async fn accepting_user(asked: Elicitation) -> Result<ElicitAnswer, HandlerError> {
    let Elicitation::Form { message, schema } = asked else {
        return Ok(ElicitAnswer::Decline);
    };
    eprintln!("elicitation: {message}");
    let mut content = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in properties.into_iter().flatten() {
        if field.get("default").is_none() && field.get("type") == Some(&json!("boolean")) {
            content.insert(name.clone(), json!(true));
        }
    }
    Ok(ElicitAnswer::Accept(content))
}

/// `sep-2322-client-request-state`: every multi round-trip case of the scenario.
async fn request_state(client: &Client) -> Result<(), String> {
    // An unrelated call made while the other waits between its rounds carries none of its
    // round's fields.
    let (echoed, unrelated) = smol::future::zip(
        call(client, "test_mrtr_echo_state", json!({})),
        call(client, "test_mrtr_unrelated", json!({})),
    )
    .await;
    expect(&echoed?, "echo-state-ok")?;
    unrelated?;
    call(client, "test_mrtr_no_state", json!({})).await?;
    // A result without `resultType` is complete.
    let text = call(client, "test_mrtr_no_result_type", json!({})).await?;
    expect(&text, "no-result-type-test-ok")
}

/// Loads every listed skill, then reads every file of each: the first refusal ends the flow.
async fn load_skills(client: &Client) -> Result<(), String> {
    for entry in client.list_skills().await.map_err(s)? {
        let skill = client.load_skill(&entry).await.map_err(s)?;
        eprintln!("loaded {} ({} bytes)", entry.uri, skill.text.len());
        for file in skill.files() {
            let bytes = client.read_skill_file(&skill, file).await.map_err(s)?;
            eprintln!("read {file} ({} bytes)", bytes.len());
        }
    }
    Ok(())
}

/// Any request, its result as JSON.
async fn raw(client: &Client, method: &str, params: Value) -> Result<Value, String> {
    match client
        .request(Request::new(method, Some(params)))
        .await
        .map_err(|e| format!("{method}: {}", s(e)))?
    {
        Reply::Raw(v) => Ok(v),
        other => Err(format!("{method}: unexpected reply {other:?}")),
    }
}

/// The strings at `list[*].field` of a list result.
fn field_of_each<'v>(result: &'v Value, list: &str, field: &str) -> Vec<&'v str> {
    result
        .get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| item.get(field).and_then(Value::as_str))
        .collect()
}

/// `http-standard-headers`: one request of each method whose headers the scenario checks.
async fn standard_headers(client: &Client, tools: &[Tool]) -> Result<(), String> {
    for tool in tools {
        call(client, &tool.name, json!({})).await?;
    }
    let resources = raw(client, "resources/list", json!({})).await?;
    for uri in field_of_each(&resources, "resources", "uri") {
        // The URI goes as the server wrote it (percent escapes included), in body and Mcp-Name.
        raw(client, "resources/read", json!({ "uri": uri })).await?;
        eprintln!("read {uri}");
    }
    let prompts = raw(client, "prompts/list", json!({})).await?;
    for name in field_of_each(&prompts, "prompts", "name") {
        raw(client, "prompts/get", json!({ "name": name })).await?;
        eprintln!("got prompt {name}");
    }
    Ok(())
}

/// `http-custom-headers`: the context's `toolCalls`, each with its arguments verbatim.
async fn custom_headers(client: &Client, context: Option<&str>) -> Result<(), String> {
    let context = context.ok_or("MCP_CONFORMANCE_CONTEXT is not set")?;
    let context: Value =
        serde_json::from_str(context).map_err(|e| format!("MCP_CONFORMANCE_CONTEXT: {e}"))?;
    let calls = context
        .get("toolCalls")
        .and_then(Value::as_array)
        .filter(|calls| !calls.is_empty())
        .ok_or("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
    for entry in calls {
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("a toolCalls entry without a name: {entry}"))?;
        let arguments = entry.get("arguments").cloned().unwrap_or(json!({}));
        call(client, name, arguments).await?;
    }
    Ok(())
}

/// `http-invalid-tool-headers`: calls every tool the client kept, then checks that the client
/// left out the tools it warned about, and only those.
async fn invalid_tool_headers(client: &Client, tools: &[Tool]) -> Result<(), String> {
    for tool in tools {
        let arguments = match tool.name.as_str() {
            "valid_tool" => json!({"region": "us-west1"}),
            _ => plausible_arguments(tool),
        };
        call(client, &tool.name, arguments).await?;
    }
    let rejected: Vec<String> = client
        .recent_warnings()
        .into_iter()
        .filter_map(|w| match w {
            Warning::ToolRejected { tool, reason } => {
                eprintln!("left out {tool}: {reason}");
                Some(tool)
            }
            _ => None,
        })
        .collect();
    if rejected.is_empty() {
        return Err("the client left out no tool".into());
    }
    if let Some(kept) = tools.iter().find(|t| rejected.contains(&t.name)) {
        return Err(format!("tool {} was both rejected and listed", kept.name));
    }
    Ok(())
}

/// Arguments for a tool nobody described: a sample value for each required property, by its
/// declared type.
fn plausible_arguments(tool: &Tool) -> Value {
    let schema: Value = serde_json::from_str(schema_text(tool)).unwrap_or(Value::Null);
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    let mut arguments = Map::new();
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let kind = properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let value = match kind {
            Some("integer") | Some("number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            Some("null") => Value::Null,
            _ => json!("sample"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
