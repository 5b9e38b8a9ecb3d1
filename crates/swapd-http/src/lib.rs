//! The outbound HTTP transport swapd's live providers (desks, onchain routes) and chain readers
//! share: one base URL, a timeout on every call, `Retry-After` read, and a bounded retry with
//! backoff for calls that change nothing upstream. A call that opens or changes something is
//! sent once: the caller reconciles instead. What went wrong is said in swapd's words
//! ([`Unreachable`]), never the upstream's.

pub mod trace;

use std::time::Duration;

pub use reqwest;
use tracing::Instrument;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use swapd_core::market::provider::ProviderError;
use swapd_core::offchain::desk::DeskError;

/// Attempts of a read before its last failure is returned.
const READ_ATTEMPTS: u32 = 3;
/// The first wait between attempts; it doubles, and an upstream's `Retry-After` up to
/// [`MAX_WAIT`] replaces it.
const FIRST_WAIT: Duration = Duration::from_millis(200);
const MAX_WAIT: Duration = Duration::from_secs(2);

/// Whether a call may be sent again after a transient failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// Reads nothing but state: retried (rate limits, 5xx, timeouts).
    Read,
    /// Opens or changes something upstream: sent once.
    Write,
}

/// The upstream could not be asked: it timed out, refused the connection, or the exchange broke
/// off. `detail` is swapd's wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    pub detail: String,
}

impl From<Unreachable> for DeskError {
    fn from(unreachable: Unreachable) -> Self {
        DeskError::Unavailable {
            detail: unreachable.detail,
        }
    }
}

impl From<Unreachable> for ProviderError {
    fn from(unreachable: Unreachable) -> Self {
        ProviderError::Unavailable(unreachable.detail)
    }
}

/// An upstream's answer: its status, body and `Retry-After`.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub retry_after: Option<Duration>,
}

impl Answer {
    /// A 2xx answer read by `map`; anything else turned into the upstream's error by `refused`.
    pub fn read<T, E>(
        self,
        map: impl FnOnce(&[u8]) -> Result<T, E>,
        refused: impl FnOnce(&Answer) -> E,
    ) -> Result<T, E> {
        if (200..300).contains(&self.status) {
            map(&self.body)
        } else {
            Err(refused(&self))
        }
    }
}

pub struct Transport {
    /// The upstream's name in swapd's messages (`ChangeNOW`, `LI.FI`).
    upstream: &'static str,
    /// The URL as configured: what an empty path names (a JSON-RPC endpoint).
    root: reqwest::Url,
    /// `root` ending in `/`, so relative paths join under it.
    base: reqwest::Url,
    http: reqwest::Client,
    timeout: Duration,
}

impl Transport {
    /// `base_url` is the upstream's API root (`https://api.changenow.io/v2/`); `headers` go on
    /// every request (the API key).
    pub fn new(
        upstream: &'static str,
        base_url: &str,
        timeout: Duration,
        headers: HeaderMap,
    ) -> Result<Self, String> {
        let root = reqwest::Url::parse(base_url).map_err(|e| format!("{base_url}: {e}"))?;
        let mut base = root.clone();
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let http = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .default_headers(headers)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            upstream,
            root,
            base,
            http,
            timeout,
        })
    }

    /// `GET path?query`.
    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Answer, Unreachable> {
        self.send(Call::Read, || self.http.get(self.url(path)).query(query))
            .await
    }

    /// `POST path` with a JSON body sent exactly as given, and extra headers (a signature). An
    /// empty `path` posts to the URL as configured.
    pub async fn post(
        &self,
        call: Call,
        path: &str,
        body: &str,
        headers: &[(HeaderName, HeaderValue)],
    ) -> Result<Answer, Unreachable> {
        self.send(call, || {
            let mut request = self
                .http
                .post(self.url(path))
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/json; charset=UTF-8",
                )
                .body(body.to_owned());
            for (name, value) in headers {
                request = request.header(name, value);
            }
            request
        })
        .await
    }

    fn url(&self, path: &str) -> reqwest::Url {
        if path.is_empty() {
            return self.root.clone();
        }
        self.base.join(path).expect("relative paths join")
    }

    /// Sends, and for reads sends again after a rate limit, a 5xx or a lost exchange, waiting
    /// between attempts. Other answers (2xx, 4xx) are the caller's to read.
    async fn send(
        &self,
        call: Call,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Answer, Unreachable> {
        let span = tracing::info_span!(
            "upstream",
            upstream = self.upstream,
            write = matches!(call, Call::Write),
            otel.kind = "client",
        );
        self.sent(call, request).instrument(span).await
    }

    async fn sent(
        &self,
        call: Call,
        request: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Answer, Unreachable> {
        let attempts = match call {
            Call::Read => READ_ATTEMPTS,
            Call::Write => 1,
        };
        let mut wait = FIRST_WAIT;
        let mut attempt = 1;
        loop {
            let outcome = self.once(request()).await;
            let retry_after = match &outcome {
                Ok(answer) if answer.status == 429 || answer.status >= 500 => answer.retry_after,
                Err(_) => None,
                Ok(_) => return outcome,
            };
            if attempt == attempts {
                return outcome;
            }
            let pause = retry_after.unwrap_or(wait).min(MAX_WAIT);
            tracing::debug!(
                upstream = self.upstream,
                attempt,
                ?pause,
                "upstream call failed; retrying"
            );
            tokio::time::sleep(pause).await;
            wait = wait.saturating_mul(2);
            attempt += 1;
        }
    }

    async fn once(&self, request: reqwest::RequestBuilder) -> Result<Answer, Unreachable> {
        let failed = |error: reqwest::Error| self.unavailable(&error);
        let response = request
            .headers(trace::headers())
            .timeout(self.timeout)
            .send()
            .await
            .map_err(failed)?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let body = response.bytes().await.map_err(failed)?.to_vec();
        Ok(Answer {
            status,
            body,
            retry_after,
        })
    }

    /// What went wrong, said plainly: timed out, no connection, or the exchange failed.
    fn unavailable(&self, error: &reqwest::Error) -> Unreachable {
        let upstream = self.upstream;
        let detail = if error.is_timeout() {
            format!("{upstream} timed out after {} ms", self.timeout.as_millis())
        } else if error.is_connect() {
            format!("cannot connect to {upstream}")
        } else {
            format!("the exchange with {upstream} failed")
        };
        tracing::warn!(upstream, error = %error, "upstream call failed");
        Unreachable { detail }
    }
}

/// `Retry-After` in seconds (the HTTP-date form is not used by the upstreams swapd calls).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// The headers that carry an upstream's API key under `name` (none when the key is empty),
/// marked sensitive so they are never logged.
pub fn api_key_headers(name: &'static str, api_key: Option<&str>) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    if let Some(api_key) = api_key {
        let mut key = HeaderValue::from_str(api_key)
            .map_err(|_| "the API key holds characters a header cannot carry".to_owned())?;
        key.set_sensitive(true);
        headers.insert(name, key);
    }
    Ok(headers)
}
