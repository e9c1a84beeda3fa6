//! What comes in, handed out: the session's events to the callers waiting for them (answers and
//! progress in their slots, the handshake's outcome), to the application (warnings, logs, list
//! changes — outside the lock, in order, a panicking callback caught) and to the handlers that
//! answer the server's requests; and a transport's failure to whom the session says it hits.

use super::drive::earlier;
use super::*;

impl ConnState {
    pub(super) fn closed_error(&self) -> Error {
        self.close_reason.clone().unwrap_or(Error::Closed)
    }

    pub(super) fn finish_init(&mut self, outcome: Result<(), Error>) {
        self.init_id = None;
        for w in self.init_waiters.drain(..) {
            let _ = w.try_send(outcome.clone());
        }
    }

    /// Feeds one received item into the session.
    pub(super) fn handle(&mut self, inbound: Inbound, now: Instant) {
        match inbound {
            Inbound::Bytes(bytes) => self.session.handle_bytes(&bytes, now),
            Inbound::Message(message) => self.session.handle_message(&message, now),
            Inbound::MessageFor { wire, message } => {
                self.session.handle_message_for(wire, &message, now)
            }
            Inbound::Oversized { len, limit, id } => {
                self.session.handle_oversized(len, limit, id, now)
            }
            Inbound::Failed { id, error } => {
                let hit = self.session.handle_undeliverable(id, now);
                self.report(hit, error);
            }
            Inbound::Unreachable { id, error } => {
                let hit = self.session.handle_unreachable(id, now);
                self.report(hit, error);
            }
            Inbound::Authorizing { id } => self.session.handle_authorizing(id, now),
            Inbound::Authorized { id } => self.session.handle_authorized(id, now),
            Inbound::Undelivered {
                what,
                request,
                error,
            } => {
                self.warn(Warning::Undelivered {
                    what,
                    reason: error.chain(),
                });
                if let Some(id) = request {
                    let hit = self.session.handle_undeliverable(id, now);
                    self.report(hit, error);
                }
            }
            Inbound::SessionExpired { id, error } => {
                let hit = self.session.handle_expired(id, now);
                self.report(hit, error);
            }
            Inbound::Closed(reason) => {
                if self.close_reason.is_none() {
                    self.close_reason = reason;
                }
                self.session.handle_eof(now);
                // A program that printed only lines that are not JSON-RPC, then ended: every
                // request fails quoting them — one sent after the end was read too, not only
                // those the session failed at the end.
                if let Some(quoted) = self.exited_after_printing() {
                    self.close_reason = Some(quoted);
                }
            }
        }
    }

    /// Hands a transport's error to whom the session says it hits.
    /// The error of a program that ended having printed nothing but lines that are not
    /// JSON-RPC (the session's verdict, [`printed_only_junk`](mcp_proto::Session::printed_only_junk)),
    /// quoted beside how it ended; `None` when that is not what happened.
    fn exited_after_printing(&self) -> Option<Error> {
        let Some(Error::ServerExited { status, stderr }) = &self.close_reason else {
            return None;
        };
        let (printed, more) = self.session.printed_only_junk()?;
        Some(Error::ExitedAfterPrinting {
            status: *status,
            printed: printed.to_owned(),
            more,
            stderr: stderr.clone(),
        })
    }

    pub(super) fn report(&mut self, hit: Casualties, error: Error) {
        if hit.session {
            self.close_reason.get_or_insert(error.clone());
        }
        if let Some(id) = hit.request {
            // A listen whose stream broke: sent again after a backoff.
            self.listen_ended(id, End::Dropped, &error);
            if let Some(w) = self.waiters.get_mut(&id) {
                if w.answer(Err(error.clone())) {
                    self.ready += 1;
                }
            }
            if self.init_id == Some(id) {
                // The handshake cannot complete: say why the transport failed.
                self.finish_init(Err(error));
            }
        }
    }

    /// Keeps a warning among the recent ones and tells the application of it.
    pub(super) fn warn(&mut self, w: Warning) {
        let told = self.on_warning.is_some() || cfg!(feature = "tracing");
        if told && self.deferred_warnings < RECENT_WARNINGS {
            self.deferred_warnings += 1;
            self.defer(Deferred::Warning(w.clone()));
        }
        if self.recent_warnings.len() == RECENT_WARNINGS {
            self.recent_warnings.pop_front();
        }
        self.recent_warnings.push_back(w);
    }

    /// Sends what the session queued and hands its events to whoever waits for them.
    pub(super) fn flush(&mut self, transport: &dyn Transport) {
        self.flush_with(transport, false);
    }

    /// [`flush`](Self::flush); with `batch`, while other callers are about to run
    /// ([`ConnState::ready`]), what is sent may wait for what they send, to go out together (the
    /// caller then writes it itself if nobody did by its next turn: [`Connection::wait`]).
    pub(super) fn flush_with(&mut self, transport: &dyn Transport, batch: bool) {
        loop {
            self.flush_once(transport, batch);
            if !self.listen_dirty {
                break;
            }
            // What the events changed in the listen (the session became ready, a listen
            // ended): its transmits go out on the next turn.
            self.listen_dirty = false;
            let _ = self.listener.poll(&mut self.session, Instant::now());
            self.arm_listen_timer();
        }
        if let Some(wake) = &self.timer_wake {
            let next = self.session.poll_timeout();
            if next.is_some_and(|at| earlier(at, self.timer_armed)) {
                self.timer_armed = next;
                wake.notify(1);
            }
        }
    }

    /// A listen request ended (`how`): the listener decides whether and when it is sent again.
    /// Those waiting for its acknowledgement get `error` when it is not sent again; after a drop
    /// they wait for the next one's (its acknowledgement may also be among what the session has
    /// not handed out yet: a transport's failure is reported before the session's events).
    pub(super) fn listen_ended(&mut self, id: RequestId, how: End, error: &Error) {
        if self.listener.handle_end(id, how, Instant::now()) {
            self.listen_dirty = true;
            if how == End::Dropped {
                return;
            }
            self.listen_waiters.retain(|(w, tx)| {
                if *w <= id {
                    let _ = tx.try_send(Err(error.clone()));
                }
                *w > id
            });
        }
    }

    /// Arms the re-listen timer at the listener's next retry, when it has one and none is armed
    /// for it.
    fn arm_listen_timer(&mut self) {
        let Some(at) = self.listener.poll_timeout() else {
            return;
        };
        if self
            .listen_timer
            .as_ref()
            .is_some_and(|(armed, _)| *armed == at)
        {
            return;
        }
        let me = self.me.clone();
        let task = smol::spawn(async move {
            smol::Timer::at(at).await;
            if let Some(shared) = me.upgrade() {
                let mut st = lock(&shared.state);
                if let Some((_, task)) = st.listen_timer.take() {
                    // This task, running now: let it finish on its own.
                    task.detach();
                }
                st.listen_dirty = true;
                st.flush(&shared.transport);
                if !st.deferred.is_empty() {
                    shared.deliver(st);
                }
            }
        });
        self.listen_timer = Some((at, task));
    }

    fn flush_once(&mut self, transport: &dyn Transport, batch: bool) {
        while let Some(t) = self.session.poll_transmit() {
            let request = match &t.kind {
                mcp_proto::TransmitKind::Request { id, .. } => Some(*id),
                _ => None,
            };
            let sent = if batch && self.ready > 0 {
                transport.send_batched(t).map(|kept| self.held |= kept)
            } else {
                transport.send(t)
            };
            // A request refused because the transport's queue is full fails at once, with the
            // transport's reason (not through the inbound queue, which may be full too). Any
            // other failure means the transport is failing: `try_recv` says why (a server's exit
            // status and stderr say more than the broken pipe).
            match (sent, request) {
                (Err(error), Some(id)) if is_refusal(&error) => {
                    let hit = self.session.handle_undeliverable(id, Instant::now());
                    self.report(hit, error);
                }
                _ => {}
            }
        }
        while let Some(event) = self.session.poll_event() {
            match event {
                Event::Failed(e) => {
                    let error = match (e, &self.close_reason) {
                        // The server ended having printed nothing but lines that are not
                        // JSON-RPC: quoted, beside how it ended. (`ended_on_probe` still lets a
                        // legacy server that read the probe be started again.)
                        (
                            e @ (mcp_proto::SessionError::Closed
                            | mcp_proto::SessionError::Initialize(RequestError::Closed)
                            | mcp_proto::SessionError::EndedOnProbe),
                            Some(Error::ServerExited { .. }),
                        ) if self.exited_after_printing().is_some() => {
                            self.ended_on_probe =
                                matches!(e, mcp_proto::SessionError::EndedOnProbe);
                            self.exited_after_printing()
                                .unwrap_or_else(|| self.closed_error())
                        }
                        (mcp_proto::SessionError::Closed, Some(reason)) => reason.clone(),
                        (
                            mcp_proto::SessionError::Initialize(RequestError::Closed),
                            Some(reason),
                        ) => reason.clone(),
                        // The server ended on the era probe: what the transport knows (its exit
                        // status and stderr) says more than the probe; `ended_on_probe` keeps
                        // the advice to start it again in the legacy era.
                        (mcp_proto::SessionError::EndedOnProbe, reason) => {
                            self.ended_on_probe = true;
                            reason
                                .clone()
                                .unwrap_or(Error::Session(mcp_proto::SessionError::EndedOnProbe))
                        }
                        (e, _) => Error::Session(e),
                    };
                    // Requests kept across a failed restart end with the same cause.
                    self.close_reason.get_or_insert(error.clone());
                    self.finish_init(Err(error));
                }
                Event::Response { id, result } if self.waiters.contains_key(&id) => {
                    let result = result.map_err(|e| match e {
                        RequestError::Closed => self.closed_error(),
                        e => Error::from(e),
                    });
                    // After the progress handed to it: its caller runs their callbacks before
                    // it returns.
                    if let Some(w) = self.waiters.get_mut(&id) {
                        if w.answer(result) {
                            self.ready += 1;
                        }
                    }
                }
                Event::ListChanged(kind) => {
                    self.lists_changed[list_slot(kind)] += 1;
                    if self.on_list_changed.is_some() {
                        self.defer(Deferred::ListChanged(kind));
                    }
                }
                // Only for a URI subscribed to and agreed to: the listener decides, and counts
                // what it drops.
                Event::ResourceUpdated { uri } if !self.listener.admit_update(&uri) => {}
                Event::ResourceUpdated { uri } => {
                    self.resources_updated += 1;
                    if self.on_resource_updated.is_some() {
                        self.defer(Deferred::ResourceUpdated(uri));
                    }
                }
                Event::ServerRequest { ask, request } => self.defer(Deferred::Ask(ask, request)),
                // Dropping the task cancels the handler.
                Event::ServerRequestCancelled { ask } => drop(self.running.remove(&ask)),
                // To the request's own caller, in order and before its answer, whoever read it:
                // its callback runs there, in no other caller's wait.
                Event::Progress { id, progress } => {
                    if let Some(w) = self.waiters.get_mut(&id) {
                        if let Some(queue) = &mut w.progress {
                            if queue.len() < MAX_QUEUED_PROGRESS {
                                queue.push_back(progress);
                                if let Some(waker) = w.waker.take() {
                                    waker.wake();
                                }
                            }
                        }
                    }
                }
                Event::Log(message) if self.on_log.is_some() || cfg!(feature = "tracing") => {
                    self.defer(Deferred::Log(message))
                }
                Event::Closed => {
                    // Nothing more will be answered: whoever waits for the roots is let go.
                    self.roots_waiters.clear();
                    self.listen_waiters.clear();
                    self.listen_timer = None;
                    let error = self.closed_error();
                    for w in self.waiters.values_mut() {
                        if w.answer(Err(error.clone())) {
                            self.ready += 1;
                        }
                    }
                    self.finish_init(Err(error));
                }
                // Tolerated peer misbehaviour: counted in the session's stats, kept, reported.
                Event::Warning(w) => self.warn(w),
                Event::ListenAcknowledged { id, notifications } => {
                    self.listener
                        .handle_acknowledged(id, notifications.as_ref());
                    // A later listen carries what an earlier one (replaced before its
                    // acknowledgement) was sent for.
                    self.listen_waiters.retain(|(w, tx)| {
                        if *w <= id {
                            let _ = tx.try_send(Ok(()));
                        }
                        *w > id
                    });
                }
                Event::Ready => {
                    self.finish_init(Ok(()));
                    self.listen_dirty = true;
                }
                // A listen's end: the server closed it (its answer) or refused it (an error).
                Event::Response { id, result } if self.listener.open() == Some(id) => {
                    let how = match &result {
                        Ok(_) => End::Graceful,
                        // A stream that ended without an answer, or that the server tore down
                        // (`notifications/cancelled` naming it): listened again.
                        Err(RequestError::Closed | RequestError::Cancelled(_)) => End::Dropped,
                        Err(_) => End::Refused,
                    };
                    let error = match result {
                        Ok(_) => Error::Closed,
                        Err(RequestError::Closed) => self.closed_error(),
                        Err(e) => Error::from(e),
                    };
                    self.listen_ended(id, how, &error);
                }
                // A task's new state: whoever waits on it polls now (a notification for a task
                // nobody waits on changes nothing).
                Event::TaskStatus(task) => self.task_waits.notify(&task.task_id),
                // An answer nobody waits for any more (its caller stopped waiting), a log message
                // nobody is told of, and what this client does not act on: the end of a
                // URL-mode elicitation.
                Event::Response { .. } | Event::Log(_) | Event::ElicitationComplete { .. } => {}
                // An event a later core adds (the enum is non-exhaustive): nothing to do until
                // this driver learns of it.
                _ => {}
            }
        }
    }
}

/// Whether a transport refused a message because its outbound queue is full
/// ([`Error::QueueFull`], see [`Transport::send`]), rather than failing for good.
fn is_refusal(error: &Error) -> bool {
    matches!(error, Error::QueueFull { .. })
}

impl ConnState {
    /// Queues something for after the lock; server requests always get in, the rest only up to
    /// [`MAX_DEFERRED`].
    pub(super) fn defer(&mut self, item: Deferred) {
        if self.deferred.len() >= MAX_DEFERRED && !matches!(item, Deferred::Ask(..)) {
            return;
        }
        self.deferred.push_back(item);
    }
}

impl Connection {
    /// Runs what the lock held back, in order: callbacks (a panic in one is caught) and the
    /// start of handlers for server requests.
    pub(super) fn deliver(&self, mut st: MutexGuard<'_, ConnState>) {
        let items = std::mem::take(&mut st.deferred);
        st.deferred_warnings = 0;
        let on_warning = st.on_warning.clone();
        let on_log = st.on_log.clone();
        let on_list_changed = st.on_list_changed.clone();
        let on_resource_updated = st.on_resource_updated.clone();
        let handlers = st.handlers.clone();
        #[cfg(feature = "tracing")]
        let label = st.label.clone();
        drop(st);
        for item in items {
            match item {
                Deferred::Warning(w) => {
                    #[cfg(feature = "tracing")]
                    crate::trace::warning(label.as_deref(), &w);
                    if let Some(WarningCallback(cb)) = &on_warning {
                        quietly(&|| cb(&w));
                    }
                }
                Deferred::Log(m) => {
                    #[cfg(feature = "tracing")]
                    crate::trace::log_message(label.as_deref(), &m);
                    if let Some(LogCallback(cb)) = &on_log {
                        quietly(&|| cb(&m));
                    }
                }
                Deferred::ListChanged(kind) => {
                    if let Some(ListChangedCallback(cb)) = &on_list_changed {
                        quietly(&|| cb(kind));
                    }
                }
                Deferred::ResourceUpdated(uri) => {
                    if let Some(ResourceUpdatedCallback(cb)) = &on_resource_updated {
                        quietly(&|| cb(&uri));
                    }
                }
                Deferred::Ask(ask, request) => self.start_handler(&handlers, ask, request),
            }
        }
    }

    /// Starts the handler that answers server request `ask`, as a task; it answers through the
    /// session when it finishes (a panic answers -32603). The session already checked that a
    /// handler exists for it (the capabilities come from the handlers).
    pub(super) fn start_handler(&self, handlers: &Handlers, ask: AskId, request: ServerRequest) {
        use smol::future::FutureExt;
        let method = request.method();
        let future =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handlers.answer(request)));
        let me = self.me.clone();
        let future = match future {
            Ok(Some(future)) => future,
            outcome => {
                let message = match outcome {
                    Ok(_) => format!("this client has no handler for {method}"),
                    Err(_) => format!("the client's {method} handler panicked"),
                };
                return self.respond(ask, Err(internal(message)));
            }
        };
        let task = smol::spawn(async move {
            let outcome = std::panic::AssertUnwindSafe(future)
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(internal(format!("the client's {method} handler panicked")))
                });
            if let Some(shared) = me.upgrade() {
                shared.respond(ask, outcome);
            }
        });
        let mut st = lock(&self.state);
        // Cancelled meanwhile (between the event and now): drop it at once.
        if st.session.ask_is_open(ask) {
            st.running.insert(ask, task);
        }
    }

    /// A handler finished: its answer goes to the session, which sends it where it belongs.
    pub(super) fn respond(&self, ask: AskId, outcome: Result<Value, RpcError>) {
        let mut st = lock(&self.state);
        if let Some(task) = st.running.remove(&ask) {
            // This is the task running now: let it finish on its own.
            task.detach();
        }
        // An answer refused (not open any more, or invalid) was dealt with by the session.
        let _ = st.session.respond(ask, outcome, Instant::now());
        st.flush(&self.transport);
        if !st.roots_waiters.is_empty() && !st.session.roots_unasked() {
            // The roots' answer is written: whoever waits for it goes on (`Client::roots_listed`).
            for w in st.roots_waiters.drain(..) {
                let _ = w.try_send(());
            }
        }
        if !st.deferred.is_empty() {
            self.deliver(st);
        }
    }
}
