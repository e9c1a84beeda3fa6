//! Writing a recording: the [`Recorder`] (the file and its clock) and the [`Recording`] wrapper
//! that tells it what crosses a transport.

use super::{escape, verbatim, MAGIC, VERSION};
use crate::transport::{BoxFuture, Inbound, Transmit, Transport};
use crate::{Client, Error};
use serde_json::json;
use std::ffi::OsStr;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// What a recording's header line says (see the [format](super#the-format-version-1)).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Header {
    /// How the server was reached: `"stdio"` or `"http"`.
    pub transport: String,
    /// The server's command line (or its URL, over HTTP), each part that looks like a secret
    /// replaced by `<redacted>` ([`Header::stdio`], [`Header::http`] do that).
    pub server: Vec<String>,
    /// The era the session speaks, when known at the start (`"legacy"`, `"modern"`).
    pub era: Option<String>,
}

/// What replaces a secret in a recorded command line.
const REDACTED: &str = "<redacted>";

/// Words that make a flag's or a variable's value a secret.
const SECRET_WORDS: [&str; 9] = [
    "token",
    "secret",
    "password",
    "passwd",
    "key",
    "auth",
    "credential",
    "cookie",
    "bearer",
];

/// Prefixes of well-known token formats (OpenAI, GitHub, Slack, GitLab, AWS access keys).
const TOKEN_PREFIXES: [&str; 8] = [
    "sk-",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "xox",
    "glpat-",
    "AKIA",
];

fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| name.contains(w))
}

/// One argument of a command line with what looks like a secret in it replaced; `after_flag`:
/// whether the argument before it is a flag naming a secret (`--api-key`).
fn redact(arg: &str, after_flag: bool) -> String {
    if after_flag && !arg.starts_with('-') {
        return REDACTED.to_owned();
    }
    if TOKEN_PREFIXES.iter().any(|p| arg.starts_with(p)) && arg.len() > 12 {
        return REDACTED.to_owned();
    }
    if let Ok(mut url) = url::Url::parse(arg) {
        if matches!(url.scheme(), "http" | "https" | "ws" | "wss") {
            if !url.username().is_empty() || url.password().is_some() {
                let _ = url.set_username(REDACTED);
                let _ = url.set_password(None);
            }
            if url.query().is_some() {
                let pairs: Vec<(String, String)> = url
                    .query_pairs()
                    .map(|(k, v)| {
                        let v = if secret_name(&k) {
                            REDACTED.to_owned()
                        } else {
                            v.into_owned()
                        };
                        (k.into_owned(), v)
                    })
                    .collect();
                url.query_pairs_mut().clear().extend_pairs(pairs);
            }
            return url.to_string();
        }
    }
    match arg.split_once('=') {
        Some((name, _)) if secret_name(name) => format!("{name}={REDACTED}"),
        _ => arg.to_owned(),
    }
}

impl Header {
    /// The header of a stdio server's recording: its command line, with the arguments that look
    /// like secrets replaced (see [what is never recorded](super#what-is-never-recorded)). Its
    /// environment is not asked for.
    pub fn stdio(
        command: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Header {
        let mut server = vec![redact(&command.as_ref().to_string_lossy(), false)];
        let mut after_flag = false;
        for arg in args {
            let arg = arg.as_ref().to_string_lossy();
            server.push(redact(&arg, after_flag));
            after_flag = arg.starts_with('-') && !arg.contains('=') && secret_name(&arg);
        }
        Header {
            transport: "stdio".into(),
            server,
            era: None,
        }
    }

    /// The header of a Streamable HTTP server's recording: its endpoint URL, with a user,
    /// password and query values that look like secrets replaced (see [what is never
    /// recorded](super#what-is-never-recorded)). No header of the exchanges is recorded: not the
    /// extra ones given (`--header`), not `Authorization`, not the session id.
    pub fn http(url: &str) -> Header {
        Header {
            transport: "http".into(),
            server: vec![redact(url, false)],
            era: None,
        }
    }

    /// The header line, without its line end.
    fn line(&self) -> String {
        let fields = json!({"transport": self.transport, "server": self.server, "era": self.era});
        format!("{MAGIC} {VERSION} {fields}")
    }
}

/// Writes a recording: one line per message, as [`Recording`] tells it, timed from its creation.
///
/// Each line is written at once, in one write, so that a recording of a session that crashed
/// holds everything up to the crash. A failed write stops the recording (the session goes on);
/// [`finish`](Self::finish) returns the error.
pub struct Recorder {
    started: Instant,
    state: Mutex<Writer>,
}

struct Writer {
    out: Box<dyn Write + Send>,
    /// The server's bytes since its last line end.
    partial: Vec<u8>,
    /// The most `partial` holds: the client's limit on one message. Past it the line is not
    /// recorded (a comment says so), as the client does not read it either.
    limit: usize,
    /// Skipping the rest of a line over `limit`.
    skipping: bool,
    /// The `.` line is written.
    ended: bool,
    /// The first write error; nothing is written after it.
    error: Option<io::Error>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder writing to `out`, its header line first.
    pub fn new(out: impl Write + Send + 'static, header: &Header) -> io::Result<Recorder> {
        let mut out: Box<dyn Write + Send> = Box::new(out);
        out.write_all(format!("{}\n", header.line()).as_bytes())?;
        Ok(Recorder {
            started: Instant::now(),
            state: Mutex::new(Writer {
                out,
                partial: Vec::new(),
                limit: mcp_proto::framing::DEFAULT_FRAME_LIMIT,
                skipping: false,
                ended: false,
                error: None,
            }),
        })
    }

    /// A recorder writing to the file at `path`, created, or emptied when it exists (as `curl
    /// -o` and `tee` do); on Unix, readable by its owner only (a recording holds the session's
    /// messages).
    pub fn create(path: impl AsRef<Path>, header: &Header) -> io::Result<Recorder> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        Recorder::new(options.open(path)?, header)
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ms(&self) -> u128 {
        self.started.elapsed().as_millis()
    }

    /// Notes the era `client` opened its session in (an `=` line), once it is open.
    pub fn opened(&self, client: &Client) {
        let era = match client.era() {
            Some(mcp_proto::Era::Legacy) => "legacy".to_owned(),
            Some(mcp_proto::Era::Modern) => "modern".to_owned(),
            Some(other) => format!("{other:?}").to_lowercase(),
            None => return,
        };
        let version = client.initialize_result().map(|r| r.protocol_version);
        let fact = json!({"era": era, "protocolVersion": version});
        let ms = self.ms();
        self.lock().write(format!("= {ms} {fact}\n").as_bytes());
    }

    /// Writes what is left and returns the first write error, if any.
    pub fn finish(&self) -> io::Result<()> {
        let ms = self.ms();
        let mut w = self.lock();
        w.tail(ms);
        if w.error.is_none() {
            if let Err(e) = w.out.flush() {
                w.error = Some(e);
            }
        }
        match w.error.take() {
            Some(e) => {
                // Nothing more is written after it.
                w.error = Some(io::Error::new(e.kind(), e.to_string()));
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Sends a client message through `send` and records it (a `>` line) once it went: a
    /// message the transport refused is not what went over the wire, and is noted as a comment.
    /// The writer stays locked meanwhile, so that an answer read on another thread is recorded
    /// after its request, never before.
    fn sent<R>(&self, payload: &[u8], send: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
        let ms = self.ms();
        let line = if payload.contains(&b'\n') || payload.contains(&b'\r') {
            // The session never sends one; written escaped as a comment rather than break the
            // file's lines.
            format!(
                "# {ms} a client message with a line end: {}\n",
                escape(payload)
            )
            .into_bytes()
        } else {
            let mut line = Vec::with_capacity(payload.len() + 24);
            line.extend_from_slice(format!("> {ms} ").as_bytes());
            line.extend_from_slice(payload);
            line.push(b'\n');
            line
        };
        let mut w = self.lock();
        let sent = send();
        match &sent {
            Ok(_) => w.write(&line),
            Err(e) => w.write(
                format!(
                    "# {ms} a client message the transport refused ({}): not sent\n",
                    mcp_proto::terminal::line(&e.to_string())
                )
                .as_bytes(),
            ),
        }
        sent
    }

    fn received(&self, inbound: &Inbound) {
        let ms = self.ms();
        let mut w = self.lock();
        match inbound {
            Inbound::Bytes(bytes) => w.bytes(ms, bytes),
            Inbound::Message(message) | Inbound::MessageFor { message, .. } => {
                w.server_line(ms, message, true)
            }
            Inbound::Closed(_) => {
                w.tail(ms);
                if !w.ended {
                    w.ended = true;
                    w.write(format!(". {ms} end\n").as_bytes());
                }
            }
            other => {
                let what = match other {
                    Inbound::SessionExpired { .. } => "the HTTP session expired",
                    Inbound::Oversized { .. } => "a message over the transport's limit",
                    Inbound::Authorizing { .. } | Inbound::Authorized { .. } => "authorization",
                    Inbound::Undelivered { .. } => "a message not delivered",
                    Inbound::Failed { .. } | Inbound::Unreachable { .. } => "a failed request",
                    _ => "a transport event",
                };
                w.write(format!("# {ms} not recorded: {what}\n").as_bytes());
            }
        }
    }
}

impl Writer {
    fn write(&mut self, line: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.out.write_all(line) {
            self.error = Some(e);
        }
    }

    /// A line the server printed (`line_end`: it ended in `\n`, not included).
    fn server_line(&mut self, ms: u128, line: &[u8], line_end: bool) {
        let mut out = Vec::with_capacity(line.len() + 24);
        if line_end && verbatim(line) {
            out.extend_from_slice(format!("< {ms} ").as_bytes());
            out.extend_from_slice(line);
        } else {
            out.extend_from_slice(format!("<~ {ms} ").as_bytes());
            out.extend_from_slice(escape(line).as_bytes());
            if line_end {
                out.extend_from_slice(b"\\n");
            }
        }
        out.push(b'\n');
        self.write(&out);
    }

    /// A piece of the server's byte stream: every line it completes is written.
    fn bytes(&mut self, ms: u128, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = memchr::memchr(b'\n', bytes);
            let piece = &bytes[..end.unwrap_or(bytes.len())];
            if !self.skipping {
                if self.partial.len() + piece.len() > self.limit {
                    let note = format!(
                        "# {ms} not recorded: a line of more than {} bytes\n",
                        self.limit
                    );
                    self.write(note.as_bytes());
                    self.partial = Vec::new();
                    self.skipping = true;
                } else {
                    self.partial.extend_from_slice(piece);
                }
            }
            let Some(end) = end else { return };
            if !self.skipping {
                let line = std::mem::take(&mut self.partial);
                self.server_line(ms, &line, true);
            }
            self.skipping = false;
            bytes = &bytes[end + 1..];
        }
    }

    /// The server's last bytes, that no line end followed.
    fn tail(&mut self, ms: u128) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.server_line(ms, &line, false);
        }
        self.skipping = false;
    }
}

/// A transport that writes what crosses it to a [`Recorder`]: every message sent, every line
/// received (see the [format](super#the-format-version-1)). Everything else is the inner
/// transport's. A client that records pays one write per message; one that does not has no
/// wrapper at all.
pub struct Recording<T> {
    inner: T,
    recorder: Arc<Recorder>,
}

impl<T: Transport> Recording<T> {
    /// `inner`, recorded by `recorder`.
    pub fn new(inner: T, recorder: Arc<Recorder>) -> Self {
        Recording { inner, recorder }
    }

    /// The transport recorded.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The recorder.
    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }
}

impl<T: Transport> Transport for Recording<T> {
    fn send(&self, message: Transmit) -> Result<(), Error> {
        let payload = message.payload.clone();
        self.recorder.sent(&payload, || self.inner.send(message))
    }
    fn send_batched(&self, message: Transmit) -> Result<bool, Error> {
        let payload = message.payload.clone();
        self.recorder
            .sent(&payload, || self.inner.send_batched(message))
    }
    fn flush(&self) {
        self.inner.flush()
    }
    fn try_recv(&self) -> Option<Inbound> {
        let inbound = self.inner.try_recv()?;
        self.recorder.received(&inbound);
        Some(inbound)
    }
    fn ready(&self) -> BoxFuture<'_, ()> {
        self.inner.ready()
    }
    fn close(&self) -> BoxFuture<'_, Result<(), Error>> {
        self.inner.close()
    }
    fn kind(&self) -> mcp_proto::TransportKind {
        self.inner.kind()
    }
    /// A look that finds nothing records nothing: as cheap as the inner transport's.
    fn busy_poll(&self) -> bool {
        self.inner.busy_poll()
    }
    fn set_frame_limit(&self, limit: usize) {
        self.recorder.lock().limit = limit;
        self.inner.set_frame_limit(limit)
    }
    fn pid(&self) -> Option<u32> {
        self.inner.pid()
    }
    fn stderr_tail(&self) -> Option<String> {
        self.inner.stderr_tail()
    }
    fn ended(&self) -> Option<Error> {
        self.inner.ended()
    }
    fn input_read(&self) -> Option<u64> {
        self.inner.input_read()
    }
    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose bytes the test reads afterwards.
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn secrets_leave_the_command_line() {
        let header = Header::stdio(
            "server",
            [
                "--api-key",
                "abc123",
                "--token=xyz",
                "GITHUB_TOKEN=ghp_0123456789abcdef",
                "sk-0123456789abcdefghij",
                "https://user:pw@example.com/mcp?access_token=t0k&page=2",
                "--port",
                "8080",
                "--verbose",
                "plain",
            ],
        );
        assert_eq!(
            header.server,
            [
                "server",
                "--api-key",
                "<redacted>",
                "--token=<redacted>",
                "GITHUB_TOKEN=<redacted>",
                "<redacted>",
                "https://%3Credacted%3E@example.com/mcp?access_token=%3Credacted%3E&page=2",
                "--port",
                "8080",
                "--verbose",
                "plain",
            ]
        );
        let line = header.line();
        for secret in ["abc123", "xyz", "ghp_", "sk-", "pw@", "t0k"] {
            assert!(!line.contains(secret), "{secret} in {line}");
        }
    }

    #[test]
    fn lines_are_cut_where_the_server_ended_them() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let r = Recorder::new(Shared(out.clone()), &Header::stdio("s", [""; 0])).unwrap();
        r.lock().limit = 32;
        for piece in [
            &b"{\"a\""[..],
            b":1}\nnot json\r\n{\"b\":",
            b"2}\n",
            b"\xff",
        ] {
            r.received(&Inbound::Bytes(piece.to_vec().into()));
        }
        r.received(&Inbound::Bytes(vec![b'x'; 40].into()));
        r.received(&Inbound::Bytes(b"x\n{}\n".to_vec().into()));
        r.received(&Inbound::Closed(None));
        r.received(&Inbound::Closed(None));
        r.finish().unwrap();
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let body: Vec<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.split_once(' ').unwrap().0)
            .collect();
        assert_eq!(body, ["<", "<~", "<", "#", "<", "."], "{text}");
        assert!(text.contains(" not json\\r\\n\n"), "{text}");
        assert!(text.contains(" {\"b\":2}\n"), "{text}");
    }

    #[test]
    fn a_message_the_transport_refused_is_not_recorded_as_sent() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let r = Recorder::new(Shared(out.clone()), &Header::stdio("s", [""; 0])).unwrap();
        let sent = r.sent(br#"{"id":1}"#, || Ok(()));
        assert!(sent.is_ok());
        let refused = r.sent(br#"{"id":2}"#, || -> Result<(), Error> {
            Err(Error::Closed)
        });
        assert!(matches!(refused, Err(Error::Closed)));
        r.finish().unwrap();
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let body: Vec<&str> = text.lines().skip(1).collect();
        assert!(
            body[0].starts_with("> ") && body[0].ends_with(r#"{"id":1}"#),
            "{text}"
        );
        assert!(
            body[1].starts_with("# ") && body[1].contains("refused"),
            "{text}"
        );
        assert!(!text.contains(r#"{"id":2}"#), "{text}");
    }
}
