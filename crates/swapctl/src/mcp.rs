//! `swapctl mcp`: a stdio MCP server for an agent host (docs/mcp.md, "Local agents"). The
//! tools are the server's own (`swapd_mcp`, from its x402 OpenAPI document); each call goes to
//! the remote swapd as its route's request: signed with the partner's API key on `/api/v3`, or
//! on `/api/x402` paid from the wallet key and signed in as the wallet, within the per-call
//! (`--max-payment`) and per-session (`--max-spend-usd`) caps.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::service::RequestContext;
use serde_json::Value;
use swapd_client::x402::{X402Client, offer, payment_required};
use swapd_client::{BusinessClient, ErrorCode};
use swapd_mcp::{Dispatch, HttpAnswer, HttpCall, Refusal, SwapdMcp, ToolTable};

use crate::cli::McpArgs;
use crate::config::Settings;

const X402_PREFIX: &str = "/api/x402";
const BUSINESS_PREFIX: &str = "/api/v3";
/// How long swapd may take to answer one request.
const TIMEOUT: Duration = Duration::from_secs(60);
/// Transport failures retried (every tool request is replay-safe: a GET, or a POST with its
/// Idempotency-Key and, when paid, the same payment).
const ATTEMPTS: usize = 3;

pub async fn run(settings: &Settings, args: McpArgs, x402: bool) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .context("cannot build the HTTP client")?;
    let base = url::Url::parse(&settings.url).context("the server URL")?;
    let document: Value = get_json(&http, &base, "/api/x402/openapi.json").await?;
    let tools = ToolTable::from_openapi(&document)?;
    let signer = if x402 || !settings.has_credentials() {
        if settings.evm_key.is_none() {
            bail!(
                "swapctl mcp needs an API key (SWAPD_API_KEY and SWAPD_API_SECRET) or a wallet \
                 key to pay with (SWAPD_EVM_KEY)"
            );
        }
        let readiness: Value = get_json(&http, &base, X402_PREFIX).await?;
        let decimals = readiness["data"]["payment"]["asset"]["decimals"]
            .as_u64()
            .unwrap_or(6);
        Signer::Wallet {
            client: Box::new(settings.x402()?),
            budget: Budget::new(usd_units(&args.max_spend_usd, decimals)?),
        }
    } else {
        Signer::Key(settings.business()?)
    };
    let remote = Remote { http, base, signer };
    let server = SwapdMcp::new(Arc::new(tools), Arc::new(remote));
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .context("the MCP session did not start")?;
    running.waiting().await.context("the MCP session failed")?;
    Ok(())
}

async fn get_json(http: &reqwest::Client, base: &url::Url, path: &str) -> anyhow::Result<Value> {
    let url = base.join(path)?;
    let response = http
        .get(url.clone())
        .send()
        .await
        .with_context(|| format!("cannot reach swapd at {base}: is it running? (--server)"))?;
    if !response.status().is_success() {
        bail!("{url} answered {}", response.status());
    }
    response
        .json()
        .await
        .with_context(|| format!("{url} is not JSON"))
}

/// `text` US dollars (a decimal string) in atomic units of an asset with `decimals`.
fn usd_units(text: &str, decimals: u64) -> anyhow::Result<u128> {
    let invalid = || anyhow::anyhow!("--max-spend-usd {text}: expected a decimal like 0.50");
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
        || fraction.len() as u64 > decimals
    {
        return Err(invalid());
    }
    let padded = format!("{whole}{fraction:0<width$}", width = decimals as usize);
    padded.parse().map_err(|_| invalid())
}

/// How the calls are authorised.
enum Signer {
    /// The partner's API key, on the Business API.
    Key(BusinessClient),
    /// A wallet on the x402 API: pays and signs in, within the session's budget.
    Wallet {
        client: Box<X402Client>,
        budget: Budget,
    },
}

/// What this session may still spend, in the asset's atomic units.
struct Budget {
    left: Mutex<u128>,
}

impl Budget {
    fn new(units: u128) -> Self {
        Self {
            left: Mutex::new(units),
        }
    }

    /// Takes `amount` from what is left, or says why not.
    fn reserve(&self, amount: u128) -> Result<(), Refusal> {
        let mut left = self.left.lock().expect("budget lock");
        if amount > *left {
            return Err(Refusal::new(
                ErrorCode::QuotaExceeded,
                format!(
                    "this call costs {amount} units and this session may spend {} more \
                     (swapctl mcp --max-spend-usd): nothing was paid",
                    *left
                ),
            ));
        }
        *left -= amount;
        Ok(())
    }

    /// Gives back what a payment that did not settle had taken.
    fn release(&self, amount: u128) {
        *self.left.lock().expect("budget lock") += amount;
    }
}

/// The remote swapd.
struct Remote {
    http: reqwest::Client,
    base: url::Url,
    signer: Signer,
}

impl Dispatch for Remote {
    async fn send(
        &self,
        call: HttpCall,
        _context: &RequestContext<RoleServer>,
    ) -> Result<HttpAnswer, Refusal> {
        match &self.signer {
            Signer::Key(business) => {
                let signed = signed(business, call)?;
                self.exchange(&signed).await
            }
            Signer::Wallet { client, budget } => self.paid(client, budget, call).await,
        }
    }
}

impl Remote {
    /// `call` as it is, then, when it answers what to pay or prove (and the agent brought
    /// neither), once more paid and signed in.
    async fn paid(
        &self,
        client: &X402Client,
        budget: &Budget,
        call: HttpCall,
    ) -> Result<HttpAnswer, Refusal> {
        let first = self.exchange(&call).await?;
        let brought = call
            .headers
            .contains_key(swapd_x402::wire::PAYMENT_SIGNATURE)
            || call.headers.contains_key(swapd_x402::wire::SIGN_IN_WITH_X);
        let required = (!brought && matches!(first.status.as_u16(), 401 | 402))
            .then(|| first.headers.get(swapd_x402::wire::PAYMENT_REQUIRED))
            .flatten()
            .and_then(|v| v.to_str().ok())
            .and_then(payment_required);
        let Some(required) = required else {
            return Ok(first);
        };
        let refused =
            |e: swapd_client::Error| Refusal::new(ErrorCode::PaymentRequired, e.to_string());
        let mut again = call.clone();
        let url = self.url(&call.path_and_query)?;
        if let Some(proof) = client.proof_for(&required, url.as_str()).map_err(refused)? {
            insert(&mut again, swapd_x402::wire::SIGN_IN_WITH_X, &proof)?;
        }
        let mut reserved = 0;
        if let Some(option) = offer(&required) {
            let amount = option.amount.parse::<u128>().map_err(|_| {
                Refusal::new(
                    ErrorCode::PaymentRequired,
                    "the route asks an unreadable amount",
                )
            })?;
            budget.reserve(amount)?;
            reserved = amount;
            match client.payment_for(&required) {
                Ok(payment) => insert(&mut again, swapd_x402::wire::PAYMENT_SIGNATURE, &payment)?,
                Err(error) => {
                    budget.release(reserved);
                    return Err(Refusal::new(ErrorCode::QuotaExceeded, error.to_string()));
                }
            }
        }
        if again.headers.len() == call.headers.len() {
            return Ok(first);
        }
        let answer = self.exchange(&again).await;
        let settled = answer.as_ref().is_ok_and(|a| {
            a.headers.contains_key(swapd_x402::wire::PAYMENT_RESPONSE) && a.status.is_success()
        });
        if reserved > 0 && !settled {
            budget.release(reserved);
        }
        answer
    }

    fn url(&self, path_and_query: &str) -> Result<url::Url, Refusal> {
        self.base.join(path_and_query).map_err(|_| {
            Refusal::new(
                ErrorCode::ValidationFailed,
                "the arguments make no valid URL",
            )
        })
    }

    /// Sends the request, again on a transport failure (up to [`ATTEMPTS`] times).
    async fn exchange(&self, call: &HttpCall) -> Result<HttpAnswer, Refusal> {
        let url = self.url(&call.path_and_query)?;
        let mut failure = String::new();
        for _ in 0..ATTEMPTS {
            let mut request = self
                .http
                .request(call.method.clone(), url.clone())
                .headers(call.headers.clone());
            if let Some(body) = &call.body {
                request = request.body(body.clone());
            }
            match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let headers = response.headers().clone();
                    match response.bytes().await {
                        Ok(body) => {
                            return Ok(HttpAnswer {
                                status,
                                headers,
                                body: body.to_vec(),
                            });
                        }
                        Err(error) => failure = error.to_string(),
                    }
                }
                Err(error) => failure = error.to_string(),
            }
        }
        Err(Refusal::new(
            ErrorCode::ServiceUnavailable,
            format!("swapd did not answer ({failure}); the call may be sent again as it is"),
        ))
    }
}

fn insert(call: &mut HttpCall, name: &'static str, value: &str) -> Result<(), Refusal> {
    let value = value
        .parse()
        .map_err(|_| Refusal::new(ErrorCode::InternalError, "an unsendable header"))?;
    call.headers.insert(name, value);
    Ok(())
}

/// The call on the Business API (`/api/v3` + the same path), signed with the API key.
fn signed(business: &BusinessClient, call: HttpCall) -> Result<HttpCall, Refusal> {
    let (path, query) = call
        .path_and_query
        .split_once('?')
        .unwrap_or((&call.path_and_query, ""));
    let path = format!(
        "{BUSINESS_PREFIX}{}",
        path.strip_prefix(X402_PREFIX).unwrap_or(path)
    );
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let body: Option<Value> = call
        .body
        .as_deref()
        .map(serde_json::from_slice)
        .transpose()
        .map_err(|_| Refusal::new(ErrorCode::InvalidJson, "the arguments make no JSON body"))?;
    let key = call
        .headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok());
    let nonce = swapd_client::new_nonce();
    let signed = business
        .sign(
            call.method.clone(),
            &path,
            &pairs,
            body.as_ref(),
            key,
            &nonce,
            swapd_client::now_secs(),
        )
        .map_err(|e| Refusal::new(ErrorCode::ValidationFailed, e.to_string()))?;
    let mut headers = call.headers;
    for (name, value) in &signed.headers {
        let value = value
            .parse()
            .map_err(|_| Refusal::new(ErrorCode::InternalError, "an unsendable header"))?;
        headers.insert(*name, value);
    }
    Ok(HttpCall {
        method: call.method,
        path_and_query: signed.path_and_query,
        headers,
        body: (!signed.body.is_empty()).then_some(signed.body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_become_atomic_units_exactly() {
        assert_eq!(usd_units("0.5", 6).unwrap(), 500_000);
        assert_eq!(usd_units("2", 6).unwrap(), 2_000_000);
        assert_eq!(usd_units(".25", 2).unwrap(), 25);
        for bad in ["", ".", "1.2345678", "-1", "1e3", "one"] {
            assert!(usd_units(bad, 6).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_budget_is_never_overspent_and_unsettled_payments_come_back() {
        let budget = Budget::new(10);
        budget.reserve(6).unwrap();
        assert_eq!(
            budget.reserve(5).unwrap_err().code,
            ErrorCode::QuotaExceeded
        );
        budget.release(6);
        budget.reserve(10).unwrap();
    }
}
