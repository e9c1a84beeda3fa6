//! A build with the HTTP transport and without OAuth talks to a server that needs no
//! authorization, and a server that asks for it (`401`) fails the connection with an error that
//! names the missing feature.

use mcp_connect::{connect_http, ClientConfig, Error, HttpTransportConfig};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

/// A Streamable HTTP server on 127.0.0.1 (one request a connection) answering each request with
/// `answer(method, body)`: a status, extra header lines and a body. Gives its URL.
fn serve(answer: fn(&str, &Value) -> (u16, &'static str, String)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || respond(stream, answer));
        }
    });
    url
}

fn respond(stream: TcpStream, answer: fn(&str, &Value) -> (u16, &'static str, String)) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let method = request_line.split(' ').next().unwrap_or("").to_owned();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, headers, text) = answer(&method, &body);
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.flush();
}

#[test]
fn a_server_that_needs_no_authorization_is_used() {
    let url = serve(|method, body| {
        let json = "Content-Type: application/json\r\n";
        let id = body["id"].clone();
        match (method, body["method"].as_str()) {
            ("POST", Some("initialize")) => {
                let result = json!({
                    "protocolVersion": body["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "plain", "version": "1"},
                });
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
                (200, json, answer.to_string())
            }
            ("POST", Some("tools/list")) => {
                let tool = json!({"name": "echo", "inputSchema": {"type": "object"}});
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [tool]}});
                (200, json, answer.to_string())
            }
            // Notifications and responses.
            ("POST", _) if id.is_null() => (202, "", String::new()),
            // Anything else (the modern era's probe) is a method this server does not have.
            ("POST", _) => {
                let error = json!({"code": -32601, "message": "method not found"});
                let answer = json!({"jsonrpc": "2.0", "id": id, "error": error});
                (200, json, answer.to_string())
            }
            // No standalone stream; a DELETE is welcome.
            ("GET", _) => (405, "", String::new()),
            _ => (200, "", String::new()),
        }
    });
    smol::block_on(async {
        let client = connect_http(HttpTransportConfig::new(url), ClientConfig::default())
            .await
            .expect("connected");
        let tools = client.list_tools().await.expect("listed");
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "echo");
        client.close().await.unwrap();
    });
}

#[test]
fn a_401_fails_naming_the_oauth_feature() {
    let url = serve(|_, _| {
        let challenge = "WWW-Authenticate: Bearer\r\n";
        (401, challenge, String::new())
    });
    let error = smol::block_on(connect_http(
        HttpTransportConfig::new(&url),
        ClientConfig::default(),
    ))
    .err()
    .expect("refused");
    let Error::OAuthUnavailable { url: named } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(named, &url);
    assert!(error.to_string().contains("`oauth` feature"), "{error}");
}
