//! Spans captured in memory, for the test binaries that check span names and attributes
//! (`#[path = "support/otel.rs"] mod otel;`).

use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Key, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;

/// The exporter every span of this test binary ends in (one global subscriber: the client's
/// tasks run on the runtime's worker threads).
pub(crate) fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let tracer = provider.tracer("rmq-test");
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
        if tracing::subscriber::set_global_default(subscriber).is_err() {
            panic!("this test binary installs the only global subscriber");
        }
        exporter
    })
}

/// The value of the attribute `key` of `span`.
pub(crate) fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    let key = Key::from(key.to_owned());
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| &kv.value)
}
