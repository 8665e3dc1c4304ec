//! [`ProducerConfig`]: the producer's settings with the Java client's
//! defaults (Java `DefaultMQProducer`).

use std::time::Duration;

use rmq_protocol::message::{CompressionType, DEFAULT_COMPRESS_LEVEL, DEFAULT_COMPRESS_OVER};
use rmq_protocol::namespace::Namespace;

use crate::error::{Error, Result};
use crate::validate;

/// The Java client's default producer group, which it refuses to start with
/// (`MixAll.DEFAULT_PRODUCER_GROUP`).
pub use rmq_protocol::names::DEFAULT_PRODUCER_GROUP;

/// The producer's settings. Build it through
/// [`ProducerBuilder`](crate::ProducerBuilder); every getter documents the
/// Java name and default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerConfig {
    pub(crate) group: String,
    pub(crate) send_timeout: Duration,
    pub(crate) retry_times_when_send_failed: u32,
    pub(crate) retry_times_when_send_async_failed: u32,
    pub(crate) retry_another_broker_when_not_store_ok: bool,
    pub(crate) compress_over: usize,
    pub(crate) compress_level: i32,
    pub(crate) compression_type: CompressionType,
    pub(crate) max_message_size: usize,
    pub(crate) default_topic_queue_nums: i32,
    pub(crate) send_latency_fault_enable: bool,
    pub(crate) fail_fast: bool,
    pub(crate) batching: Option<crate::Batching>,
    pub(crate) enable_trace: bool,
    pub(crate) trace_topic: Option<String>,
    /// The client configuration's namespace, over the brokers (set at
    /// start; the group is then wrapped into it).
    pub(crate) namespace: Namespace,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            group: String::new(),
            send_timeout: Duration::from_secs(3),
            retry_times_when_send_failed: 2,
            retry_times_when_send_async_failed: 2,
            retry_another_broker_when_not_store_ok: false,
            compress_over: DEFAULT_COMPRESS_OVER,
            compress_level: DEFAULT_COMPRESS_LEVEL,
            compression_type: CompressionType::Zlib,
            max_message_size: 4 * 1024 * 1024,
            default_topic_queue_nums: 4,
            send_latency_fault_enable: true,
            fail_fast: true,
            batching: None,
            enable_trace: false,
            trace_topic: None,
            namespace: Namespace::none(),
        }
    }
}

impl ProducerConfig {
    /// The namespace the topics and the group are wrapped into over the
    /// brokers (the client configuration's
    /// [`namespace`](rmq_client_core::ClientConfigBuilder::namespace), set
    /// when the producer starts); none by default and through a proxy,
    /// which is told the namespace instead.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Enters `namespace`: the group is wrapped into it (Java
    /// `DefaultMQProducer.start`), and so is every topic sent to.
    pub(crate) fn enter_namespace(&mut self, namespace: &Namespace) {
        namespace.wrap_in_place(&mut self.group);
        self.namespace = namespace.clone();
    }

    /// Whether RocketMQ message trace is on (Java `enableMsgTrace`).
    pub fn enable_trace(&self) -> bool {
        self.enable_trace
    }

    /// The trace topic (Java `customizedTraceTopic`; default
    /// `RMQ_SYS_TRACE_TOPIC`).
    pub fn trace_topic(&self) -> Option<&str> {
        self.trace_topic.as_deref()
    }

    /// The producer group (Java `producerGroup`). Required; groups matter
    /// for transactional producers and for the broker's client list.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// Total time a send may take, retries included (Java
    /// `sendMsgTimeout`). Default: 3 s.
    pub fn send_timeout(&self) -> Duration {
        self.send_timeout
    }

    /// Extra attempts of [`send`](crate::Producer::send) and
    /// [`send_batch`](crate::Producer::send_batch) after a failed one (Java
    /// `retryTimesWhenSendFailed`). Default: 2, i.e. up to 3 attempts.
    pub fn retry_times_when_send_failed(&self) -> u32 {
        self.retry_times_when_send_failed
    }

    /// Extra attempts of [`send_with_callback`](crate::Producer::send_with_callback)
    /// (Java `retryTimesWhenSendAsyncFailed`). Default: 2.
    pub fn retry_times_when_send_async_failed(&self) -> u32 {
        self.retry_times_when_send_async_failed
    }

    /// Whether a send the broker stored with a status other than `SendOk`
    /// (flush or slave timeout, slave not available) is sent again to
    /// another broker (Java `retryAnotherBrokerWhenNotStoreOK`). Default:
    /// `false`.
    pub fn retry_another_broker_when_not_store_ok(&self) -> bool {
        self.retry_another_broker_when_not_store_ok
    }

    /// Bodies of at least this many bytes are compressed; batches never are
    /// (Java `compressMsgBodyOverHowmuch`). Default: 4096.
    pub fn compress_over(&self) -> usize {
        self.compress_over
    }

    /// Compression level (Java `rocketmq.message.compressLevel`): 0–9 for
    /// zlib, the zstd level for zstd, ignored by LZ4. Default: 5.
    pub fn compress_level(&self) -> i32 {
        self.compress_level
    }

    /// Codec for compressed bodies (Java `rocketmq.message.compressType`);
    /// the send header's sysFlag gets `0x1` plus the codec's type bits.
    /// Default: zlib.
    pub fn compression_type(&self) -> CompressionType {
        self.compression_type
    }

    /// Largest body (or encoded batch) accepted, in bytes (Java
    /// `maxMessageSize`). Default: 4 MiB, the broker's default limit.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// Queue count of a topic the broker auto-creates on first send (Java
    /// `defaultTopicQueueNums`). Default: 4.
    pub fn default_topic_queue_nums(&self) -> i32 {
        self.default_topic_queue_nums
    }

    /// Whether brokers whose sends failed or were slow are avoided for a
    /// while (Java `sendLatencyFaultEnable`). Default: `true`.
    pub fn send_latency_fault_enable(&self) -> bool {
        self.send_latency_fault_enable
    }

    /// Whether [`start`](crate::ProducerBuilder::start) fails when no name
    /// server answers (rmq's own, as the consumers'). Default: `true`.
    pub fn fail_fast(&self) -> bool {
        self.fail_fast
    }

    /// Checks every setting.
    /// Auto-batching of concurrent sends, if on
    /// ([`ProducerBuilder::batching`](crate::ProducerBuilder::batching)).
    pub fn batching(&self) -> Option<crate::Batching> {
        self.batching
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(b) = &self.batching {
            b.validate(self.max_message_size)?;
        }
        validate::check_group(&self.group).map_err(Error::Config)?;
        if self.send_timeout.is_zero() {
            return Err(Error::Config("the send timeout must be above zero".into()));
        }
        if self.max_message_size == 0 {
            return Err(Error::Config(
                "the maximum message size must be above zero".into(),
            ));
        }
        if self.default_topic_queue_nums < 1 {
            return Err(Error::Config(format!(
                "default_topic_queue_nums is {}; it must be at least 1",
                self.default_topic_queue_nums
            )));
        }
        let level_ok = match self.compression_type {
            CompressionType::Zlib => (0..=9).contains(&self.compress_level),
            CompressionType::Zstd => (-7..=22).contains(&self.compress_level),
            CompressionType::Lz4 => true,
        };
        if !level_ok {
            return Err(Error::Config(format!(
                "compression level {} is out of range for {} (zlib: 0–9, zstd: -7–22)",
                self.compress_level,
                self.compression_type.name()
            )));
        }
        if !self.compression_type.is_available() {
            return Err(Error::Config(format!(
                "compression type {name} is not in this build: enable the `{feature}` feature \
                 of rmq (or rmq-protocol), or use zlib",
                name = self.compression_type.name(),
                feature = self.compression_type.name().to_ascii_lowercase(),
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_group(group: &str) -> ProducerConfig {
        ProducerConfig {
            group: group.into(),
            ..ProducerConfig::default()
        }
    }

    #[test]
    fn java_defaults() {
        let c = ProducerConfig::default();
        assert_eq!(c.send_timeout(), Duration::from_secs(3));
        assert_eq!(c.retry_times_when_send_failed(), 2);
        assert_eq!(c.retry_times_when_send_async_failed(), 2);
        assert!(!c.retry_another_broker_when_not_store_ok());
        assert_eq!(c.compress_over(), 4096);
        assert_eq!(c.compress_level(), 5);
        assert_eq!(c.compression_type(), CompressionType::Zlib);
        assert_eq!(c.max_message_size(), 4 * 1024 * 1024);
        assert_eq!(c.default_topic_queue_nums(), 4);
        assert!(c.send_latency_fault_enable());
    }

    #[test]
    fn validation() {
        with_group("g").validate().unwrap();
        assert!(with_group("").validate().is_err());
        assert!(with_group("DEFAULT_PRODUCER").validate().is_err());
        assert!(with_group("a b").validate().is_err());
        let bad = |f: fn(&mut ProducerConfig)| {
            let mut c = with_group("g");
            f(&mut c);
            assert!(matches!(c.validate(), Err(Error::Config(_))), "{c:?}");
        };
        bad(|c| c.send_timeout = Duration::ZERO);
        bad(|c| c.max_message_size = 0);
        bad(|c| c.default_topic_queue_nums = 0);
        bad(|c| c.compress_level = 10);
        let mut lz4 = with_group("g");
        lz4.compression_type = CompressionType::Lz4;
        lz4.compress_level = 100;
        lz4.validate().unwrap();
    }
}
