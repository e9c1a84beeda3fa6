//! What the OAuth flow transcripts (`oauth_jwt_bearer.rs`, `oauth_dpop.rs`) share: a flow driven
//! to its end with every request answered by the test's own table, no network, no clock, and
//! what the run leaves to look at.

use mcp_proto::http::HttpRequest;
use mcp_proto::oauth::{AuthError, Credentials, Flow, Step};
use std::collections::HashMap;
use std::time::SystemTime;

/// An answer: status, headers, body.
pub type Answer = (u16, Vec<(String, String)>, Vec<u8>);

/// How a flow ended, and every request it made, in order.
pub struct Run {
    pub result: Result<Credentials, AuthError>,
    pub requests: Vec<HttpRequest>,
}

#[allow(dead_code)] // each transcript reads what it needs
impl Run {
    /// The requests made to `url`.
    pub fn to(&self, url: &str) -> Vec<&HttpRequest> {
        self.requests.iter().filter(|r| r.url == url).collect()
    }

    /// The credentials (the flow must have succeeded).
    pub fn ok(&self) -> &Credentials {
        self.result.as_ref().expect("the flow should succeed")
    }

    /// The error, as shown (the flow must have failed).
    pub fn err(&self) -> String {
        self.result.as_ref().expect_err("should fail").to_string()
    }
}

/// Drives `flow` to its end at `now`: each request (checked sendable) answered by `answer`,
/// each load by `stored`. A flow that asks a person, or runs on past 32 steps, fails the test.
pub fn drive(
    mut flow: Flow,
    mut answer: impl FnMut(&HttpRequest) -> Answer,
    stored: Option<Credentials>,
    now: SystemTime,
) -> Run {
    let mut requests = Vec::new();
    for _ in 0..32 {
        match flow.step().clone() {
            Step::Send(r) => {
                assert!(r.check().is_ok(), "{r:?}");
                let (status, headers, body) = answer(&r);
                requests.push(r);
                flow.on_response(status, &headers, &body, now);
            }
            Step::Load { .. } => flow.on_loaded(stored.clone(), now),
            Step::Authorize(_) => panic!("no person in these flows"),
            Step::Done(c) => {
                return Run {
                    result: Ok(c),
                    requests,
                }
            }
            Step::Failed(e) => {
                return Run {
                    result: Err(e),
                    requests,
                }
            }
        }
    }
    panic!("the flow did not end");
}

/// A request's form body, as pairs.
pub fn form(r: &HttpRequest) -> HashMap<String, String> {
    url::form_urlencoded::parse(r.body.as_deref().unwrap_or_default())
        .into_owned()
        .collect()
}
