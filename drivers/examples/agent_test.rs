//! Testing an agent's tool use against a mock MCP server (feature `mock`): no process, no
//! network. `cargo run -p mcp-connect --example agent_test --features mock`
//!
//! The "agent" is a function that reads a question, picks one of the server's tools and its
//! arguments (where a model would), calls it through the bridged tools an agent framework
//! registers, and retries once when the tool reports an error the model could correct. The
//! test checks what it did: which tool it called, with which arguments, and how it dealt with
//! a failing tool — all from the mock's record.

use mcp_connect::mock::{Fault, MockServer};
use mcp_connect::{as_tools, AgentTool, ClientConfig, ToolError};
use serde_json::{json, Value};

/// The agent under test: picks a tool for `question`, calls it, retries once on a tool error
/// (as a model would, after reading it), and returns the text it got.
async fn agent(tools: &[impl AgentTool], question: &str) -> Result<String, ToolError> {
    let (tool, arguments) = if let Some(city) = question.strip_prefix("weather in ") {
        ("get_weather", json!({"city": city}))
    } else {
        ("search", json!({"query": question, "limit": 3}))
    };
    let tool = tools
        .iter()
        .find(|t| t.name() == tool)
        .expect("the server has the tool");
    match tool.call(arguments.clone()).await {
        Err(ToolError::Retry(why)) => {
            println!("agent: {} said {why:?}; trying again", tool.name());
            tool.call(arguments).await
        }
        outcome => outcome,
    }
}

fn main() -> Result<(), mcp_connect::Error> {
    let mock = MockServer::builder()
        .tool_def(
            json!({"name": "get_weather", "description": "Weather for a city.",
                   "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                                   "required": ["city"]}}),
            |args: Value| format!("sunny in {}", args["city"].as_str().unwrap_or("?")),
        )
        .tool(
            "search",
            json!({"type": "object"}),
            |args: Value| json!({"hits": [format!("a page about {}", args["query"])]}),
        )
        // The weather service is down the first time it is asked.
        .on_call(
            "get_weather",
            1,
            Fault::is_error("weather service unavailable"),
        )
        .build();

    smol::block_on(async {
        let client = mock.connect(ClientConfig::default()).await?;
        let tools = as_tools(&client).await?;

        let answer = agent(&tools, "weather in Lisbon").await;
        assert_eq!(answer.unwrap(), "sunny in Lisbon");
        let answer = agent(&tools, "rust sans-io").await.unwrap();
        assert!(answer.contains("a page about"), "{answer}");

        // What the agent did, in order: the failed weather call, its retry, the search.
        let calls: Vec<(String, Value)> = mock
            .calls()
            .into_iter()
            .map(|c| (c.tool, c.arguments))
            .collect();
        assert_eq!(
            calls,
            [
                ("get_weather".to_owned(), json!({"city": "Lisbon"})),
                ("get_weather".to_owned(), json!({"city": "Lisbon"})),
                (
                    "search".to_owned(),
                    json!({"query": "rust sans-io", "limit": 3})
                ),
            ]
        );
        println!("agent_test: the agent made the three calls expected, in order");
        client.close().await
    })
}
