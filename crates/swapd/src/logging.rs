use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::{LogConfig, LogFormat};
use crate::telemetry::Telemetry;

/// Installs the global subscriber: human-readable text or one JSON object per line (with the
/// spans it happens in and their fields: a request's `request_id` and `trace_id`), on stderr;
/// and the OpenTelemetry layer when traces are on. `RUST_LOG`, when set, overrides `log.level` for
/// the logs; traces take every span at `info` and above, whatever the logs show.
pub fn init(config: &LogConfig, telemetry: Option<&Telemetry>) {
    let filter =
        || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.level));
    let ansi = std::io::stderr().is_terminal();
    let text = (config.format == LogFormat::Text).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(ansi)
    });
    let json = (config.format == LogFormat::Json).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .json()
            .flatten_event(true)
    });
    let _ = tracing_subscriber::registry()
        .with(text.with_filter(filter()))
        .with(json.with_filter(filter()))
        .with(telemetry.map(|telemetry| {
            telemetry
                .layer()
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO)
        }))
        .try_init();
}
