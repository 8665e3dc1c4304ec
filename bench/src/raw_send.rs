//! `raw-send`: how many batched messages the broker stores per second when
//! the client does nothing per message. One SEND_BATCH_MESSAGE body of
//! `--batch-messages` messages (each with its own `UNIQ_KEY`, as a producer
//! sends them) is encoded once and sent again and again on a bare
//! `RemotingClient`, `--inflight` messages (rounded up to whole batches)
//! outstanding, round robin over the topic's queues. The ceiling of any
//! auto-batching producer with batches of that size on this broker; the
//! `produce-batching` scenario runs it beside rmq's producers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_protocol::header::SendMessageRequestHeaderV2;
use rmq_protocol::message::{encode_batch, encode_properties, property};
use rmq_protocol::names::AUTO_CREATE_TOPIC;
use rmq_protocol::{Message, RemotingCommand, RequestCode, ResponseCode, epoch_millis};
use rmq_remoting::{ClientOptions, RemotingClient};
use serde_json::json;

use crate::args::Flags;
use crate::drain::queues_with_addrs;
use crate::error::{BenchError, Result};
use crate::produce::{body, claim_loops};
use crate::stats::{per_second, result_line};
use crate::topic::instance;

/// How long one batch may wait for its answer.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// `raw-send --topic T --count N [--size 1024] [--batch-messages 32] [--inflight 1000]`.
pub(crate) async fn raw_send(flags: &Flags) -> Result<()> {
    let topic: String = flags.required("topic")?;
    let count: u64 = flags.required("count")?;
    let size: usize = flags.get("size", 1024)?;
    let batch: usize = flags.get("batch-messages", 32usize)?.max(1);
    let inflight: usize = flags.get("inflight", 1_000usize)?.max(1);
    let queues = {
        let instance = instance(flags, "bench-raw-send")?;
        let q = queues_with_addrs(&instance, &topic).await?;
        instance.shutdown().await;
        q
    };
    if queues.is_empty() {
        return Err(BenchError::Other(format!("topic {topic} has no queues")));
    }
    let encoded = batch_body(&topic, size, batch)?;
    let per_batch = u64::try_from(batch).unwrap_or(u64::MAX);
    let group = format!("bench_raw_send_{}", std::process::id());
    let client = RemotingClient::new(ClientOptions::default());
    let queues = Arc::new(queues);
    let stored = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let loops = u64::try_from(inflight.div_ceil(batch)).unwrap_or(1);
    let (sender, counted) = (client.clone(), stored.clone());
    claim_loops(loops, count, per_batch, "raw send", move |first| {
        let (client, queues, stored) = (sender.clone(), queues.clone(), counted.clone());
        let (encoded, topic, group) = (encoded.clone(), topic.clone(), group.clone());
        async move {
            let k = usize::try_from(first / per_batch).unwrap_or(0) % queues.len();
            let (mq, addr) = &queues[k];
            let header = SendMessageRequestHeaderV2 {
                producer_group: group,
                topic,
                default_topic: AUTO_CREATE_TOPIC.to_owned(),
                default_topic_queue_nums: 4,
                queue_id: mq.queue_id,
                sys_flag: 0,
                born_timestamp: epoch_millis(std::time::SystemTime::now()),
                flag: 0,
                properties: Some(encode_properties([(property::WAIT, "true")])),
                reconsume_times: Some(0),
                unit_mode: Some(false),
                max_reconsume_times: None,
                batch: Some(true),
                broker_name: Some(mq.broker_name.clone()),
            };
            let request = RemotingCommand::request(RequestCode::SEND_BATCH_MESSAGE, &header)
                .with_body(encoded);
            let response = client
                .invoke(addr, request, SEND_TIMEOUT)
                .await
                .map_err(|source| BenchError::Remoting {
                    what: format!("SEND_BATCH_MESSAGE to {mq}"),
                    source,
                })?;
            if response.response_code() != ResponseCode::SUCCESS {
                return Err(BenchError::Other(format!(
                    "SEND_BATCH_MESSAGE to {mq}: broker answered {:?} {:?}",
                    response.response_code(),
                    response.remark
                )));
            }
            stored.fetch_add(per_batch, Ordering::Relaxed);
            Ok(())
        }
    })
    .await?;
    let elapsed = started.elapsed().as_secs_f64();
    client.shutdown().await;
    let stored = stored.load(Ordering::Relaxed);
    let rate = per_second(stored, elapsed);
    let line = json!({
        "client": "raw-send",
        "mode": "async",
        "count": stored,
        "failed": 0,
        "elapsed_s": elapsed,
        "msgs_per_s": rate,
        "windowed_msgs_per_s": rate,
    });
    println!("{}", result_line(&line));
    Ok(())
}

/// The SEND_BATCH_MESSAGE body of `n` messages of `size` bytes for `topic`, each with its own
/// `UNIQ_KEY` and `WAIT=true` (what a producer's batch carries).
fn batch_body(topic: &str, size: usize, n: usize) -> Result<Bytes> {
    let payload = body(size);
    let msgs: Vec<Message> = (0..n)
        .map(|i| {
            Message::new(topic, payload.clone())
                .with_property(property::UNIQ_KEY, format!("7F00000100002A9F{i:016X}"))
                .with_property(property::WAIT, "true")
        })
        .collect();
    encode_batch(&msgs).map_err(|source| BenchError::Protocol {
        what: "encoding the batch".into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::message::decode_batch;

    #[test]
    fn the_batch_carries_n_messages_with_their_own_ids() {
        let body = batch_body("t", 100, 32).unwrap();
        let msgs = decode_batch(&body, "t").unwrap();
        assert_eq!(msgs.len(), 32);
        let ids: std::collections::HashSet<_> =
            msgs.iter().filter_map(|m| m.unique_key()).collect();
        assert_eq!(ids.len(), 32);
        assert!(
            msgs.iter()
                .all(|m| m.body.len() == 100 && m.wait_store_msg_ok())
        );
    }
}
