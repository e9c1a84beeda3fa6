//! The Streamable HTTP transport, on [isahc](https://docs.rs/isahc). It only moves bytes: every
//! decision (headers, statuses, session ids, resumption) comes from [`HttpRules`] in the core.
//!
//! Each outbound message is one POST. Notifications and responses are sent in order, each after the
//! previous one was accepted; a request's exchange runs as its own task, so a response stream can
//! stay open while the answers to the server's pings go out on their own POSTs. Events are handed
//! to the client as they arrive. A cancelled request's exchange is aborted.

use crate::transport::{BoxFuture, Inbound, Transport};
use crate::Error;
use isahc::config::{Configurable, RedirectPolicy};
use isahc::{AsyncBody, HttpClient, Response};
use mcp_proto::http::{Body, HttpConfig, HttpError, HttpRequest, HttpRules, StreamEnd};
use mcp_proto::sse::{SseDecoder, SseItem};
use mcp_proto::{RequestError, RequestId, Transmit, TransmitKind};
use smol::channel::{self, Receiver, Sender};
use smol::io::AsyncReadExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many received messages may wait for the client before reading the response pauses.
const INBOUND_QUEUE: usize = 64;

/// How to reach a Streamable HTTP server.
#[derive(Debug, Clone)]
pub struct HttpTransportConfig {
    /// The endpoint and the rules' settings (extra headers such as `Authorization`, session renewal,
    /// resumption).
    pub rules: HttpConfig,
    /// The isahc client to use. The default one keeps connections alive, follows no redirects (so
    /// credentials never travel to another origin) and has no wall-clock timeout: a response stream
    /// lasts as long as the caller's request timeout allows.
    pub client: Option<HttpClient>,
    /// The largest JSON body or SSE event accepted, in bytes (default 64 MiB).
    pub max_message: usize,
}

impl HttpTransportConfig {
    /// Defaults for an endpoint.
    pub fn new(url: impl Into<String>) -> Self {
        HttpTransportConfig {
            rules: HttpConfig::new(url),
            client: None,
            max_message: mcp_proto::framing::DEFAULT_FRAME_LIMIT,
        }
    }

    /// Adds a header sent on every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.rules.headers.push((name.into(), value.into()));
        self
    }
}

/// A Streamable HTTP connection to one MCP endpoint. See the [module docs](self).
pub struct HttpTransport {
    outbound: Sender<Transmit>,
    inbound: Receiver<Inbound>,
    shared: Arc<Shared>,
    _sender: smol::Task<()>,
}

struct Shared {
    client: HttpClient,
    rules: Mutex<HttpRules>,
    inbound: Sender<Inbound>,
    /// Abort handles of running request exchanges: dropping the sender aborts the exchange.
    exchanges: Mutex<HashMap<RequestId, Sender<()>>>,
    max_message: usize,
    closed: std::sync::atomic::AtomicBool,
}

impl HttpTransport {
    /// A transport for this endpoint. Nothing is sent until the client sends `initialize`.
    pub fn new(config: HttpTransportConfig) -> Result<Self, Error> {
        let client = match config.client {
            Some(c) => c,
            None => HttpClient::builder()
                .redirect_policy(RedirectPolicy::None)
                .build()
                .map_err(|e| Error::io("building the HTTP client", std::io::Error::other(e)))?,
        };
        let (out_tx, out_rx) = channel::unbounded();
        // Bounded: a server streaming faster than the client reads is slowed down, not buffered.
        let (in_tx, in_rx) = channel::bounded(INBOUND_QUEUE);
        let shared = Arc::new(Shared {
            client,
            rules: Mutex::new(HttpRules::new(config.rules)),
            inbound: in_tx,
            exchanges: Mutex::new(HashMap::new()),
            max_message: config.max_message,
            closed: false.into(),
        });
        let sender = smol::spawn(send_loop(shared.clone(), out_rx));
        Ok(HttpTransport {
            outbound: out_tx,
            inbound: in_rx,
            shared,
            _sender: sender,
        })
    }

    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.shared.rules).session_id().map(str::to_owned)
    }
}

impl Transport for HttpTransport {
    fn send(&self, message: Transmit) -> Result<(), Error> {
        self.outbound.try_send(message).map_err(|_| Error::Closed)
    }

    fn recv(&self) -> BoxFuture<'_, Inbound> {
        Box::pin(async move { self.inbound.recv().await.unwrap_or(Inbound::Closed(None)) })
    }

    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            if self
                .shared
                .closed
                .swap(true, std::sync::atomic::Ordering::SeqCst)
            {
                return Ok(());
            }
            self.outbound.close();
            lock(&self.shared.exchanges).clear();
            let delete = lock(&self.shared.rules).delete();
            let result = match delete {
                // A 405 (the server does not let clients end sessions) is fine; so is any answer.
                Some(request) => self.shared.send(request).await.map(drop),
                None => Ok(()),
            };
            let _ = self.shared.inbound.try_send(Inbound::Closed(None));
            result
        })
    }
}

impl Shared {
    async fn send(&self, request: HttpRequest) -> Result<Response<AsyncBody>, Error> {
        let url = request.url.clone();
        let mut builder = isahc::Request::builder()
            .method(request.method.as_str())
            .uri(request.url.as_str());
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let http_request = builder
            .body(AsyncBody::from(request.body.unwrap_or_default()))
            .map_err(|e| {
                Error::io(
                    format!("building a request to {url}"),
                    std::io::Error::other(e),
                )
            })?;
        self.client.send_async(http_request).await.map_err(|e| {
            Error::io(
                format!("{} {url}", request.method.as_str()),
                std::io::Error::other(e),
            )
        })
    }

    /// The POST for `transmit`, and whether it carries a session id (the rules need to know when
    /// reading its answer).
    fn post(&self, transmit: &Transmit) -> (HttpRequest, bool) {
        let rules = lock(&self.rules);
        (rules.post(transmit), rules.session_id().is_some())
    }

    /// Hands one item to the client, waiting while its queue is full.
    async fn deliver(&self, item: Inbound) {
        let _ = self.inbound.send(item).await;
    }
}

/// Sends queued messages in order. Requests get an exchange task each; notifications and
/// responses are sent one after the other, each awaited, so the server sees them in order.
async fn send_loop(shared: Arc<Shared>, queue: Receiver<Transmit>) {
    while let Ok(transmit) = queue.recv().await {
        match transmit.kind.clone() {
            TransmitKind::Request { id, .. } => {
                let (abort_tx, abort_rx) = channel::bounded::<()>(1);
                lock(&shared.exchanges).insert(id, abort_tx);
                let shared2 = shared.clone();
                smol::spawn(async move {
                    let exchange = exchange(&shared2, id, &transmit);
                    smol::future::or(exchange, async {
                        let _ = abort_rx.recv().await;
                    })
                    .await;
                    lock(&shared2.exchanges).remove(&id);
                })
                .detach();
            }
            TransmitKind::Cancellation { id } => {
                // Giving up on a request also ends its HTTP exchange.
                lock(&shared.exchanges).remove(&id);
                let _ = post_and_discard(&shared, &transmit).await;
            }
            _ => {
                let _ = post_and_discard(&shared, &transmit).await;
            }
        }
    }
}

/// POSTs a notification or response; the answer (202) carries nothing to read.
async fn post_and_discard(shared: &Shared, transmit: &Transmit) -> Result<(), Error> {
    let (request, carried) = shared.post(transmit);
    let mut response = shared.send(request).await?;
    let head = head(&response);
    let verdict =
        lock(&shared.rules).on_response(&transmit.kind, carried, response.status().as_u16(), &head);
    // Drain a small body so the connection can be reused.
    let mut sink = Vec::new();
    let _ = response
        .body_mut()
        .take(64 * 1024)
        .read_to_end(&mut sink)
        .await;
    verdict.map(drop).map_err(http_error)
}

/// One request's exchange: POST, then read its JSON body or event stream (resuming it if it
/// breaks), handing every message to the client.
async fn exchange(shared: &Shared, id: RequestId, transmit: &Transmit) {
    if let Err(error) = exchange_inner(shared, id, transmit).await {
        shared.deliver(error).await;
    }
}

async fn exchange_inner(
    shared: &Shared,
    id: RequestId,
    transmit: &Transmit,
) -> Result<(), Inbound> {
    let failed = |error: Error| Inbound::Failed { id, error };
    let (request, carried) = shared.post(transmit);
    let mut response = shared.send(request).await.map_err(failed)?;
    let status = response.status().as_u16();
    let head = head(&response);
    let verdict = lock(&shared.rules).on_response(&transmit.kind, carried, status, &head);
    match verdict {
        Ok(Body::None) => Ok(()),
        Ok(Body::Json) => {
            let body = read_limited(response.body_mut(), shared.max_message)
                .await
                .map_err(failed)?;
            let answered = lock(&shared.rules).observe_message(&transmit.kind, &body);
            shared.deliver(Inbound::Message(body)).await;
            // Nothing else comes for this request. (Should the body have answered it after all,
            // as a batch would, the client has already completed it and ignores a failure.)
            match lock(&shared.rules).on_stream_end(&transmit.kind, answered, 0, None) {
                StreamEnd::Failed(reason) => Err(failed(Error::io(
                    reason,
                    std::io::Error::from(std::io::ErrorKind::InvalidData),
                ))),
                _ => Ok(()),
            }
        }
        Ok(Body::EventStream) => read_stream(shared, id, transmit, response).await,
        Err(HttpError::SessionExpired { url }) => Err(Inbound::SessionExpired {
            id: Some(id),
            error: Error::Http {
                status,
                url,
                body: String::new(),
            },
        }),
        Err(e) => Err(failed(http_failure(e, response.body_mut()).await)),
    }
}

/// Reads an event stream as it arrives; resumes it with GET + Last-Event-ID when it ends before
/// the answer, as the rules say.
async fn read_stream(
    shared: &Shared,
    id: RequestId,
    transmit: &Transmit,
    mut response: Response<AsyncBody>,
) -> Result<(), Inbound> {
    let failed = |error: Error| Inbound::Failed { id, error };
    let mut decoder = SseDecoder::with_limit(shared.max_message);
    let mut buf = vec![0u8; 16 * 1024];
    let mut attempts = 0;
    loop {
        let mut answered = false;
        loop {
            // A broken stream is resumed like an ended one.
            let n: usize = response.body_mut().read(&mut buf).await.unwrap_or_default();
            if n == 0 {
                break;
            }
            decoder.feed(&buf[..n]);
            while let Some(item) = decoder.poll_event() {
                match item {
                    SseItem::Event(event) => {
                        if let Some(message) = HttpRules::event_message(&event) {
                            answered |=
                                lock(&shared.rules).observe_message(&transmit.kind, message);
                            shared.deliver(Inbound::Message(message.to_vec())).await;
                        }
                    }
                    SseItem::Overflow => {
                        return Err(failed(Error::Request(RequestError::TooLarge {
                            len: shared.max_message as u64 + 1,
                            limit: shared.max_message,
                        })));
                    }
                }
            }
            if answered {
                // The answer is in; a server that keeps the stream open is not waited for.
                return Ok(());
            }
        }
        decoder.finish();
        let plan =
            lock(&shared.rules).on_stream_end(&transmit.kind, answered, attempts, Some(&decoder));
        match plan {
            StreamEnd::Done => return Ok(()),
            StreamEnd::Failed(reason) => {
                return Err(failed(Error::io(
                    reason,
                    std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
                )))
            }
            StreamEnd::Resume { after, request } => {
                attempts += 1;
                smol::Timer::after(after).await;
                response = shared.send(request).await.map_err(failed)?;
                let head = head(&response);
                let verdict =
                    lock(&shared.rules).on_resume_response(response.status().as_u16(), &head);
                if let Err(e) = verdict {
                    return Err(failed(http_failure(e, response.body_mut()).await));
                }
            }
        }
    }
}

/// The response's headers as pairs (values that are not visible ASCII are skipped).
fn head(response: &Response<AsyncBody>) -> Vec<(String, String)> {
    response
        .headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

/// Reads a whole body of at most `limit` bytes.
async fn read_limited(body: &mut AsyncBody, limit: usize) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let read = body.take(limit as u64 + 1).read_to_end(&mut out).await;
    read.map_err(|e| Error::io("reading a response body", e))?;
    if out.len() > limit {
        return Err(Error::Request(RequestError::TooLarge {
            len: out.len() as u64,
            limit,
        }));
    }
    Ok(out)
}

/// The start of an error response's body, on one line, for the error message.
async fn error_excerpt(body: &mut AsyncBody) -> String {
    let mut out = Vec::new();
    let _ = body.take(512).read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(200).collect()
}

/// A failed response as the driver's error, with the start of its body for a bad status.
async fn http_failure(e: HttpError, body: &mut AsyncBody) -> Error {
    match e {
        HttpError::Status { status, url } => Error::Http {
            status,
            url,
            body: error_excerpt(body).await,
        },
        other => http_error(other),
    }
}

fn http_error(e: HttpError) -> Error {
    match e {
        HttpError::Status { status, url } => Error::Http {
            status,
            url,
            body: String::new(),
        },
        HttpError::SessionExpired { url } => Error::Http {
            status: 404,
            url,
            body: String::new(),
        },
        other => Error::io(
            other.to_string(),
            std::io::Error::from(std::io::ErrorKind::InvalidData),
        ),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
