//! A build without the `oauth` feature: the HTTP transport's questions to OAuth, answered by a
//! type that has no value. Its transports never hold one, so none of this runs; a server's `401`
//! is the request's error ([`Error::OAuthUnavailable`](crate::Error::OAuthUnavailable)).

use mcp_proto::http::HttpRules;
use mcp_proto::oauth::{Attempt, AuthError, FlowStart, Ticket, Verdict};
use std::sync::Mutex;

/// No OAuth state: there is none in this build.
pub(crate) enum OAuth {}

impl OAuth {
    pub(crate) fn sign(&self, _request: &mut mcp_proto::http::HttpRequest) {
        match *self {}
    }

    pub(crate) fn on_head(&self, _nonce: Option<&str>) {
        match *self {}
    }

    pub(crate) fn ready(&self, _rules: &Mutex<HttpRules>) -> Option<u64> {
        match *self {}
    }

    pub(crate) async fn prepare(&self, _rules: &Mutex<HttpRules>) -> Result<u64, AuthError> {
        match *self {}
    }

    pub(crate) fn verdict(
        &self,
        _attempt: &mut Attempt,
        _generation: u64,
        _status: u16,
        _challenge: Option<&str>,
    ) -> (Verdict, Ticket) {
        match *self {}
    }

    pub(crate) async fn authorize_for(
        &self,
        _start: FlowStart,
        _ticket: Ticket,
        _rules: &Mutex<HttpRules>,
    ) -> Result<bool, AuthError> {
        match *self {}
    }
}
