//! Webhook deliveries over HTTP, safe against SSRF (docs/webhooks.md, "Where deliveries may go").
//! Before every connection the URL is checked against the [`UrlPolicy`], the host's addresses are
//! resolved, and every one of them must be allowed; the connection is then pinned to those checked
//! addresses (no second lookup a rebinding DNS server could answer differently). No proxies, no
//! redirects (a 3xx is a failed attempt), a connect timeout and a total timeout.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use swapd_core::webhooks::{self, AttemptOutcome, Destination, UrlPolicy, UrlProblem};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// One signed delivery to make.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    pub url: &'a str,
    /// The event id (`webhook-id`): the same on every attempt.
    pub id: &'a str,
    /// Unix seconds of this attempt (`webhook-timestamp`).
    pub timestamp: i64,
    pub body: &'a [u8],
    /// `webhook-signature`: `v1,<base64>` per valid secret, space-separated.
    pub signature: &'a str,
}

/// What an attempt came to, and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub outcome: AttemptOutcome,
    pub latency_ms: i64,
}

/// Sends deliveries under one policy.
#[derive(Debug, Clone)]
pub struct Sender {
    policy: UrlPolicy,
    timeout: Duration,
}

impl Sender {
    pub fn new(policy: UrlPolicy, timeout: Duration) -> Self {
        Self { policy, timeout }
    }

    pub fn policy(&self) -> UrlPolicy {
        self.policy
    }

    /// Checks `url` and resolves its host: the destination and the addresses a delivery would
    /// connect to, every one allowed by the policy.
    pub async fn check(&self, url: &str) -> Result<(Destination, Vec<SocketAddr>), UrlProblem> {
        let destination = webhooks::check_url(url, self.policy)?;
        let addresses = match destination.literal {
            Some(ip) => vec![SocketAddr::new(ip, destination.port)],
            None => {
                let lookup = tokio::net::lookup_host((destination.host.as_str(), destination.port));
                let found: Vec<SocketAddr> = tokio::time::timeout(RESOLVE_TIMEOUT, lookup)
                    .await
                    .map_err(|_| UrlProblem::Unresolvable(destination.host.clone()))?
                    .map_err(|_| UrlProblem::Unresolvable(destination.host.clone()))?
                    .collect();
                if found.is_empty() {
                    return Err(UrlProblem::Unresolvable(destination.host.clone()));
                }
                found
            }
        };
        if let Some(blocked) = addresses
            .iter()
            .find(|a| !webhooks::address_allowed(a.ip(), self.policy))
        {
            return Err(UrlProblem::Host(format!(
                "{} resolves to {}, which",
                destination.host,
                blocked.ip()
            )));
        }
        Ok((destination, addresses))
    }

    /// Makes one attempt. A destination the policy refuses fails without any connection.
    pub async fn send(&self, outgoing: Outgoing<'_>) -> Sent {
        let started = Instant::now();
        let outcome = match self.check(outgoing.url).await {
            Err(problem) => AttemptOutcome::Failed {
                status: None,
                error: format!("destination_blocked: {problem}"),
                retry_after_secs: None,
            },
            Ok((destination, addresses)) => self.post(&destination, &addresses, outgoing).await,
        };
        Sent {
            outcome,
            latency_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
        }
    }

    async fn post(
        &self,
        destination: &Destination,
        addresses: &[SocketAddr],
        outgoing: Outgoing<'_>,
    ) -> AttemptOutcome {
        let failed = |error: String| AttemptOutcome::Failed {
            status: None,
            error,
            retry_after_secs: None,
        };
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(self.timeout)
            .https_only(self.policy == UrlPolicy::Live);
        if destination.literal.is_none() {
            // Connect only to the addresses just checked; TLS still names the host.
            builder = builder.resolve_to_addrs(&destination.host, addresses);
        }
        let client = match builder.build() {
            Ok(client) => client,
            Err(error) => return failed(format!("client: {error}")),
        };
        let timestamp = outgoing.timestamp.to_string();
        let response = client
            .post(destination.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(USER_AGENT, "swapd-webhooks/1")
            .header("webhook-id", outgoing.id)
            .header("webhook-timestamp", &timestamp)
            .header("webhook-signature", outgoing.signature)
            .header("X-Webhook-Id", outgoing.id)
            .header("X-Webhook-Timestamp", &timestamp)
            .header("X-Webhook-Signature", outgoing.signature)
            .body(outgoing.body.to_vec())
            .send()
            .await;
        match response {
            Err(error) if error.is_timeout() => failed(format!(
                "timeout: no answer within {} ms",
                self.timeout.as_millis()
            )),
            Err(error) if error.is_connect() => failed(format!("connection failed: {error}")),
            Err(error) => failed(format!("request failed: {error}")),
            // The body is never read: it is not ours to log or to show.
            Ok(response) => {
                let status = response.status();
                if status.is_success() {
                    AttemptOutcome::Delivered {
                        status: status.as_u16(),
                    }
                } else if status == reqwest::StatusCode::GONE {
                    AttemptOutcome::Gone
                } else {
                    AttemptOutcome::Failed {
                        status: Some(status.as_u16()),
                        error: if status.is_redirection() {
                            format!("HTTP {status} (redirects are not followed)")
                        } else {
                            format!("HTTP {status}")
                        },
                        retry_after_secs: response
                            .headers()
                            .get(RETRY_AFTER)
                            .and_then(|v| v.to_str().ok()?.trim().parse().ok()),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn names_resolving_to_loopback_are_refused_in_live_mode_and_allowed_in_sandbox() {
        let live = Sender::new(UrlPolicy::Live, Duration::from_secs(1));
        assert!(matches!(
            live.check("https://localhost/hook").await,
            Err(UrlProblem::Host(_))
        ));
        let sandbox = Sender::new(UrlPolicy::Sandbox, Duration::from_secs(1));
        let (destination, addresses) = sandbox.check("http://localhost:9/hook").await.unwrap();
        assert_eq!(destination.host, "localhost");
        assert!(
            addresses
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 9)
        );
        assert!(matches!(
            sandbox.check("http://no-such-host.invalid/").await,
            Err(UrlProblem::Unresolvable(_))
        ));
    }
}
