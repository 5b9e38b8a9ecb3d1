//! OpenTelemetry traces (docs/deploy.md, "Traces"): with `telemetry.otlp_endpoint` set, the
//! spans swapd records (each HTTP request, store transaction and upstream call) go to an OTLP
//! collector over HTTP/protobuf, sampled at `telemetry.sample_ratio`, in batches from a bounded
//! queue on the exporter's own thread, so a slow or missing collector never holds up a
//! request. Spans a collector did not take are counted in `otel_spans_dropped_total`. W3C
//! `traceparent` is read on requests and sent on upstream calls (the global propagator).

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider, SpanData, SpanExporter,
};

use crate::config::TelemetryConfig;

/// The metric: spans the collector did not take (it failed, timed out or is down).
pub const SPANS_DROPPED: &str = "otel_spans_dropped_total";

/// The tracer provider while traces are on; dropping it flushes what is queued (bounded by the
/// exporter's timeout).
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown() {
            eprintln!("telemetry: the last spans were not exported: {error}");
        }
    }
}

impl Telemetry {
    /// The provider for `config` (`None`: traces are off), and W3C trace context as the
    /// propagator of every process-wide inject and extract.
    pub fn start(config: &TelemetryConfig) -> anyhow::Result<Option<Self>> {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        let Some(endpoint) = &config.otlp_endpoint else {
            return Ok(None);
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(format!(
                "{}/v1/traces",
                endpoint.as_str().trim_end_matches('/')
            ))
            .with_timeout(Duration::from_millis(config.export_timeout_ms))
            .build()?;
        let batches = BatchSpanProcessor::builder(Counted(exporter))
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_max_queue_size(config.queue_size)
                    .with_scheduled_delay(Duration::from_millis(500))
                    .build(),
            )
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(batches)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                config.sample_ratio,
            ))))
            .with_resource(
                Resource::builder()
                    .with_service_name(config.service_name.clone())
                    .build(),
            )
            .build();
        Ok(Some(Self { provider }))
    }

    /// The tracing layer that turns spans into OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer("swapd"))
    }
}

/// The OTLP exporter, counting the spans of every batch it could not deliver.
#[derive(Debug)]
struct Counted<E>(E);

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let result = self.0.export(batch).await;
        if result.is_err() {
            metrics::counter!(SPANS_DROPPED).increment(spans);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}
