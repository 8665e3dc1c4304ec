//! Check-backs (Java `DefaultMQProducerImpl.checkTransactionState`): the
//! client instance hands CHECK_TRANSACTION_STATE requests to a
//! [`CheckQueue`] (bounded, never blocks the connection's task); a
//! dispatcher runs [`TransactionListener::check`] on at most
//! `check_concurrency` tasks at a time and answers each with
//! END_TRANSACTION (`fromTransactionCheck = true`) to the broker that
//! asked.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmq_client_core::{ProducerHandle, TransactionCheckRequest};
use rmq_protocol::header::EndTransactionRequestHeader;
use rmq_protocol::namespace::Namespace;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::listener::{TransactionListener, TransactionState};

/// Timeout of the END_TRANSACTION write of a check answer (Java: 3 s).
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(3);

/// Sends an END_TRANSACTION header (with an optional remark) to a broker
/// address; failures are the callee's to log.
pub(crate) type Answer = Arc<
    dyn Fn(String, EndTransactionRequestHeader, Option<String>) -> BoxFuture<'static, ()>
        + Send
        + Sync,
>;

/// Settings of the check pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CheckOptions {
    /// Checks running at once.
    pub(crate) concurrency: usize,
    /// Checks waiting for a free task; more are dropped (logged).
    pub(crate) queue_capacity: usize,
    /// Longest a check may take; then it counts as `Unknown`.
    pub(crate) timeout: Duration,
}

/// The handle registered in the client instance for the group: a bounded
/// queue in front of the dispatcher.
pub(crate) struct CheckQueue {
    group: String,
    namespace: Namespace,
    tx: mpsc::Sender<TransactionCheckRequest>,
}

impl fmt::Debug for CheckQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckQueue")
            .field("group", &self.group)
            .field("free", &self.tx.capacity())
            .finish()
    }
}

impl ProducerHandle for CheckQueue {
    fn check_transaction_state(&self, mut request: TransactionCheckRequest) {
        // The listener sees the topic out of the namespace (Java
        // `ClientRemotingProcessor.checkTransactionState`); the answer
        // names the header's topic, as stored.
        self.namespace
            .unwrap_in_place(&mut request.message.message.topic);
        match self.tx.try_send(request) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(r)) => tracing::warn!(
                group = %self.group, msg_id = %r.message.msg_id, broker = %r.broker_addr,
                "transaction check queue full; check dropped (the broker asks again later)"
            ),
            Err(mpsc::error::TrySendError::Closed(r)) => tracing::debug!(
                group = %self.group, msg_id = %r.message.msg_id,
                "transaction producer stopping; check dropped"
            ),
        }
    }
}

/// The dispatcher and the running checks of one transactional producer.
#[derive(Debug)]
pub(crate) struct CheckPool {
    /// Stops taking checks from the queue.
    stop: CancellationToken,
    /// Ends checks still running.
    abort: CancellationToken,
    tasks: TaskTracker,
}

impl CheckPool {
    /// Starts the dispatcher; returns the queue to register in the client
    /// instance. Must be called within a Tokio runtime.
    pub(crate) fn start<A: Send + 'static>(
        group: &str,
        namespace: &Namespace,
        listener: Arc<dyn TransactionListener<A>>,
        options: CheckOptions,
        answer: Answer,
    ) -> (Arc<CheckQueue>, CheckPool) {
        let (tx, rx) = mpsc::channel(options.queue_capacity.max(1));
        let pool = CheckPool {
            stop: CancellationToken::new(),
            abort: CancellationToken::new(),
            tasks: TaskTracker::new(),
        };
        let dispatcher = Dispatcher {
            group: group.to_owned(),
            listener,
            options,
            answer,
            slots: Arc::new(Semaphore::new(options.concurrency.max(1))),
            stop: pool.stop.clone(),
            abort: pool.abort.clone(),
            tasks: pool.tasks.clone(),
        };
        pool.tasks.spawn(dispatcher.run(rx));
        let queue = Arc::new(CheckQueue {
            group: group.to_owned(),
            namespace: namespace.clone(),
            tx,
        });
        (queue, pool)
    }

    /// Stops taking checks (queued ones are dropped: the broker asks again),
    /// waits up to `grace` for running checks to answer, then ends the rest.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.stop.cancel();
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                running = self.tasks.len(),
                "transaction checks still running at shutdown; ended without an answer"
            );
            self.abort.cancel();
            self.tasks.wait().await;
        }
    }

    /// Runs `feed` (what hands checks to the queue, e.g. from a proxy session) beside the
    /// dispatcher, until the pool stops.
    pub(crate) fn spawn_feeder<F>(&self, feed: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {}
                () = feed => {}
            }
        });
    }

    /// Ends everything at once (the producer was dropped).
    pub(crate) fn abort(&self) {
        self.stop.cancel();
        self.abort.cancel();
        self.tasks.close();
    }
}

struct Dispatcher<A: Send + 'static> {
    group: String,
    listener: Arc<dyn TransactionListener<A>>,
    options: CheckOptions,
    answer: Answer,
    slots: Arc<Semaphore>,
    stop: CancellationToken,
    abort: CancellationToken,
    tasks: TaskTracker,
}

impl<A: Send + 'static> Dispatcher<A> {
    async fn run(self, mut rx: mpsc::Receiver<TransactionCheckRequest>) {
        loop {
            // A free slot first: meanwhile the queue holds the backlog.
            let permit = tokio::select! {
                () = self.stop.cancelled() => break,
                p = Arc::clone(&self.slots).acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let request = tokio::select! {
                () = self.stop.cancelled() => break,
                r = rx.recv() => match r {
                    Some(r) => r,
                    None => break,
                },
            };
            let listener = Arc::clone(&self.listener);
            let answer = Arc::clone(&self.answer);
            let group = self.group.clone();
            let timeout = self.options.timeout;
            let abort = self.abort.clone();
            self.tasks.spawn(async move {
                let _slot = permit;
                tokio::select! {
                    () = abort.cancelled() => {}
                    () = check_and_answer(&group, listener.as_ref(), request, timeout, &answer) => {}
                }
            });
        }
        rx.close();
    }
}

/// Runs one check and sends its answer.
async fn check_and_answer<A: Send + 'static>(
    group: &str,
    listener: &dyn TransactionListener<A>,
    request: TransactionCheckRequest,
    timeout: Duration,
    answer: &Answer,
) {
    let (state, remark) = guarded(timeout, listener.check(&request.message)).await;
    if let Some(why) = &remark {
        tracing::error!(group, msg_id = %request.message.msg_id, "transaction check failed: {why}; answering unknown");
    }
    tracing::debug!(group, msg_id = %request.message.msg_id, %state, broker = %request.broker_addr, "transaction check answered");
    let header = check_answer(group, &request, state);
    answer(request.broker_addr, header, remark).await;
}

/// Runs a listener call with a timeout, catching a panic: either counts as
/// [`TransactionState::Unknown`], with the reason as the second value.
pub(crate) async fn guarded<F>(timeout: Duration, call: F) -> (TransactionState, Option<String>)
where
    F: Future<Output = TransactionState>,
{
    match tokio::time::timeout(timeout, AssertUnwindSafe(call).catch_unwind()).await {
        Ok(Ok(state)) => (state, None),
        Ok(Err(panic)) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic payload".to_owned());
            (TransactionState::Unknown, Some(format!("panicked: {text}")))
        }
        Err(_) => (
            TransactionState::Unknown,
            Some(format!("timed out after {timeout:?}")),
        ),
    }
}

/// The END_TRANSACTION header answering a check (Java
/// `processTransactionState`): the check's offsets, ids, topic and broker
/// name; `msgId` is the message's `UNIQ_KEY` (else its offset id).
pub(crate) fn check_answer(
    group: &str,
    request: &TransactionCheckRequest,
    state: TransactionState,
) -> EndTransactionRequestHeader {
    EndTransactionRequestHeader {
        producer_group: group.to_owned(),
        tran_state_table_offset: request.header.tran_state_table_offset,
        commit_log_offset: request.header.commit_log_offset,
        commit_or_rollback: state.commit_or_rollback(),
        from_transaction_check: Some(true),
        msg_id: request.message.msg_id.clone(),
        transaction_id: request.header.transaction_id.clone(),
        topic: request.header.topic.clone(),
        broker_name: request.header.broker_name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmq_protocol::header::CheckTransactionStateRequestHeader;
    use rmq_protocol::{Message, MessageExt};
    use tokio::sync::Notify;

    use super::*;

    type Answers = Arc<Mutex<Vec<(String, EndTransactionRequestHeader, Option<String>)>>>;

    fn recording() -> (Answer, Answers, Arc<Notify>) {
        let answers: Answers = Arc::default();
        let notify = Arc::new(Notify::new());
        let (a, n) = (answers.clone(), notify.clone());
        let answer: Answer = Arc::new(move |addr, header, remark| {
            a.lock().unwrap().push((addr, header, remark));
            n.notify_one();
            Box::pin(async {})
        });
        (answer, answers, notify)
    }

    fn request(id: &str, body: &str) -> TransactionCheckRequest {
        TransactionCheckRequest {
            broker_addr: "b:1".into(),
            header: CheckTransactionStateRequestHeader {
                topic: Some("T".into()),
                tran_state_table_offset: 3,
                commit_log_offset: 99,
                msg_id: Some(id.into()),
                transaction_id: Some(id.into()),
                offset_msg_id: None,
                broker_name: Some("broker-a".into()),
            },
            message: MessageExt {
                message: Message::new("T", body.to_owned()),
                msg_id: id.into(),
                ..MessageExt::default()
            },
        }
    }

    /// Decides by body: "commit", "rollback", "panic", "hang", else unknown;
    /// counts calls and the most running at once.
    #[derive(Default)]
    struct ByBody {
        running: AtomicUsize,
        most: AtomicUsize,
        release: Notify,
    }

    #[async_trait::async_trait]
    impl TransactionListener for ByBody {
        async fn execute(&self, _msg: &Message, _arg: ()) -> TransactionState {
            TransactionState::Unknown
        }
        async fn check(&self, msg: &MessageExt) -> TransactionState {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            let state = match &msg.body[..] {
                b"commit" => TransactionState::Commit,
                b"rollback" => TransactionState::Rollback,
                b"panic" => panic!("check blew up"),
                b"hang" => std::future::pending().await,
                b"wait" => {
                    self.release.notified().await;
                    TransactionState::Commit
                }
                _ => TransactionState::Unknown,
            };
            self.running.fetch_sub(1, Ordering::SeqCst);
            state
        }
    }

    fn options(concurrency: usize, queue_capacity: usize) -> CheckOptions {
        CheckOptions {
            concurrency,
            queue_capacity,
            timeout: Duration::from_secs(5),
        }
    }

    async fn answered(answers: &Answers, notify: &Notify, n: usize) {
        while answers.lock().unwrap().len() < n {
            notify.notified().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn answers_each_check_with_end_transaction() {
        let listener = Arc::new(ByBody::default());
        let (answer, answers, notify) = recording();
        let (queue, pool) =
            CheckPool::start("PG", &Namespace::none(), listener, options(2, 10), answer);
        for (id, body) in [
            ("C", "commit"),
            ("R", "rollback"),
            ("U", "?"),
            ("P", "panic"),
            ("H", "hang"),
        ] {
            queue.check_transaction_state(request(id, body));
        }
        answered(&answers, &notify, 5).await;
        let mut got = answers.lock().unwrap().clone();
        got.sort_by(|a, b| a.1.msg_id.cmp(&b.1.msg_id));
        let states: Vec<(&str, i32, bool)> = got
            .iter()
            .map(|(_, h, r)| (h.msg_id.as_str(), h.commit_or_rollback, r.is_some()))
            .collect();
        assert_eq!(
            states,
            [
                ("C", 8, false),
                ("H", 0, true),
                ("P", 0, true),
                ("R", 12, false),
                ("U", 0, false)
            ]
        );
        let (addr, h, _) = &got[0];
        assert_eq!(addr, "b:1");
        assert_eq!(h.producer_group, "PG");
        assert_eq!(h.tran_state_table_offset, 3);
        assert_eq!(h.commit_log_offset, 99);
        assert_eq!(h.from_transaction_check, Some(true));
        assert_eq!(h.transaction_id.as_deref(), Some("C"));
        assert_eq!(h.topic.as_deref(), Some("T"));
        assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
        assert!(got[1].2.as_deref().unwrap().contains("timed out"));
        assert!(got[2].2.as_deref().unwrap().contains("check blew up"));
        pool.shutdown(Duration::from_secs(1)).await;
    }

    #[tokio::test(start_paused = true)]
    async fn bounded_concurrency_and_queue() {
        let listener = Arc::new(ByBody::default());
        let (answer, answers, notify) = recording();
        let (queue, pool) = CheckPool::start(
            "PG",
            &Namespace::none(),
            listener.clone(),
            options(2, 3),
            answer,
        );
        // Two run, three wait, the rest are dropped.
        for i in 0..2 {
            queue.check_transaction_state(request(&format!("W{i}"), "wait"));
        }
        while listener.running.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for i in 2..8 {
            queue.check_transaction_state(request(&format!("W{i}"), "wait"));
        }
        for _ in 0..8 {
            listener.release.notify_one();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        answered(&answers, &notify, 5).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(answers.lock().unwrap().len(), 5, "3 of 8 dropped");
        assert_eq!(listener.most.load(Ordering::SeqCst), 2);
        pool.shutdown(Duration::from_secs(1)).await;
        // After shutdown the queue drops everything.
        queue.check_transaction_state(request("late", "commit"));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(answers.lock().unwrap().len(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_ends_running_checks_after_the_grace() {
        let listener = Arc::new(ByBody::default());
        let (answer, answers, _notify) = recording();
        let (queue, pool) = CheckPool::start(
            "PG",
            &Namespace::none(),
            listener.clone(),
            CheckOptions {
                timeout: Duration::from_secs(3600),
                ..options(1, 4)
            },
            answer,
        );
        queue.check_transaction_state(request("H", "hang"));
        while listener.running.load(Ordering::SeqCst) < 1 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let started = tokio::time::Instant::now();
        pool.shutdown(Duration::from_secs(2)).await;
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert!(answers.lock().unwrap().is_empty());
    }
}
