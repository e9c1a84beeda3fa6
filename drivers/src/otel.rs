//! The trace context of the current span, from OpenTelemetry (the `opentelemetry` feature).
//!
//! A `tracing` span has no W3C trace id of its own: under `tracing-opentelemetry`'s layer, each
//! span has an OpenTelemetry span, whose context (trace id, span id, flags, `tracestate`) this
//! module reads with [`OpenTelemetrySpanExt::context`]. With the feature,
//! [`ClientConfig::default`](crate::ClientConfig) asks [`current_span_context`] for every
//! request, inside the request's own span (`mcp.request`, when a subscriber wants it): the
//! server's spans then have the client's request span as their parent, as the conventions want.
//!
//! > "The MCP client span becomes a parent of the MCP server span regardless of transport used"
//! > — OpenTelemetry semantic conventions for MCP (docs/gen-ai/mcp.md), § Context propagation
//!
//! The application's layer must be this crate's `tracing-opentelemetry` (0.34, OpenTelemetry
//! 0.33): a layer of another version is not found, and no context is sent. Without a layer, or
//! outside any span, there is no valid context and none is sent.

use crate::client::TraceContextProvider;
use mcp_proto::TraceContext;
use opentelemetry::trace::TraceContextExt;
use std::sync::Arc;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C trace context of the current `tracing` span, as its OpenTelemetry span has it:
/// `traceparent` `00-{trace id}-{span id}-{flags}` and its `tracestate` (when not empty). `None`
/// when the span has no valid OpenTelemetry context (no layer, no span, a disabled span).
pub fn current_span_context() -> Option<TraceContext> {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let otel_span = cx.span();
    let sc = otel_span.span_context();
    if !sc.is_valid() {
        return None;
    }
    let traceparent = format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    );
    let state = sc.trace_state().header();
    TraceContext::new(&traceparent, Some(state.as_str()).filter(|s| !s.is_empty()))
}

/// [`current_span_context`] as a [`ClientConfig::trace_context`](crate::ClientConfig::trace_context)
/// provider: what `ClientConfig::default()` sets with the feature.
pub fn provider() -> TraceContextProvider {
    TraceContextProvider(Arc::new(current_span_context))
}
