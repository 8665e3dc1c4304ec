//! `push-child`: a push consumer in its own process, for tests that SIGKILL a consumer.
//!
//! Configured by environment variables (see `rmq_tests_integration::child`): subscribes the group
//! to the topic (`*`, clustering, from the first offset, offsets persisted every second), and
//! appends one line per delivered message to the output file with one `write` per listener call.
//! Runs until killed, or until its stdin closes (then it shuts down cleanly).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rmq_consumer_push::{
    ConsumeContext, ConsumeResult, MessageExt, MessageListener, OrderlyContext, OrderlyListener,
    OrderlyResult, PushConsumer, async_trait,
};
use rmq_protocol::{RequestCode, ResponseCode};
use rmq_testkit::proxy::{FaultProxy, Rule};
use rmq_tests_integration::child::{
    CHILD_POP_INVISIBLE, ChildMode, ChildRecord, ENV_DEAD_TAG, ENV_DELAY_MS, ENV_FAIL_TAG,
    ENV_GROUP, ENV_INSTANCE, ENV_MAX_RECONSUME, ENV_MODE, ENV_NAMESRV, ENV_OUT, ENV_TOPIC,
};
use rmq_tests_integration::consumer::ConsumerSpec;

/// Pause before a message whose send-back failed is consumed again (default 5 s).
const LOCAL_RETRY: Duration = Duration::from_secs(1);

struct ChildListener {
    out: Mutex<File>,
    topic: String,
    fail_tag: Option<String>,
    dead_tag: Option<String>,
    delay: Duration,
    /// Pop mode: record when the call begins.
    record_first: bool,
}

#[async_trait]
impl MessageListener for ChildListener {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut ConsumeContext) -> ConsumeResult {
        if self.record_first {
            self.record(msgs, ctx.queue());
            tokio::time::sleep(self.delay).await;
            return ConsumeResult::Success;
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let mut text = String::new();
        for m in msgs {
            let rec = ChildRecord {
                msg_id: m.msg_id.clone(),
                reconsume_times: m.reconsume_times,
                queue_topic: ctx.queue().topic.clone(),
                queue_id: ctx.queue().queue_id,
                queue_offset: m.queue_offset,
            };
            text.push_str(&rec.line());
            text.push('\n');
        }
        {
            let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(e) = out.write_all(text.as_bytes()) {
                eprintln!("push-child: cannot write the output file: {e}");
                std::process::exit(3);
            }
        }
        // Fail tagged messages pulled from the topic itself (their retries succeed).
        let fail = self.fail_tag.as_deref().is_some_and(|tag| {
            ctx.queue().topic == self.topic && msgs.iter().any(|m| m.tags() == Some(tag))
        });
        // Dead-tagged messages fail on every delivery (they end in the DLQ).
        let dead = self
            .dead_tag
            .as_deref()
            .is_some_and(|tag| msgs.iter().any(|m| m.tags() == Some(tag)));
        if fail || dead {
            ConsumeResult::ReconsumeLater
        } else {
            ConsumeResult::Success
        }
    }
}

impl ChildListener {
    fn record(&self, msgs: &[MessageExt], queue: &rmq_protocol::MessageQueue) {
        let mut text = String::new();
        for m in msgs {
            let rec = ChildRecord {
                msg_id: m.msg_id.clone(),
                reconsume_times: m.reconsume_times,
                queue_topic: queue.topic.clone(),
                queue_id: queue.queue_id,
                queue_offset: m.queue_offset,
            };
            text.push_str(&rec.line());
            text.push('\n');
        }
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = out.write_all(text.as_bytes()) {
            eprintln!("push-child: cannot write the output file: {e}");
            std::process::exit(3);
        }
    }
}

#[async_trait]
impl OrderlyListener for ChildListener {
    async fn consume(&self, msgs: &[MessageExt], ctx: &mut OrderlyContext) -> OrderlyResult {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        self.record(msgs, ctx.queue());
        OrderlyResult::Success
    }
}

fn var(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

async fn run() -> Result<(), String> {
    let namesrv = var(ENV_NAMESRV)?;
    let group = var(ENV_GROUP)?;
    let topic = var(ENV_TOPIC)?;
    let out_path = var(ENV_OUT)?;
    let mode = match std::env::var(ENV_MODE) {
        Ok(m) => ChildMode::parse(&m).ok_or_else(|| format!("{ENV_MODE}={m} is unknown"))?,
        Err(_) => ChildMode::Record,
    };
    let fail_tag = std::env::var(ENV_FAIL_TAG).ok().filter(|t| !t.is_empty());
    let dead_tag = std::env::var(ENV_DEAD_TAG).ok().filter(|t| !t.is_empty());
    let max_reconsume = match std::env::var(ENV_MAX_RECONSUME) {
        Ok(n) => Some(
            n.parse::<i32>()
                .map_err(|e| format!("{ENV_MAX_RECONSUME}={n}: {e}"))?,
        ),
        Err(_) => None,
    };
    let delay = match std::env::var(ENV_DELAY_MS) {
        Ok(ms) => Duration::from_millis(
            ms.parse()
                .map_err(|e| format!("{ENV_DELAY_MS}={ms}: {e}"))?,
        ),
        Err(_) => Duration::ZERO,
    };
    let instance =
        std::env::var(ENV_INSTANCE).unwrap_or_else(|_| format!("child-{}", std::process::id()));

    // In fail-send-back mode every broker call goes through a proxy in this process, which
    // refuses CONSUMER_SEND_MSG_BACK; it dies with the process.
    let proxy = match mode {
        ChildMode::Record | ChildMode::Orderly | ChildMode::Pop => None,
        ChildMode::FailSendBack => {
            let proxy = FaultProxy::start(&namesrv)
                .await
                .map_err(|e| format!("fault proxy: {e}"))?;
            proxy.set_rule(
                RequestCode::CONSUMER_SEND_MSG_BACK,
                Rule::error_with(ResponseCode::SYSTEM_ERROR, "injected by push-child"),
            );
            Some(proxy)
        }
    };
    let namesrv = proxy
        .as_ref()
        .map_or(namesrv, |p| p.namesrv_addr().to_owned());

    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out_path)
        .map_err(|e| format!("open {out_path}: {e}"))?;
    let listener = ChildListener {
        out: Mutex::new(out.try_clone().map_err(|e| e.to_string())?),
        topic: topic.clone(),
        fail_tag,
        dead_tag,
        delay,
        record_first: mode == ChildMode::Pop,
    };
    let mut spec = ConsumerSpec::new(&namesrv, &group, &topic)
        .instance(instance)
        .local_retry_delay(LOCAL_RETRY);
    if let Some(n) = max_reconsume {
        spec = spec.max_reconsume_times(n);
    }
    if mode == ChildMode::Pop {
        spec = spec.pop(CHILD_POP_INVISIBLE);
    }
    let builder = spec.builder();
    let started = if mode == ChildMode::Orderly {
        builder.start_orderly(listener).await
    } else {
        builder.start(listener).await
    };
    let consumer: PushConsumer =
        started.map_err(|e| format!("the consumer does not start: {e}"))?;
    writeln!(out, "#started {}", consumer.client_id()).map_err(|e| e.to_string())?;

    // Until the test process goes away (stdin closes) or kills us.
    let _ = tokio::task::spawn_blocking(|| {
        let mut buf = [0u8; 64];
        while matches!(std::io::stdin().read(&mut buf), Ok(n) if n > 0) {}
    })
    .await;
    consumer
        .shutdown()
        .await
        .map_err(|e| format!("shutdown: {e}"))?;
    if let Some(proxy) = proxy {
        proxy.shutdown().await;
    }
    Ok(())
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("push-child: no tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("push-child: {e}");
            ExitCode::FAILURE
        }
    }
}
