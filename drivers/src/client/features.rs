//! The server's other features, as methods of the [`Client`]: resources (listed, templated, read,
//! subscribed to), prompts (listed, got) and argument completion. Each is a typed request of the
//! core ([`Request::list_resources`], …): the core refuses one the server did not declare
//! ([`RequestError::NotOffered`](mcp_proto::RequestError::NotOffered)) before anything is sent,
//! and decodes the answer; listings follow `nextCursor` under the same guard as `tools/list`.

use super::{channel, Client, Error, RequestError};
use mcp_proto::prompts::CompletionRef;
use mcp_proto::{
    Complete, Completion, GetPrompt, GetPromptResult, ListPrompts, ListPromptsResult,
    ListResourceTemplates, ListResourceTemplatesResult, ListResources, ListResourcesResult, Method,
    Pagination, Prompt, ReadResource, ReadResourceResult, Request, Resource, ResourceTemplate,
};
use serde_json::{Map, Value};
use std::time::Instant;

/// A listing's page taken apart: its items and its `nextCursor`.
type Page<T> = (Vec<T>, Option<String>);

impl Client {
    /// Follows `nextCursor` across the pages of a listing, under the tool listing's caps
    /// ([`ClientConfig::max_tool_pages`](super::ClientConfig::max_tool_pages) and
    /// [`max_tool_bytes`](super::ClientConfig::max_tool_bytes)): a repeated cursor, too many
    /// pages or too many bytes end it with [`Error::Listing`].
    pub(super) async fn list_all<M: Method, T>(
        &self,
        page: fn(Option<&str>) -> Request,
        items: fn(M::Result) -> Page<T>,
        bytes: fn(&T) -> usize,
    ) -> Result<Vec<T>, Error> {
        let listing = |error| Error::Listing {
            method: M::NAME,
            error,
        };
        let mut all = Vec::new();
        let mut guard = Pagination::new(self.max_tool_pages).max_bytes(self.max_tool_bytes);
        let mut cursor: Option<String> = None;
        loop {
            guard.admit().map_err(listing)?;
            let (found, next) = items(self.request_as::<M>(page(cursor.as_deref())).await?);
            let size = found.iter().map(bytes).sum();
            let next = guard.follow(next, size).map_err(listing)?;
            all.extend(found);
            match next {
                None => return Ok(all),
                next => cursor = next,
            }
        }
    }

    /// One page of resources (`resources/list`).
    pub async fn list_resources_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourcesResult, Error> {
        self.request_as::<ListResources>(Request::list_resources(cursor))
            .await
    }

    /// All resources, following `nextCursor` across pages (guarded as
    /// [`list_tools`](Self::list_tools) is).
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list_all::<ListResources, _>(
            Request::list_resources,
            |p| (p.resources, p.next_cursor),
            |r| r.raw().get().len(),
        )
        .await
    }

    /// One page of resource templates (`resources/templates/list`).
    pub async fn list_resource_templates_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        self.request_as::<ListResourceTemplates>(Request::list_resource_templates(cursor))
            .await
    }

    /// All resource templates, following `nextCursor` across pages.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_all::<ListResourceTemplates, _>(
            Request::list_resource_templates,
            |p| (p.resource_templates, p.next_cursor),
            |t| t.raw().get().len(),
        )
        .await
    }

    /// Reads a resource (`resources/read`). Contents over
    /// [`ClientConfig::max_read_bytes`](super::ClientConfig::max_read_bytes) fail with
    /// [`Error::Resource`]; text that was not valid JSON text comes mended (U+FFFD), as a tool's
    /// does; a blob stays base64 until [`ResourceContents::blob_bytes`] decodes it.
    ///
    /// [`ResourceContents::blob_bytes`]: mcp_proto::ResourceContents::blob_bytes
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        let read = self
            .request_as::<ReadResource>(Request::read_resource(uri))
            .await?;
        read.check_size(uri, self.max_read_bytes)
            .map_err(Error::Resource)?;
        Ok(*read)
    }

    /// Reads the resource a template names with `variables` (RFC 6570, see
    /// [`expand_uri_template`](mcp_proto::resources::expand_uri_template)): a template that does
    /// not expand fails with [`Error::Resource`] before anything is sent.
    pub async fn read_template(
        &self,
        template: &ResourceTemplate,
        variables: &Map<String, Value>,
    ) -> Result<ReadResourceResult, Error> {
        let uri = template.expand(variables).map_err(Error::Resource)?;
        self.read_resource(&uri).await
    }

    /// Subscribes to a resource's changes: each `notifications/resources/updated` for it then
    /// goes to [`ClientConfig::on_resource_updated`](super::ClientConfig::on_resource_updated)
    /// and counts in [`resources_updated`](Self::resources_updated). The server must declare
    /// `resources.subscribe`.
    ///
    /// In the legacy era this is `resources/subscribe`. In the 2026-07-28 era the URI joins the
    /// `subscriptions/listen` stream the client keeps open (a new listen replaces the old one),
    /// and this returns once the server acknowledged it; a stream that drops is listened again
    /// after a bounded backoff ([`mcp_proto::subscriptions`]). At most
    /// [`MAX_RESOURCE_SUBSCRIPTIONS`](mcp_proto::subscriptions::MAX_RESOURCE_SUBSCRIPTIONS) URIs.
    ///
    /// Only the updates of a URI subscribed to (or of a resource below it) reach the callback,
    /// in either era; others are dropped and counted in
    /// [`resource_updates_dropped`](Self::resource_updates_dropped). In the 2026-07-28 era a
    /// server may acknowledge fewer URIs than asked for: a URI it left out fails with
    /// [`RequestError::SubscriptionRefused`]. A
    /// subscription after the server closed the listen opens a new one.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), Error> {
        if self.era() != Some(mcp_proto::Era::Modern) {
            let new = self
                .lock()
                .listener
                .subscribe(uri)
                .map_err(|e| Error::Request(RequestError::InvalidArguments(e.to_string())))?;
            let answer = self.request(Request::subscribe_resource(uri)).await;
            let mut st = self.lock();
            match answer {
                Ok(_) => st.listener.handle_subscribed(uri),
                Err(e) => {
                    if new {
                        st.listener.unsubscribe(uri);
                    }
                    return Err(e);
                }
            }
            return Ok(());
        }
        let waiting = {
            let mut st = self.lock();
            let st = &mut *st;
            let subscribe = st
                .session
                .server_capabilities()
                .and_then(|c| c.get("resources"))
                .and_then(|r| r.get("subscribe"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !subscribe {
                return Err(Error::from(RequestError::NotOffered {
                    method: mcp_proto::subscriptions::LISTEN.to_owned(),
                    capability: "resources.subscribe".to_owned(),
                }));
            }
            st.listener
                .subscribe(uri)
                .map_err(|e| Error::Request(RequestError::InvalidArguments(e.to_string())))?;
            let _ = st.listener.poll(&mut st.session, Instant::now());
            let Some(id) = st.listener.open() else {
                return Err(st.closed_error());
            };
            if st.listener.acknowledged() {
                // Already listened to (subscribed before).
                None
            } else {
                let (tx, rx) = channel::bounded(1);
                st.listen_waiters.push((id, tx));
                st.flush(&self.shared.transport);
                Some((rx, st.session.config().default_timeout))
            }
        };
        let Some((rx, timeout)) = waiting else {
            return self.agreed(uri);
        };
        let acknowledged = self.shared.wait(
            Box::pin(rx),
            None,
            super::drive::Timers::Session,
            false,
            Some,
        );
        match timeout {
            None => acknowledged.await,
            Some(within) => {
                let bound = async {
                    smol::Timer::after(within).await;
                    Err(Error::Timeout(within))
                };
                smol::future::or(acknowledged, bound).await
            }
        }?;
        self.agreed(uri)
    }

    /// Whether the server's acknowledgement took `uri` (or a later listen carries it).
    fn agreed(&self, uri: &str) -> Result<(), Error> {
        let st = self.lock();
        if st.listener.hears(uri) || !st.listener.acknowledged() {
            return Ok(());
        }
        Err(Error::Request(RequestError::SubscriptionRefused {
            uri: uri.to_owned(),
        }))
    }

    /// Ends a subscription: `resources/unsubscribe` in the legacy era; in the 2026-07-28 era the
    /// URI leaves the listen (which is replaced, or cancelled when nothing is left to hear).
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), Error> {
        if self.era() != Some(mcp_proto::Era::Modern) {
            // Its updates stop at once, whatever the server answers.
            self.lock().listener.unsubscribe(uri);
            self.request(Request::unsubscribe_resource(uri)).await?;
            return Ok(());
        }
        let mut st = self.lock();
        let st = &mut *st;
        if st.listener.unsubscribe(uri) {
            let _ = st.listener.poll(&mut st.session, Instant::now());
            st.flush(&self.shared.transport);
        }
        Ok(())
    }

    /// How many `subscriptions/listen` requests were sent (2026-07-28 era): one per change of
    /// what is listened for, and one per re-listen after a drop.
    pub fn listens_sent(&self) -> u64 {
        self.lock().listener.sent()
    }

    /// How many `notifications/resources/updated` reached the application (of a URI subscribed
    /// to).
    pub fn resources_updated(&self) -> u64 {
        self.lock().resources_updated
    }

    /// How many `notifications/resources/updated` were dropped: of a URI not subscribed to, or
    /// one the server did not agree to ([`mcp_proto::subscriptions::Listener::admit_update`]).
    pub fn resource_updates_dropped(&self) -> u64 {
        self.lock().listener.dropped_updates()
    }

    /// One page of prompts (`prompts/list`).
    pub async fn list_prompts_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListPromptsResult, Error> {
        self.request_as::<ListPrompts>(Request::list_prompts(cursor))
            .await
    }

    /// All prompts, following `nextCursor` across pages.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list_all::<ListPrompts, _>(
            Request::list_prompts,
            |p| (p.prompts, p.next_cursor),
            |p| p.raw().get().len(),
        )
        .await
    }

    /// A prompt's messages, filled in with `arguments` (`prompts/get`).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<GetPromptResult, Error> {
        let got = self
            .request_as::<GetPrompt>(Request::get_prompt(name, arguments))
            .await?;
        Ok(*got)
    }

    /// Suggestions for argument `argument` of a prompt or a resource template, from what was
    /// typed so far (`value`) and the arguments already given (`context`)
    /// (`completion/complete`; the server must declare `completions`).
    pub async fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &Map<String, Value>,
    ) -> Result<Completion, Error> {
        let result = self
            .request_as::<Complete>(Request::complete(reference, argument, value, context))
            .await?;
        Ok(result.completion)
    }
}
