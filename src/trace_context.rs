//! W3C Trace Context in a request's `params._meta`: the trace a request belongs to, so that the
//! server's spans join the caller's trace.
//!
//! The core keeps no tracer and reads no span: the context is an input, a pure value the driver
//! (or the application) gets from wherever its traces live (OpenTelemetry, say) and hands over
//! with [`Request::with_trace`](crate::Request::with_trace). It is checked here, once, when it
//! is made: a malformed `traceparent` is refused (it is never sent); a malformed `tracestate` is
//! left out, the `traceparent` kept.
//!
//! Where it goes, and which keys:
//!
//! > "Instrumentations SHOULD propagate trace context inside MCP request `params._meta` property
//! > bag." … "when using W3C Trace Context propagation, inject `traceparent` and `tracestate` to
//! > the MCP message `params._meta` when creating request or notification and extract them on
//! > the receiver side to use as the remote parent." — OpenTelemetry semantic conventions for
//! > MCP (docs/gen-ai/mcp.md, status Development), § Context propagation
//!
//! Keys without a prefix are allowed by the specification, and these two are named by it since:
//!
//! > "**Key name format:** valid `_meta` key names have two segments: an optional **prefix**, and
//! > a **name**." — MCP 2025-11-25, Basic § `_meta`
//!
//! > "When OTel trace context is propagated via `_meta`, the keys `traceparent`, `tracestate`,
//! > and `baggage` follow W3C Trace Context and W3C Baggage value formats." — SEP-414 (Final),
//! > which notes them as an exception to the prefixing convention
//!
//! A caller's own `_meta.traceparent` or `_meta.tracestate` wins: the request then carries the
//! caller's keys only (see [`Request::with_trace`](crate::Request::with_trace)).

use std::fmt;

/// The `_meta` key of the W3C `traceparent`.
pub const TRACEPARENT_META: &str = "traceparent";
/// The `_meta` key of the W3C `tracestate`.
pub const TRACESTATE_META: &str = "tracestate";

/// The longest `tracestate` sent (512 bytes); a longer one is left out, the `traceparent` kept.
///
/// > "Vendors SHOULD propagate at least 512 characters of a combined header." — W3C Trace
/// > Context Level 1, § 3.3.1.5 Tracestate Limits
///
/// Past that a tracer may drop it; here the cap also bounds what a provider can make every
/// request carry.
pub const MAX_TRACESTATE_LEN: usize = 512;

/// The most list members a `tracestate` may have.
///
/// > "There can be a maximum of 32 list-members in a list." — W3C Trace Context Level 1,
/// > § 3.3.1.1
const MAX_TRACESTATE_MEMBERS: usize = 32;

/// The W3C trace context of one request: a valid `traceparent` and, when one was given and is
/// well formed, its `tracestate`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

impl TraceContext {
    /// A trace context from its two headers' values, or `None` when `traceparent` is not a valid
    /// version-00 `traceparent` (it is then never sent). A `tracestate` that is empty, longer than
    /// [`MAX_TRACESTATE_LEN`] or not a well-formed list is left out.
    ///
    /// The header is `version "-" trace-id "-" parent-id "-" trace-flags`, of 2, 32, 16 and 2
    /// lowercase hex digits (`HEXDIGLC`), and neither id may be all zeros:
    ///
    /// > "All bytes as zero (`00000000000000000000000000000000`) is considered an invalid
    /// > value." — W3C Trace Context Level 1, § 3.2.2.3 trace-id (and likewise § 3.2.2.4
    /// > parent-id)
    pub fn new(traceparent: &str, tracestate: Option<&str>) -> Option<TraceContext> {
        if !valid_traceparent(traceparent) {
            return None;
        }
        Some(TraceContext {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate
                .filter(|s| valid_tracestate(s))
                .map(str::to_owned),
        })
    }

    /// The `traceparent`: `00-{trace-id}-{parent-id}-{trace-flags}`, 55 characters.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate`, when there is one.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The trace id: the 32 hex digits of the `traceparent`.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The parent id (the caller's span): the 16 hex digits of the `traceparent`.
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// Appends the context as `_meta` members, each preceded by a comma
    /// (`,"traceparent":"…","tracestate":"…"`), in key order.
    pub(crate) fn write_members(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b",\"traceparent\":\"");
        // Checked hex digits and dashes: nothing to escape.
        out.extend_from_slice(self.traceparent.as_bytes());
        out.push(b'"');
        if let Some(state) = &self.tracestate {
            out.extend_from_slice(b",\"tracestate\":");
            crate::jsonrpc::write_json(out, state);
        }
    }

    /// Puts the context into `meta` (a `_meta` object), unless the caller's own keys are there.
    pub(crate) fn insert_into(&self, meta: &mut serde_json::Map<String, serde_json::Value>) {
        if meta.contains_key(TRACEPARENT_META) || meta.contains_key(TRACESTATE_META) {
            return;
        }
        meta.insert(TRACEPARENT_META.into(), self.traceparent.clone().into());
        if let Some(state) = &self.tracestate {
            meta.insert(TRACESTATE_META.into(), state.clone().into());
        }
    }
}

/// Shows the `traceparent` (and whether a `tracestate` came); the `tracestate`'s text stays out
/// of logs, as vendors' data.
impl fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceContext")
            .field("traceparent", &self.traceparent)
            .field("tracestate", &self.tracestate.as_ref().map(|_| ".."))
            .finish()
    }
}

/// Whether `s` is a version-00 `traceparent` (W3C Trace Context Level 1, § 3.2.2): 55 characters,
/// lowercase hex fields, neither the trace id nor the parent id all zeros.
fn valid_traceparent(s: &str) -> bool {
    let b = s.as_bytes();
    // Version ff is invalid, and a later version may add fields this client cannot check: only
    // version 00 (the one this client knows) is sent.
    if b.len() != 55 || !b.starts_with(b"00-") || b[35] != b'-' || b[52] != b'-' {
        return false;
    }
    let lower_hex = |f: &[u8]| f.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let zeros = |f: &[u8]| f.iter().all(|&c| c == b'0');
    let (trace_id, parent_id, flags) = (&b[3..35], &b[36..52], &b[53..55]);
    lower_hex(trace_id)
        && lower_hex(parent_id)
        && lower_hex(flags)
        && !zeros(trace_id)
        && !zeros(parent_id)
}

/// Whether `s` is a `tracestate` worth sending: at most [`MAX_TRACESTATE_LEN`] bytes and 32
/// members, each `key=value` (W3C Trace Context Level 1, § 3.3.1.3): the key lowercase letters,
/// digits and `_-*/` (with one `@` for a tenant), starting with a letter or digit, at most 256
/// characters; the value 1 to 256 printable ASCII characters other than `,` and `=`, not ending
/// with a space. Empty members (`a=1,,b=2`) and spaces around them are allowed.
fn valid_tracestate(s: &str) -> bool {
    if s.len() > MAX_TRACESTATE_LEN {
        return false;
    }
    let mut members = 0;
    for member in s.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        members += 1;
        let Some((key, value)) = member.split_once('=') else {
            return false;
        };
        if !valid_key(key) || !valid_value(value) {
            return false;
        }
    }
    members > 0 && members <= MAX_TRACESTATE_MEMBERS
}

fn valid_key(key: &str) -> bool {
    let k = key.as_bytes();
    let part = |p: &[u8]| {
        p.first()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && p.iter().all(|c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, b'_' | b'-' | b'*' | b'/')
            })
    };
    k.len() <= 256
        && match key.split_once('@') {
            None => part(k),
            Some((tenant, system)) => {
                tenant.len() <= 241
                    && system.len() <= 14
                    && part(tenant.as_bytes())
                    && part(system.as_bytes())
            }
        }
}

fn valid_value(value: &str) -> bool {
    let v = value.as_bytes();
    !v.is_empty()
        && v.len() <= 256
        && v.last() != Some(&b' ')
        && v.iter()
            .all(|&c| matches!(c, 0x20..=0x2b | 0x2d..=0x3c | 0x3e..=0x7e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_taken_and_read_apart() {
        let t = TraceContext::new(GOOD, None).unwrap();
        assert_eq!(t.traceparent(), GOOD);
        assert_eq!(t.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.parent_id(), "00f067aa0ba902b7");
        assert_eq!(t.tracestate(), None);
        // Flags other than 01 are the caller's (sampled or not, future flags): kept.
        assert!(TraceContext::new(&GOOD.replace("-01", "-00"), None).is_some());
        assert!(TraceContext::new(&GOOD.replace("-01", "-ff"), None).is_some());
    }

    #[test]
    fn an_invalid_traceparent_is_refused() {
        let zero_trace = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        let zero_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
        let cases = [
            "",
            zero_trace,
            zero_parent,
            // Uppercase hex.
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
            // Another version: ff is invalid, a later one may have more fields.
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            // Wrong lengths, separators, characters.
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ",
            // 55 bytes, but not ASCII.
            "00-4bf92f3577b34da6a3ce929d0e0e47é-00f067aa0ba902b7-01",
        ];
        for bad in cases {
            assert_eq!(TraceContext::new(bad, Some("a=1")), None, "{bad:?}");
        }
    }

    #[test]
    fn a_malformed_tracestate_is_left_out_and_the_traceparent_kept() {
        let ok = [
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
            "a=1",
            "a=1 , b=2",
            "a=1,,b=2",
            "tenant@system=v",
            "k_-*/9=v with spaces",
        ];
        for state in ok {
            let t = TraceContext::new(GOOD, Some(state)).unwrap();
            assert_eq!(t.tracestate(), Some(state), "{state:?}");
        }
        let too_long = format!("a={}", "x".repeat(MAX_TRACESTATE_LEN));
        let too_many = (0..33)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        let bad = [
            "",
            " , ",
            "novalue",
            "Upper=1",
            "_start=1",
            "a=",
            "a=tab\there",
            "a=1=2",
            "a=\u{7f}",
            "a=é",
            "a@b@c=1",
            "a@toolongsystemname=1",
            too_long.as_str(),
            too_many.as_str(),
        ];
        for state in bad {
            let t = TraceContext::new(GOOD, Some(state)).unwrap();
            assert_eq!(t.tracestate(), None, "{state:?}");
            assert_eq!(t.traceparent(), GOOD);
        }
    }

    #[test]
    fn the_members_are_written_as_json() {
        let mut out = b"{\"k\":1".to_vec();
        TraceContext::new(GOOD, Some("a=\"q\\"))
            .unwrap()
            .write_members(&mut out);
        out.push(b'}');
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"k": 1, "traceparent": GOOD, "tracestate": "a=\"q\\"})
        );
    }

    #[test]
    fn a_callers_own_keys_win() {
        let t = TraceContext::new(GOOD, Some("a=1")).unwrap();
        for own in ["traceparent", "tracestate"] {
            let mut meta = serde_json::Map::new();
            meta.insert(own.into(), "mine".into());
            t.insert_into(&mut meta);
            assert_eq!(meta.len(), 1, "{own}");
            assert_eq!(meta[own], "mine");
        }
        let mut meta = serde_json::Map::new();
        meta.insert("progressToken".into(), 3.into());
        t.insert_into(&mut meta);
        assert_eq!(
            serde_json::Value::Object(meta),
            serde_json::json!({"progressToken": 3, "traceparent": GOOD, "tracestate": "a=1"})
        );
    }
}
