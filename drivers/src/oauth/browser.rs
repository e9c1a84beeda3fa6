//! The person's side of the native-app flow (RFC 8252): opening the system browser on the
//! authorization URL, and the loopback listener the browser is sent back to.

use mcp_proto::oauth::{Flow, Redirect};
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Opens the system browser on `url`; whether a browser program could be started.
pub(super) fn open_browser(url: &str) -> bool {
    let mut command = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler");
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    command
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match command.spawn() {
        Ok(mut child) => {
            // Reaped in the background: xdg-open returns at once.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            true
        }
        Err(_) => false,
    }
}

/// The largest request head the redirect listener reads.
const MAX_REDIRECT_HEAD: usize = 16 * 1024;

/// How long one connection to the redirect listener has to send its request head: a browser
/// sends it at once; the connection is closed after this, and other connections are served
/// meanwhile.
const REDIRECT_READ_DEADLINE: Duration = Duration::from_secs(10);

/// The most connections the redirect listener serves at once. One more that comes meanwhile
/// takes the place of the oldest one still sending its request head (an idle or slow
/// connection: a browser sends its request at once), which is closed unanswered; so a flood of
/// idle connections never keeps the person's redirect waiting.
const MAX_REDIRECT_CONNECTIONS: usize = 16;

/// A connection being served, as the accept loop sees it.
struct Served {
    /// Still reading its request head (not yet answered).
    reading: Arc<AtomicBool>,
    /// Served and closed.
    done: Arc<AtomicBool>,
    /// Dropped to close it unanswered.
    _close: smol::channel::Sender<()>,
}

/// Waits on the listener for this flow's redirect (the flow's [`Flow::check_redirect`] says
/// which request is its), answers it with a short page, and gives the full redirect URL.
/// Connections are served concurrently, each with its own read deadline and head cap, so a slow
/// or silent one does not hold up the person's; a request to another path (a favicon) gets a
/// 404, and one to the redirect path without this flow's `state` an error page: the wait goes
/// on in both cases, until the flow's redirect or the caller's timeout. Bounded: at most
/// [`MAX_REDIRECT_CONNECTIONS`] at once (the oldest still reading gives way to a new one),
/// [`MAX_REDIRECT_HEAD`] bytes and [`REDIRECT_READ_DEADLINE`] each.
pub(super) async fn receive_redirect(
    listener: &smol::net::TcpListener,
    redirect_uri: &str,
    flow: &Flow,
) -> Result<String, String> {
    let origin = url::Url::parse(redirect_uri)
        .map(|u| u.origin().ascii_serialization())
        .map_err(|_| "the redirect URI is not a URL".to_owned())?;
    let (found, redirect) = smol::channel::bounded::<String>(1);
    // Declared after what its tasks borrow: dropped (with every connection still open) first.
    let connections = smol::Executor::new();
    let accept = async {
        let mut served: VecDeque<Served> = VecDeque::new();
        loop {
            let (stream, _) = listener
                .accept()
                .await
                .map_err(|e| format!("waiting for the redirect: {e}"))?;
            served.retain(|s| !s.done.load(Ordering::Acquire));
            if served.len() >= MAX_REDIRECT_CONNECTIONS {
                match served
                    .iter()
                    .position(|s| s.reading.load(Ordering::Acquire))
                {
                    // Its close handle dropped: it ends unanswered.
                    Some(oldest) => drop(served.remove(oldest)),
                    // Every one is being answered: this one is not served.
                    None => continue,
                }
            }
            let (close, closed) = smol::channel::bounded::<()>(1);
            let reading = Arc::new(AtomicBool::new(true));
            let done = Arc::new(AtomicBool::new(false));
            served.push_back(Served {
                reading: reading.clone(),
                done: done.clone(),
                _close: close,
            });
            let (found, origin) = (found.clone(), origin.as_str());
            connections
                .spawn(async move {
                    let serve = serve_redirect(stream, origin, flow, &reading);
                    // Closing ends it (`recv` fails once the accept loop drops the sender).
                    let evicted = async {
                        let _ = closed.recv().await;
                        None
                    };
                    if let Some(url) = smol::future::or(serve, evicted).await {
                        let _ = found.try_send(url);
                    }
                    done.store(true, Ordering::Release);
                })
                .detach();
        }
    };
    let taken = async {
        redirect
            .recv()
            .await
            .map_err(|_| "the redirect listener stopped".to_owned())
    };
    connections.run(smol::future::or(taken, accept)).await
}

/// One connection to the redirect listener: reads its request head (within the deadline, at
/// most [`MAX_REDIRECT_HEAD`] bytes), answers it (`reading` is cleared then), and gives the
/// redirect URL when it is this flow's.
async fn serve_redirect(
    mut stream: smol::net::TcpStream,
    origin: &str,
    flow: &Flow,
    reading: &AtomicBool,
) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REDIRECT_HEAD {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n.min(MAX_REDIRECT_HEAD - head.len())]),
            }
        }
    };
    smol::future::or(read, smol::Timer::after(REDIRECT_READ_DEADLINE).map_unit()).await;
    reading.store(false, Ordering::Release);
    let line = String::from_utf8_lossy(&head);
    let target = line
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("GET "))
        .and_then(|l| l.split(' ').next())
        .filter(|t| t.starts_with('/'))
        .unwrap_or("");
    let url = format!("{origin}{target}");
    let verdict = if target.is_empty() {
        Redirect::Elsewhere
    } else {
        flow.check_redirect(&url)
    };
    let (status, title, text) = match verdict {
        Redirect::Ours => (
            "200 OK",
            "Authorized",
            "You can close this window and go back to the application.",
        ),
        Redirect::NotOurs => (
            "400 Bad Request",
            "Not this sign-in",
            "This is not the answer to the sign-in the application is waiting for: it was ignored, and the application keeps waiting.",
        ),
        Redirect::Elsewhere => ("404 Not Found", "Not found", "Nothing here."),
    };
    let page = format!("<!doctype html><title>{title}</title><p>{text}</p>");
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.flush().await;
    (verdict == Redirect::Ours).then_some(url)
}

trait MapUnit: std::future::Future + Sized {
    fn map_unit(self) -> impl std::future::Future<Output = ()> {
        async {
            self.await;
        }
    }
}

impl<F: std::future::Future> MapUnit for F {}
