//! The legacy era's handshake (2024-11-05 … 2025-11-25): `initialize` and its params, reading
//! its answer, and what goes out once a renewed session is ready. Where the opening goes next is
//! `opening.rs`'s to decide.

use super::request::Decoder;
use super::{Core, Reply, Request, Transmit, TransmitKind};
use crate::error::RequestError;
use crate::jsonrpc::RequestId;
use crate::types::{InitializeParams, InitializeResult, LATEST_PROTOCOL_VERSION};
use std::time::Instant;

impl Core {
    /// Sends `initialize`, offering the latest legacy revision (or the one a -32022 named, see
    /// `initialize_refused` in `opening.rs`).
    pub(super) fn send_initialize(&mut self, now: Instant) -> RequestId {
        let params = InitializeParams {
            protocol_version: self
                .legacy_offer
                .unwrap_or(LATEST_PROTOCOL_VERSION)
                .to_owned(),
            capabilities: self.config.capabilities.to_json(),
            client_info: self.config.client_info.clone(),
        };
        let params = serde_json::to_value(params).expect("InitializeParams serializes");
        let request = Request {
            decoder: Decoder::handshake(),
            ..Request::new("initialize", Some(params))
        };
        let id = RequestId(self.fresh_id());
        self.enqueue_as(id, request, now, true, false);
        id
    }

    /// A renewed session is ready: the requests that met the expiry, and those sent during the
    /// renewal, go out now; the others stay on their streams.
    pub(super) fn send_held(&mut self) {
        for (id, p) in self.pending.iter_mut().filter(|(_, p)| p.unsent) {
            p.unsent = false;
            // Written anew, as it was first: the same id, method and params.
            let wire = RequestId(p.wire().unwrap_or(id.0));
            let params = p.params.is_some().then_some(&p.params);
            self.transmits.push_back(Transmit {
                payload: crate::jsonrpc::encode_request(wire, &p.method, params),
                kind: TransmitKind::Request {
                    id: *id,
                    wire,
                    method: p.method.clone(),
                },
                headers: Vec::new(),
                modern: false,
            });
        }
    }
}

/// `initialize`'s answer as an [`InitializeResult`].
pub(super) fn read_initialize(
    outcome: Result<Reply, RequestError>,
) -> Result<InitializeResult, RequestError> {
    outcome.and_then(|reply| match reply {
        Reply::Raw(v) => {
            serde_json::from_value::<InitializeResult>(v).map_err(|e| RequestError::InvalidResult {
                method: "initialize".into(),
                reason: e.to_string(),
            })
        }
        other => Err(RequestError::InvalidResult {
            method: "initialize".into(),
            reason: format!("decoded as {other:?}"),
        }),
    })
}
