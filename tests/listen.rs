//! `subscriptions/listen` in the session (2026-07-28, over stdio): the listener sends the listen
//! with the filter built from what is wanted and declared, with no timeout; the
//! acknowledgement, list changes and resource updates on its stream become the legacy era's
//! events; a new subscription replaces the listen and cancels the old one
//! (`notifications/cancelled` on stdio); a dropped listen is sent again only after its backoff,
//! a closed one not at all; nothing is sent in the legacy era. Fake time, no I/O.

use mcp_proto::subscriptions::{End, Listener, RELISTEN_FIRST};
use mcp_proto::{Config, EraChoice, Event, ListKind, RequestId, Session};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CAPS: &str = r#"{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true,"listChanged":true}}"#;

fn sent(s: &mut Session) -> Vec<Value> {
    std::iter::from_fn(|| s.poll_transmit())
        .map(|t| serde_json::from_slice(&t.payload).expect("we send JSON"))
        .collect()
}

fn events(s: &mut Session) -> Vec<Event> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn line(s: &mut Session, message: Value, now: Instant) {
    s.handle_bytes(format!("{message}\n").as_bytes(), now);
}

fn session(era: EraChoice) -> (Session, Instant) {
    let now = Instant::now();
    let mut s = Session::new(Config {
        era,
        ..Config::default()
    });
    s.initialize(now).unwrap();
    let out = sent(&mut s);
    let result = match era {
        EraChoice::Modern => format!(
            r#"{{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{CAPS}}}"#
        ),
        _ => format!(
            r#"{{"protocolVersion":"2025-11-25","capabilities":{CAPS},"serverInfo":{{"name":"s","version":"1"}}}}"#
        ),
    };
    let result: Value = serde_json::from_str(&result).unwrap();
    line(
        &mut s,
        json!({"jsonrpc": "2.0", "id": out[0]["id"], "result": result}),
        now,
    );
    sent(&mut s);
    assert_eq!(events(&mut s), vec![Event::Ready]);
    (s, now)
}

/// The server's notification on listen `wire`'s stream.
fn on_stream(wire: &Value, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": wire});
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

#[test]
fn the_listen_carries_what_is_wanted_and_its_stream_gives_the_legacy_events() {
    let (mut s, now) = session(EraChoice::Modern);
    let mut l = Listener::new();
    assert_eq!(l.poll(&mut s, now), None, "nothing wanted, nothing sent");
    assert!(sent(&mut s).is_empty());
    l.want_list(ListKind::Tools, true);
    l.want_list(ListKind::Prompts, true);
    let id = l.poll(&mut s, now).expect("a listen");
    let out = sent(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["method"], "subscriptions/listen");
    // Prompts did not declare `listChanged`: not asked for.
    assert_eq!(
        out[0]["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        out[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(s.deadline(id), None, "a listen has no timeout");
    assert_eq!(
        l.poll(&mut s, now),
        None,
        "the same filter is not sent twice"
    );
    let wire = out[0]["id"].clone();

    line(
        &mut s,
        on_stream(
            &wire,
            "notifications/subscriptions/acknowledged",
            json!({"notifications": {"toolsListChanged": true}}),
        ),
        now,
    );
    line(
        &mut s,
        on_stream(&wire, "notifications/tools/list_changed", json!({})),
        now,
    );
    assert_eq!(
        events(&mut s),
        vec![
            Event::ListenAcknowledged {
                id,
                notifications: Some(json!({"toolsListChanged": true}))
            },
            Event::ListChanged(ListKind::Tools)
        ]
    );

    // A subscription: a new listen, then the old one cancelled.
    assert!(l.subscribe("file:///a").unwrap());
    let second = l.poll(&mut s, now).expect("a new listen");
    let out = sent(&mut s);
    assert_eq!(out[0]["method"], "subscriptions/listen");
    assert_eq!(
        out[0]["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
    );
    assert_eq!(out[1]["method"], "notifications/cancelled");
    assert_eq!(out[1]["params"]["requestId"], wire);
    line(
        &mut s,
        on_stream(
            &out[0]["id"],
            "notifications/resources/updated",
            json!({"uri": "file:///a"}),
        ),
        now,
    );
    let got = events(&mut s);
    assert!(
        got.contains(&Event::ResourceUpdated {
            uri: "file:///a".into()
        }),
        "{got:?}"
    );

    // An hour passes: a listen never times out.
    s.handle_timeout(now + Duration::from_secs(3600));
    assert!(!events(&mut s)
        .iter()
        .any(|e| matches!(e, Event::Response { id, .. } if *id == second)));

    // Closing cancels it.
    l.close(&mut s, now);
    let out = sent(&mut s);
    assert_eq!(out[0]["method"], "notifications/cancelled");
    assert_eq!(l.open(), None);
}

#[test]
fn a_dropped_listen_is_sent_again_after_its_backoff_and_a_closed_one_is_not() {
    let (mut s, now) = session(EraChoice::Modern);
    let mut l = Listener::new();
    l.want_list(ListKind::Resources, true);
    let first = l.poll(&mut s, now).unwrap();
    sent(&mut s);
    assert!(l.handle_end(first, End::Dropped, now));
    assert_eq!(l.poll_timeout(), Some(now + RELISTEN_FIRST));
    assert_eq!(l.poll(&mut s, now), None, "not before the backoff");
    let second = l
        .poll(&mut s, now + RELISTEN_FIRST)
        .expect("sent again at its time");
    assert_ne!(second, first);
    assert_eq!(
        sent(&mut s)[0]["params"]["notifications"],
        json!({"resourcesListChanged": true})
    );
    // The server closes it on purpose: not sent again.
    assert!(
        !l.handle_end(RequestId(9999), End::Graceful, now),
        "not ours"
    );
    assert!(l.handle_end(second, End::Graceful, now));
    assert_eq!(l.poll_timeout(), None);
    assert_eq!(l.poll(&mut s, now + Duration::from_secs(60)), None);
    // What is wanted changes: listened again.
    l.want_list(ListKind::Tools, true);
    assert!(l.poll(&mut s, now).is_some());
    assert_eq!(l.sent(), 3);
}

#[test]
fn nothing_is_listened_in_the_legacy_era() {
    let (mut s, now) = session(EraChoice::Legacy);
    let mut l = Listener::new();
    l.want_list(ListKind::Tools, true);
    l.subscribe("file:///a").unwrap();
    assert_eq!(l.poll(&mut s, now), None);
    assert!(sent(&mut s).is_empty());
}

#[test]
fn an_acknowledgement_for_no_listen_of_ours_is_dropped() {
    let (mut s, now) = session(EraChoice::Modern);
    let before = s.stats().notifications_dropped;
    line(
        &mut s,
        on_stream(
            &json!(77),
            "notifications/subscriptions/acknowledged",
            json!({"notifications": {}}),
        ),
        now,
    );
    line(
        &mut s,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged"}),
        now,
    );
    assert!(events(&mut s).is_empty());
    assert_eq!(s.stats().notifications_dropped, before + 2);
}

#[test]
fn a_server_cancellation_naming_the_listen_ends_it_and_no_other_request() {
    let (mut s, now) = session(EraChoice::Modern);
    let mut l = Listener::new();
    l.want_list(ListKind::Tools, true);
    let listen = l.poll(&mut s, now).unwrap();
    let wire = sent(&mut s)[0]["id"].clone();
    let call = s.send(mcp_proto::Request::list_tools(None), now).unwrap();
    let call_wire = sent(&mut s)[0]["id"].clone();
    let cancel = |id: &Value| json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
    // Not a listen: nothing ends.
    line(&mut s, cancel(&call_wire), now);
    assert!(events(&mut s).is_empty());
    assert!(s.is_pending(call));
    line(&mut s, cancel(&wire), now);
    match events(&mut s).as_slice() {
        [Event::Response {
            id,
            result: Err(mcp_proto::RequestError::Cancelled(_)),
        }] => {
            assert_eq!(*id, listen)
        }
        other => panic!("{other:?}"),
    }
    // The driver hands it on as a drop: listened again after the backoff.
    assert!(l.handle_end(listen, End::Dropped, now));
    assert!(l.poll(&mut s, now + RELISTEN_FIRST).is_some());
}

#[test]
fn a_notification_naming_a_replaced_listen_is_dropped() {
    let (mut s, now) = session(EraChoice::Modern);
    let mut l = Listener::new();
    l.want_list(ListKind::Tools, true);
    l.poll(&mut s, now).unwrap();
    let old = sent(&mut s)[0]["id"].clone();
    l.subscribe("file:///a").unwrap();
    l.poll(&mut s, now).unwrap();
    let new = sent(&mut s)[0]["id"].clone();
    // The replaced listen's own end (cancelled).
    assert!(matches!(
        events(&mut s).as_slice(),
        [Event::Response {
            result: Err(mcp_proto::RequestError::Cancelled(_)),
            ..
        }]
    ));
    let before = s.stats().notifications_dropped;
    let tools = |id: &Value| on_stream(id, "notifications/tools/list_changed", json!({}));
    line(&mut s, tools(&old), now);
    assert!(events(&mut s).is_empty(), "the replaced stream's");
    assert_eq!(s.stats().notifications_dropped, before + 1);
    line(&mut s, tools(&new), now);
    line(
        &mut s,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        now,
    );
    assert_eq!(
        events(&mut s),
        vec![Event::ListChanged(ListKind::Tools); 2],
        "the open one's, and one naming none"
    );
}
