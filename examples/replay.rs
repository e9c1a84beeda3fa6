//! Replaying a recorded session in a test: no server, no process, the same answers every run.
//!
//! Record once against the real server, with the command line:
//!
//! ```text
//! mcp-client --record tests/everything.mcplog --call echo --args '{"message":"hello"}' \
//!     -- npx -y @modelcontextprotocol/server-everything stdio
//! ```
//!
//! (or from code: [`mcp_connect::recording::Recording`] around any transport), check the file in,
//! and replay it in a test with [`ReplayTransport`], as the tests at the bottom of this file do.
//! A client that sends something the recording did not expect fails with
//! [`mcp_connect::Error::Replay`], naming the recording's line.
//!
//! `cargo run --example replay [FILE]` replays FILE (by default the server-everything session
//! checked in under drivers/tests/recordings/) and prints what the client saw;
//! `cargo test --example replay` runs the tests.

use mcp_connect::recording::ReplayTransport;
use mcp_connect::{Client, Error};
use serde_json::json;
use std::path::PathBuf;

/// The server-everything session this repository checks in.
fn everything_recording() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("drivers/tests/recordings/everything.mcplog")
}

/// What the application under test does: opens the session, lists the tools, calls `echo`.
async fn echo_hello(client: &Client) -> Result<String, Error> {
    client.initialize().await?;
    client.list_tools().await?;
    let result = client
        .call_tool("echo", json!({"message": "hello"}))
        .await?;
    Ok(result.text())
}

fn main() {
    let path = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(everything_recording);
    let outcome = smol::block_on(async {
        let client = Client::new(ReplayTransport::from_file(&path)?);
        let text = echo_hello(&client).await;
        client.close().await?;
        text
    });
    match outcome {
        Ok(text) => println!("{text}"),
        Err(e) => {
            eprintln!("replay of {}: {}", path.display(), e.chain());
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_connect::recording::ReplayError;

    #[test]
    fn the_recorded_server_answers() {
        smol::block_on(async {
            let client = Client::new(ReplayTransport::from_file(everything_recording()).unwrap());
            assert_eq!(echo_hello(&client).await.unwrap(), "Echo: hello");
            client.close().await.unwrap();
        });
    }

    #[test]
    fn a_call_the_recording_does_not_have_fails_naming_its_line() {
        smol::block_on(async {
            let client = Client::new(ReplayTransport::from_file(everything_recording()).unwrap());
            client.initialize().await.unwrap();
            client.list_tools().await.unwrap();
            let err = client
                .call_tool("echo", json!({"message": "goodbye"}))
                .await
                .unwrap_err();
            let Error::Replay(ReplayError::Mismatch { line, sent, .. }) = err else {
                panic!("{err:?}");
            };
            assert!(line > 1);
            assert!(sent.contains("goodbye"), "{sent}");
        });
    }
}
