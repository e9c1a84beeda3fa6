//! A build without the HTTP transport still reads an HTTP server's config entry, and says which
//! feature it lacks when that server is started; the stdio transport is there.

use mcp_connect::config::{ServerEntry, ServerTransport};
use mcp_connect::{ClientConfig, Error, Launch, ServerSet, ServerSetConfig, ServerSpec};

#[test]
fn an_http_server_fails_to_start_naming_the_missing_feature() {
    let entry = ServerEntry::new(
        "remote",
        ServerTransport::Http {
            url: "https://mcp.example.com/mcp".into(),
            headers: Default::default(),
        },
    );
    let spec = ServerSpec::from_entry(&entry, ClientConfig::default()).expect("enabled");
    assert!(matches!(spec.launch, Launch::Unavailable { transport: "http" }));
    let set = smol::block_on(ServerSet::connect(vec![spec], ServerSetConfig::default()));
    let failures = smol::block_on(set.failures());
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert_eq!(failures[0].0, "remote");
    assert!(
        matches!(failures[0].1, Error::TransportUnavailable { transport: "http" }),
        "{:?}",
        failures[0].1
    );
    assert!(failures[0].1.to_string().contains("`http` feature"));
    assert!(smol::block_on(set.tools()).is_empty());
    smol::block_on(set.close());
}

#[test]
fn a_stdio_server_is_launched_over_stdio() {
    let entry = ServerEntry::new(
        "local",
        ServerTransport::Stdio {
            command: "true".into(),
            args: vec![],
            env: Default::default(),
            cwd: None,
        },
    );
    let spec = ServerSpec::from_entry(&entry, ClientConfig::default()).expect("enabled");
    assert!(matches!(spec.launch, Launch::Stdio(_)));
}
