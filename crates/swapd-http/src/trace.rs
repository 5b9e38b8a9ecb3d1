//! W3C trace context on HTTP (docs/deploy.md, "Traces"): read from a request's headers, and
//! written into an upstream call's, with the process's propagator (`traceparent`). Without
//! traces turned on, nothing is read or written.

use opentelemetry::propagation::{Extractor, Injector};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tracing_opentelemetry::OpenTelemetrySpanExt;

struct Reading<'a>(&'a HeaderMap);

impl Extractor for Reading<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

struct Writing<'a>(&'a mut HeaderMap);

impl Injector for Writing<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// Makes `span` a child of the trace the request's `traceparent` names, when it names one.
pub fn continue_from(headers: &HeaderMap, span: &tracing::Span) {
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&Reading(headers))
    });
    // A request without trace context starts its own trace: nothing to set.
    let _ = span.set_parent(parent);
}

/// The current span's trace context, as the headers an upstream call carries.
pub fn headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    let context = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut Writing(&mut headers));
    });
    headers
}

/// The current span's trace id in hex, when it is in a sampled trace.
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context
        .is_valid()
        .then(|| span_context.trace_id().to_string())
}
