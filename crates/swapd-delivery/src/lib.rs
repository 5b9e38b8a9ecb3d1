//! Webhook deliveries over HTTP, safe against SSRF (docs/webhooks.md, "Where deliveries may go").
//! Before every connection the URL is checked against the [`UrlPolicy`], the host's addresses are
//! resolved, and every one of them must be allowed; the connection is then pinned to those checked
//! addresses (no second lookup a rebinding DNS server could answer differently). No proxies, no
//! redirects (a 3xx is a failed attempt), a connect timeout and a total timeout.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{NameServerConfigGroup, ResolverConfig, ResolverOpts};
use hickory_resolver::name_server::TokioConnectionProvider;

use reqwest::header::{CONTENT_TYPE, RETRY_AFTER, USER_AGENT};
use swapd_core::webhooks::delivery;
use swapd_core::webhooks::delivery::AttemptOutcome;
use swapd_core::webhooks::url_policy;
use swapd_core::webhooks::url_policy::{Destination, UrlPolicy, UrlProblem};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

pub use swapd_core::webhooks::delivery::{Outgoing, Sent};

/// Sends deliveries under one policy.
#[derive(Clone)]
pub struct Sender {
    policy: UrlPolicy,
    timeout: Duration,
    /// A DNS server asked instead of the system's resolver (`webhooks.dns_server`).
    resolver: Option<Arc<TokioResolver>>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("policy", &self.policy)
            .field("timeout", &self.timeout)
            .field("own_dns_server", &self.resolver.is_some())
            .finish()
    }
}

impl Sender {
    pub fn new(policy: UrlPolicy, timeout: Duration) -> Self {
        Self {
            policy,
            timeout,
            resolver: None,
        }
    }

    /// Resolves hosts with the DNS server at `server` (plain UDP/TCP, no cache: every check
    /// asks again) instead of the system's resolver.
    pub fn with_dns_server(mut self, server: SocketAddr) -> Self {
        let servers = NameServerConfigGroup::from_ips_clear(&[server.ip()], server.port(), true);
        let mut options = ResolverOpts::default();
        options.cache_size = 0;
        options.timeout = RESOLVE_TIMEOUT;
        let resolver = TokioResolver::builder_with_config(
            ResolverConfig::from_parts(None, Vec::new(), servers),
            TokioConnectionProvider::default(),
        )
        .with_options(options)
        .build();
        self.resolver = Some(Arc::new(resolver));
        self
    }

    /// The addresses `host` resolves to now, with `port`.
    async fn resolve(&self, host: &str, port: u16) -> Option<Vec<SocketAddr>> {
        let found: Vec<SocketAddr> = match &self.resolver {
            Some(resolver) => tokio::time::timeout(RESOLVE_TIMEOUT, resolver.lookup_ip(host))
                .await
                .ok()?
                .ok()?
                .iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect(),
            None => tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
                .await
                .ok()?
                .ok()?
                .collect(),
        };
        (!found.is_empty()).then_some(found)
    }

    pub fn policy(&self) -> UrlPolicy {
        self.policy
    }

    /// Checks `url` and resolves its host: the destination and the addresses a delivery would
    /// connect to, every one allowed by the policy.
    pub async fn check(&self, url: &str) -> Result<(Destination, Vec<SocketAddr>), UrlProblem> {
        let destination = url_policy::check_url(url, self.policy)?;
        let addresses = match destination.literal {
            Some(ip) => vec![SocketAddr::new(ip, destination.port)],
            None => self
                .resolve(&destination.host, destination.port)
                .await
                .ok_or_else(|| UrlProblem::Unresolvable(destination.host.clone()))?,
        };
        if let Some(blocked) = addresses
            .iter()
            .find(|a| !url_policy::address_allowed(a.ip(), self.policy))
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
        let span = tracing::info_span!("webhook.delivery", otel.kind = "client");
        let outcome = async {
            match self.check(outgoing.url).await {
                Err(problem) => AttemptOutcome::Failed {
                    status: None,
                    error: format!("destination_blocked: {problem}"),
                    retry_after_secs: None,
                },
                Ok((destination, addresses)) => self.post(&destination, &addresses, outgoing).await,
            }
        }
        .instrument(span)
        .await;
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
            .headers(swapd_http::trace::headers())
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

#[async_trait::async_trait]
impl delivery::Courier for Sender {
    async fn check_url(&self, url: &str) -> Result<(), UrlProblem> {
        self.check(url).await.map(drop)
    }

    async fn send(&self, outgoing: Outgoing<'_>) -> Sent {
        Sender::send(self, outgoing).await
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

    /// A DNS server that answers `A` queries with `answers` in turn (the last one thereafter),
    /// and nothing for other types; its address and a count of the `A` queries it got.
    async fn rebinding_dns_server(
        answers: Vec<std::net::Ipv4Addr>,
    ) -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
        use hickory_proto::op::{Message, MessageType};
        use hickory_proto::rr::{RData, Record, RecordType, rdata::A};
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let address = socket.local_addr().unwrap();
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = asked.clone();
        tokio::spawn(async move {
            let mut buffer = [0u8; 512];
            loop {
                let Ok((length, from)) = socket.recv_from(&mut buffer).await else {
                    return;
                };
                let Ok(query) = Message::from_vec(&buffer[..length]) else {
                    continue;
                };
                let mut response = Message::new();
                response
                    .set_id(query.id())
                    .set_message_type(MessageType::Response)
                    .set_op_code(query.op_code())
                    .set_recursion_desired(query.recursion_desired())
                    .set_recursion_available(true);
                response.add_queries(query.queries().to_vec());
                if let Some(question) = query.queries().first()
                    && question.query_type() == RecordType::A
                {
                    let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let ip = answers[n.min(answers.len() - 1)];
                    response.add_answer(Record::from_rdata(
                        question.name().clone(),
                        0,
                        RData::A(A(ip)),
                    ));
                }
                let _ = socket.send_to(&response.to_vec().unwrap(), from).await;
            }
        });
        (address, asked)
    }

    /// DNS rebinding: the host resolves to a public address when checked, then to a private one.
    /// The first attempt goes only to the address it checked (never asking again); the next
    /// attempt checks again and is blocked without a connection. The private listener never sees
    /// one.
    #[tokio::test]
    async fn a_rebinding_dns_server_never_gets_a_delivery_to_a_private_address() {
        let private = std::net::TcpListener::bind("127.0.0.1:443").expect(
            "listen on 127.0.0.1:443, the port a live delivery uses (the tests run as root)",
        );
        private.set_nonblocking(true).unwrap();
        let (dns, asked) = rebinding_dns_server(vec![
            "93.184.216.34".parse().unwrap(),
            "127.0.0.1".parse().unwrap(),
        ])
        .await;
        let sender = Sender::new(UrlPolicy::Live, Duration::from_millis(500)).with_dns_server(dns);
        let outgoing = Outgoing {
            url: "https://rebinding.example/hook",
            id: "evt_rebind",
            timestamp: 1_700_000_000,
            body: b"{}",
            signature: "v1,x",
        };
        let first = sender.send(outgoing).await;
        let AttemptOutcome::Failed { error, .. } = &first.outcome else {
            panic!("nothing answers at the public address here: {first:?}");
        };
        assert!(!error.starts_with("destination_blocked"), "{error}");
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one lookup per attempt"
        );
        let second = sender.send(outgoing).await;
        let AttemptOutcome::Failed { error, .. } = &second.outcome else {
            panic!("{second:?}");
        };
        assert!(
            error.starts_with("destination_blocked") && error.contains("127.0.0.1"),
            "{error}"
        );
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert!(
            matches!(private.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "a connection reached the private address"
        );
    }
}
