//! `subscriptions/listen` (2026-07-28) over an HTTP-kind transport, against a scripted in-memory
//! server that acknowledges each listen and lets the test push notifications onto it or drop its
//! stream: list changes and resource updates reach the same callbacks as in the legacy era, a
//! subscription replaces the listen, a dropped stream is listened again, `close` ends it, and a
//! client without callbacks sends no listen at all. And over real HTTP, against the test kit's
//! modern server whose listen streams drop at once: the client listens again, backing off, and
//! the updates keep coming.

use mcp_connect::proto::RequestError;
use mcp_connect::proto::{RequestId, TransmitKind, TransportKind};
use mcp_connect::transport::{BoxFuture, Inbound, Transmit, Transport};
use mcp_connect::{
    Client, ClientConfig, Error, HttpTransport, HttpTransportConfig, ListChangedCallback,
    ResourceUpdatedCallback,
};
use mcp_testkit::http_server::{self, Behaviour};
use serde_json::{json, Value};
use smol::channel::{unbounded, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// One listen as the server saw it: its id (for pushing onto its stream) and its filter.
#[derive(Debug, Clone)]
struct Listen {
    id: RequestId,
    wire: Value,
    filter: Value,
}

#[derive(Default)]
struct Seen {
    listens: Vec<Listen>,
    aborted: Vec<RequestId>,
    methods: Vec<String>,
}

struct ListenServer {
    to_client: Sender<Inbound>,
    from_server: Receiver<Inbound>,
    seen: Arc<Mutex<Seen>>,
    arrived: Arc<event_listener::Event>,
    /// Each listen seen, as it comes (the test waits on it).
    listens: Sender<Listen>,
    /// Whether listens are refused (-32601).
    refuse: bool,
    /// The acknowledged filter, when set; else the one asked for.
    ack: Arc<Mutex<Option<Value>>>,
}

impl ListenServer {
    fn new(refuse: bool) -> (Self, Receiver<Listen>) {
        let (tx, rx) = unbounded();
        let (listens, listened) = unbounded();
        let server = ListenServer {
            to_client: tx,
            from_server: rx,
            seen: Arc::default(),
            arrived: Arc::new(event_listener::Event::new()),
            listens,
            refuse,
            ack: Arc::default(),
        };
        (server, listened)
    }

    /// A handle to push messages to the client.
    fn pusher(&self) -> Pusher {
        Pusher {
            to_client: self.to_client.clone(),
            arrived: self.arrived.clone(),
        }
    }
}

#[derive(Clone)]
struct Pusher {
    to_client: Sender<Inbound>,
    arrived: Arc<event_listener::Event>,
}

impl Pusher {
    fn push(&self, inbound: Inbound) {
        self.to_client.try_send(inbound).unwrap();
        self.arrived.notify(usize::MAX);
    }

    fn message(&self, message: Value) {
        self.push(Inbound::Message(message.to_string().into_bytes()));
    }

    /// A notification on `listen`'s stream.
    fn notify(&self, listen: &Listen, method: &str, mut params: Value) {
        params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": listen.wire});
        self.message(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
}

impl Transport for ListenServer {
    fn kind(&self) -> TransportKind {
        TransportKind::Http
    }

    fn send(&self, message: Transmit) -> Result<(), Error> {
        let id = match message.kind {
            TransmitKind::Request { id, .. } => id,
            TransmitKind::Abort { id } => {
                self.seen.lock().unwrap().aborted.push(id);
                return Ok(());
            }
            _ => return Ok(()),
        };
        let body: Value = serde_json::from_slice(&message.payload).unwrap();
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        self.seen.lock().unwrap().methods.push(method.clone());
        let pusher = self.pusher();
        let answer = |result: Value| {
            pusher.message(json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
        };
        match method.as_str() {
            "server/discover" => answer(json!({"resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {"listChanged": true}, "prompts": {},
                    "resources": {"subscribe": true, "listChanged": true}}})),
            "subscriptions/listen" if self.refuse => pusher.message(json!({"jsonrpc": "2.0",
                "id": body["id"], "error": {"code": -32601, "message": "Method not found"}})),
            "subscriptions/listen" => {
                let listen = Listen {
                    id,
                    wire: body["id"].clone(),
                    filter: body["params"]["notifications"].clone(),
                };
                let agreed = self.ack.lock().unwrap().clone();
                pusher.notify(
                    &listen,
                    "notifications/subscriptions/acknowledged",
                    json!({"notifications": agreed.unwrap_or(listen.filter.clone())}),
                );
                self.seen.lock().unwrap().listens.push(listen.clone());
                let _ = self.listens.try_send(listen);
            }
            "tools/list" => answer(json!({"resultType": "complete", "tools": []})),
            _ => {}
        }
        Ok(())
    }

    fn try_recv(&self) -> Option<Inbound> {
        self.from_server.try_recv().ok()
    }

    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let arrived = self.arrived.listen();
            if self.from_server.is_empty() {
                arrived.await;
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async { Ok(()) })
    }
}

/// A config whose callbacks send what they hear to the returned channels.
fn config() -> (ClientConfig, Receiver<String>, Receiver<String>) {
    let (lists_tx, lists) = unbounded();
    let (updates_tx, updates) = unbounded();
    let config = ClientConfig {
        on_list_changed: Some(ListChangedCallback(Arc::new(move |kind| {
            let _ = lists_tx.try_send(format!("{kind:?}"));
        }))),
        on_resource_updated: Some(ResourceUpdatedCallback(Arc::new(move |uri: &str| {
            let _ = updates_tx.try_send(uri.to_owned());
        }))),
        ..ClientConfig::default()
    };
    (config, lists, updates)
}

#[test]
fn events_arrive_through_the_listen_and_again_after_its_stream_drops() {
    let (server, listened) = ListenServer::new(false);
    let push = server.pusher();
    let seen = server.seen.clone();
    let (config, lists, updates) = config();
    smol::block_on(async {
        let client = Client::with_config(server, config);
        client.initialize().await.unwrap();
        // A list-change callback: the client listens at once, for the lists the server declared
        // `listChanged` for (not prompts).
        let first = listened.recv().await.unwrap();
        assert_eq!(
            first.filter,
            json!({"toolsListChanged": true, "resourcesListChanged": true})
        );
        push.notify(&first, "notifications/tools/list_changed", json!({}));
        assert_eq!(lists.recv().await.unwrap(), "Tools");

        // A subscription replaces the listen; the old one is aborted once the new one went out.
        client.subscribe_resource("file:///a").await.unwrap();
        let second = listened.recv().await.unwrap();
        assert_eq!(second.filter["resourceSubscriptions"], json!(["file:///a"]));
        assert!(seen.lock().unwrap().aborted.contains(&first.id));
        push.notify(
            &second,
            "notifications/resources/updated",
            json!({"uri": "file:///a"}),
        );
        assert_eq!(updates.recv().await.unwrap(), "file:///a");

        // The stream drops without an answer: the client listens again, with the same filter.
        push.push(Inbound::Failed {
            id: second.id,
            error: Error::Closed,
        });
        let third = listened.recv().await.unwrap();
        assert_eq!(third.filter, second.filter);
        push.notify(
            &third,
            "notifications/resources/updated",
            json!({"uri": "file:///a"}),
        );
        assert_eq!(updates.recv().await.unwrap(), "file:///a");
        assert_eq!(client.resources_updated(), 2);
        // Subscribed already, and acknowledged: nothing sent, at once.
        client.subscribe_resource("file:///a").await.unwrap();

        // Unsubscribing replaces it again; closing ends the last one.
        client.unsubscribe_resource("file:///a").await.unwrap();
        let fourth = listened.recv().await.unwrap();
        assert_eq!(fourth.filter.get("resourceSubscriptions"), None);
        client.close().await.unwrap();
        assert!(seen.lock().unwrap().aborted.contains(&fourth.id));
        assert_eq!(client.listens_sent(), 4);
    });
}

#[test]
fn a_graceful_close_is_not_listened_again() {
    let (server, listened) = ListenServer::new(false);
    let push = server.pusher();
    let (config, lists, _updates) = config();
    smol::block_on(async {
        let client = Client::with_config(server, config);
        client.initialize().await.unwrap();
        let first = listened.recv().await.unwrap();
        push.message(
            json!({"jsonrpc": "2.0", "id": first.wire, "result": {"resultType":
            "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": first.wire}}}),
        );
        // A later message is read after the answer: by then the listener decided.
        push.message(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        assert_eq!(lists.recv().await.unwrap(), "Tools");
        assert_eq!(client.listens_sent(), 1);
        assert!(listened.try_recv().is_err());
    });
}

#[test]
fn a_subscription_after_a_graceful_close_listens_again() {
    let (server, listened) = ListenServer::new(false);
    let push = server.pusher();
    let (config, _lists, updates) = config();
    smol::block_on(async {
        let client = Client::with_config(server, config);
        client.initialize().await.unwrap();
        let first = listened.recv().await.unwrap();
        client.subscribe_resource("file:///a").await.unwrap();
        let second = listened.recv().await.unwrap();
        let close = |l: &Listen| {
            json!({"jsonrpc": "2.0", "id": l.wire, "result": {"resultType": "complete",
                "_meta": {"io.modelcontextprotocol/subscriptionId": l.wire}}})
        };
        push.message(close(&second));
        // Read after the close (answered in order): by then the listener knows.
        client.list_tools().await.unwrap();
        // The same URI again: the server closed the listen, so a new one asks for it.
        client.subscribe_resource("file:///a").await.unwrap();
        let third = listened.recv().await.unwrap();
        assert_eq!(third.filter, second.filter);
        push.notify(
            &third,
            "notifications/resources/updated",
            json!({"uri": "file:///a"}),
        );
        assert_eq!(updates.recv().await.unwrap(), "file:///a");
        // Closed again; a new URI: a listen with both.
        push.message(close(&third));
        client.list_tools().await.unwrap();
        client.subscribe_resource("file:///b").await.unwrap();
        let fourth = listened.recv().await.unwrap();
        assert_eq!(
            fourth.filter["resourceSubscriptions"],
            json!(["file:///a", "file:///b"])
        );
        assert_eq!(client.listens_sent(), 4);
        assert_ne!(first.id, fourth.id);
        client.close().await.unwrap();
    });
}

#[test]
fn updates_of_what_was_not_subscribed_or_not_acknowledged_are_dropped() {
    let (server, listened) = ListenServer::new(false);
    let push = server.pusher();
    let ack = server.ack.clone();
    let (config, _lists, updates) = config();
    smol::block_on(async {
        let client = Client::with_config(server, config);
        client.initialize().await.unwrap();
        let first = listened.recv().await.unwrap();
        // An update on the list listen, before any subscription: dropped.
        push.notify(
            &first,
            "notifications/resources/updated",
            json!({"uri": "file:///a"}),
        );
        client.list_tools().await.unwrap();
        assert_eq!(client.resource_updates_dropped(), 1);
        client.subscribe_resource("file:///a").await.unwrap();
        let second = listened.recv().await.unwrap();
        // The server agrees to a, and names c it was not asked for; then b is asked for, and
        // the server leaves it out (narrowing) and names c again (widening).
        *ack.lock().unwrap() = Some(json!({"resourceSubscriptions": ["file:///a", "file:///c"]}));
        let error = client.subscribe_resource("file:///b").await.unwrap_err();
        assert!(
            matches!(&error, Error::Request(RequestError::SubscriptionRefused { uri }) if uri == "file:///b"),
            "{error:?}"
        );
        let third = listened.recv().await.unwrap();
        assert_eq!(
            third.filter["resourceSubscriptions"],
            json!(["file:///a", "file:///b"])
        );
        for uri in ["file:///b", "file:///c", "file:///ab", "file:///a/part"] {
            push.notify(
                &third,
                "notifications/resources/updated",
                json!({ "uri": uri }),
            );
        }
        // Named by no listen: taken, and still filtered.
        push.message(
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": "file:///d"}}),
        );
        push.message(
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": "file:///a"}}),
        );
        assert_eq!(updates.recv().await.unwrap(), "file:///a/part");
        assert_eq!(updates.recv().await.unwrap(), "file:///a");
        assert_eq!(client.resources_updated(), 2);
        assert_eq!(client.resource_updates_dropped(), 5);
        assert!(updates.try_recv().is_err());
        drop(second);
        client.close().await.unwrap();
    });
}

#[test]
fn a_refused_listen_fails_the_subscription_and_is_not_sent_again() {
    let (server, _listened) = ListenServer::new(true);
    let seen = server.seen.clone();
    let (config, _lists, _updates) = config();
    smol::block_on(async {
        let client = Client::with_config(server, config);
        client.initialize().await.unwrap();
        let error = client.subscribe_resource("file:///a").await.unwrap_err();
        assert!(
            matches!(error, Error::Protocol(ref e) if e.code == -32601),
            "{error:?}"
        );
        client.list_tools().await.unwrap();
    });
    let listens = seen
        .lock()
        .unwrap()
        .methods
        .iter()
        .filter(|m| *m == "subscriptions/listen")
        .count();
    assert_eq!(
        listens, 2,
        "the list listen, then the one with the URI; no retries"
    );
}

#[test]
fn a_client_without_callbacks_or_subscriptions_sends_no_listen() {
    let (server, _listened) = ListenServer::new(false);
    let seen = server.seen.clone();
    smol::block_on(async {
        let client = Client::new(server);
        client.initialize().await.unwrap();
        client.list_tools().await.unwrap();
        assert_eq!(client.listens_sent(), 0);
    });
    let methods = seen.lock().unwrap().methods.clone();
    assert_eq!(methods, ["server/discover", "tools/list"]);
}

#[test]
fn over_http_a_stream_that_drops_is_listened_again_with_backoff() {
    let server = http_server::start(Behaviour {
        modern: true,
        listen_drops: true,
        ..Behaviour::default()
    })
    .unwrap();
    let (config, _lists, updates) = config();
    smol::block_on(async {
        let transport = HttpTransport::new(HttpTransportConfig::new(server.url.as_str())).unwrap();
        let client = Client::with_config(transport, config);
        client.initialize().await.unwrap();
        client.subscribe_resource("file:///a").await.unwrap();
        // Each listen's stream carries one update, then drops: three updates, three listens
        // (the second and third after 250 ms and 500 ms).
        for _ in 0..3 {
            assert_eq!(updates.recv().await.unwrap(), "file:///a");
        }
        assert!(client.listens_sent() >= 3, "{}", client.listens_sent());
        client.close().await.unwrap();
    });
    let listens: Vec<_> = server
        .log()
        .into_iter()
        .filter(|l| l.rpc_method().as_deref() == Some("subscriptions/listen"))
        .collect();
    // Backed off: without it a stream that drops at once would be listened again hundreds of
    // times in this while (the fourth waits a second, the fifth two). The session may open a
    // listen for list changes alone once ready, before the subscription replaces it (whether it
    // does depends on who wins that race): one more.
    assert!((3..=6).contains(&listens.len()), "{listens:?}");
    let mut with_uri = 0;
    for listen in &listens {
        assert_eq!(listen.header("mcp-method"), Some("subscriptions/listen"));
        let body: Value = serde_json::from_str(&listen.body).unwrap();
        match &body["params"]["notifications"]["resourceSubscriptions"] {
            Value::Null => {}
            uris => {
                assert_eq!(uris, &json!(["file:///a"]));
                with_uri += 1;
            }
        }
    }
    assert!(with_uri >= 3, "{listens:?}");
    assert!(listens.len() - with_uri <= 1, "{listens:?}");
}

/// A set's `on_tools_changed` gives each server a list-change callback; a modern server that
/// declares no `listChanged` (tools only, `{"tools": {}}`) gets no listen, since one would ask
/// for nothing; one that declares `tools.listChanged` gets one.
#[test]
fn a_set_sends_no_listen_to_a_server_that_declares_no_list_changes() {
    use mcp_connect::{Launch, ServerSet, ServerSetConfig, ServerSpec};
    let plain = http_server::start(Behaviour {
        modern: true,
        ..Behaviour::default()
    })
    .unwrap();
    let changing = http_server::start(Behaviour {
        modern: true,
        listen_drops: true,
        ..Behaviour::default()
    })
    .unwrap();
    let listens = |server: &http_server::Server| {
        server
            .log()
            .into_iter()
            .filter(|l| l.rpc_method().as_deref() == Some("subscriptions/listen"))
            .count()
    };
    let spec = |name: &str, url: &str| {
        ServerSpec::new(name, Launch::Http(Box::new(HttpTransportConfig::new(url))))
    };
    smol::block_on(async {
        let config = ServerSetConfig {
            on_tools_changed: Some(Arc::new(|_: &str| {})),
            ..ServerSetConfig::default()
        };
        let set = ServerSet::connect(
            vec![
                spec("plain", plain.url.as_str()),
                spec("changing", changing.url.as_str()),
            ],
            config,
        )
        .await;
        assert!(set.failures().await.is_empty());
        set.call("plain__echo", json!({"text": "x"})).await.unwrap();
        assert!(mcp_testkit::wait_until(
            std::time::Duration::from_secs(10),
            || listens(&changing) >= 1
        ));
        set.close().await;
    });
    assert_eq!(listens(&plain), 0, "{:?}", plain.log());
    assert!(plain
        .log()
        .iter()
        .any(|l| l.rpc_method().as_deref() == Some("tools/list")));
}
