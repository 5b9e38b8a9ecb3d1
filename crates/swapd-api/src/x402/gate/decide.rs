//! The gate's decisions, free of I/O: which window a request counts against and what its
//! refusal says, who a payment's signature says pays, what a settlement's answer means, and
//! what a facilitator's failure tells the client.

use swapd_core::store::WindowDecision;
use swapd_types::ErrorCode;
use swapd_x402::siwx::Wallet;
use swapd_x402::wire::{self, PaymentPayload, SettleResponse, X402_VERSION};
use swapd_x402::{Scheme, exact, exact_svm, upto};

const PAID_ATTEMPTS_PER_HOUR: u32 = 60;
const WALLET_READS_PER_MINUTE: u32 = 30;

/// The reason codes facilitators give for an authorization used before (EIP-3009, Permit2).
const NONCE_ALREADY_USED: [&str; 2] = [
    "invalid_exact_evm_nonce_already_used",
    "invalid_upto_evm_nonce_already_used",
];

/// The window a request counts against (docs/x402.md, "Limits").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Limit {
    pub key: String,
    pub window_ms: i64,
    pub per_window: u32,
    pub code: ErrorCode,
    /// What `x-ratelimit-resource` calls it.
    pub name: &'static str,
}

impl Limit {
    /// A paid route counts attempts per client and route an hour; a wallet-bound read counts
    /// reads per client, route and resource (`path`) a minute.
    pub fn of(paid: bool, client: &str, route: &str, path: &str) -> Limit {
        if paid {
            Limit {
                key: format!("paid|{client}|{route}"),
                window_ms: 3_600_000,
                per_window: PAID_ATTEMPTS_PER_HOUR,
                code: ErrorCode::PaidAttemptsExceeded,
                name: "x402-paid-attempts-hour",
            }
        } else {
            Limit {
                key: format!("read|{client}|{route}|{path}"),
                window_ms: 60_000,
                per_window: WALLET_READS_PER_MINUTE,
                code: ErrorCode::WalletReadsExceeded,
                name: "x402-wallet-reads-minute",
            }
        }
    }

    /// What a spent window answers at `now_ms`: the message, and the whole seconds to wait.
    pub fn refusal(&self, decision: &WindowDecision, now_ms: i64) -> (String, u64) {
        let retry_after = ((decision.resets_at_ms - now_ms).max(0) + 999) / 1000;
        let per = if self.window_ms == 60_000 {
            "minute"
        } else {
            "hour"
        };
        (
            format!(
                "at most {} such requests per {per} from this client; retry in {retry_after} s",
                self.per_window
            ),
            retry_after.unsigned_abs(),
        )
    }
}

/// A payment refused before the facilitator is asked: the x402 reason code and our message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refused {
    pub reason: String,
    pub message: &'static str,
}

impl Refused {
    fn new(reason: &str, message: &'static str) -> Self {
        Self {
            reason: reason.into(),
            message,
        }
    }
}

/// Which of the `offered` ways to pay the payment names in its `accepted` (its index), as the
/// reference server matches it; the wallet that pays and what the payment is known by (an
/// EIP-3009 authorization's nonce; a Solana transaction's message hash), from its signature
/// alone (the facilitator verifies everything after), once the payment is for the request at
/// `resource_url`.
pub(super) fn payer<'a>(
    payment: &PaymentPayload,
    offered: impl IntoIterator<Item = &'a wire::PaymentRequirements>,
    resource_url: &str,
) -> Result<(usize, Wallet, String), Refused> {
    if payment.x402_version != X402_VERSION {
        return Err(Refused::new(
            "invalid_x402_version",
            "only x402 version 2 is accepted",
        ));
    }
    let Some((option, requirements)) = offered
        .into_iter()
        .enumerate()
        .find(|(_, requirements)| requirements.matches(&payment.accepted))
    else {
        return Err(Refused::new(
            "No matching payment requirements",
            "the payment's `accepted` is none of our ways to pay: pay exactly as one of PAYMENT-REQUIRED's `accepts` asks",
        ));
    };
    if let Some(resource) = &payment.resource
        && resource.url != resource_url
    {
        return Err(Refused::new(
            "resource_mismatch",
            "the payment was made for another request: replay the identical request it was made for",
        ));
    }
    let unsigned = |reason: String| Refused {
        reason,
        message: "the payment's signature does not verify",
    };
    if requirements.scheme == Scheme::Upto.as_str() {
        return upto::payer(payment, &requirements.network)
            .map(|(payer, nonce)| (option, Wallet::Evm(payer), upto::payment_key(nonce)))
            .map_err(|invalid| unsigned(invalid.reason()));
    }
    if swapd_x402::is_solana(&requirements.network) {
        let (payer, message_hash) =
            exact_svm::payer(payment).map_err(|invalid| unsigned(invalid.reason()))?;
        return Ok((option, Wallet::Solana(payer), message_hash));
    }
    evm_payer(payment, requirements)
        .map(|(payer, nonce)| (option, Wallet::Evm(payer), nonce))
        .map_err(|invalid| unsigned(invalid.reason()))
}

/// The signer of an EIP-3009 authorization, when it is its `from`, and its nonce.
fn evm_payer(
    payment: &PaymentPayload,
    requirements: &wire::PaymentRequirements,
) -> Result<(alloy_primitives::Address, String), exact::Invalid> {
    let payload =
        serde_json::from_value(payment.payload.clone()).map_err(|_| exact::Invalid::Payload)?;
    let authorization = exact::authorization(&payload)?;
    let digest = exact::digest(&authorization, requirements)?;
    let signature: alloy_primitives::Signature = payload
        .signature
        .parse()
        .map_err(|_| exact::Invalid::SignatureFormat)?;
    let payer = signature
        .recover_address_from_prehash(&digest)
        .map_err(|_| exact::Invalid::Signature)?;
    if payer != authorization.from {
        return Err(exact::Invalid::Signature);
    }
    Ok((payer, authorization.nonce.to_string()))
}

/// What a facilitator's settlement answer means for the call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Settlement {
    /// Paid: serve the call.
    Settled(SettleResponse),
    /// Not paid (no money moved): refuse the call, saying why.
    Refused(SettleResponse),
}

/// Reads `settled`, the answer to settling a payment (`again` when an earlier settlement's
/// outcome never came back). What the client sees of it is a reason code, never the
/// facilitator's free text.
pub(crate) fn settlement(mut settled: SettleResponse, again: bool) -> Settlement {
    settled.error_message = None;
    let reason = settled
        .error_reason
        .take()
        .map(|r| reason_code(Some(r), ""))
        .filter(|r| !r.is_empty());
    // Settling again what the earlier attempt settled: the authorization is used, by that
    // attempt (only a transfer to our payTo of exactly the price can use it).
    let settled_before = again
        && reason
            .as_deref()
            .is_some_and(|r| NONCE_ALREADY_USED.contains(&r));
    if settled.success || settled_before {
        settled.success = true;
        Settlement::Settled(settled)
    } else {
        settled.error_reason = Some(reason.unwrap_or_else(|| "settlement_failed".into()));
        Settlement::Refused(settled)
    }
}

/// What a facilitator that could not be asked (or answered nonsense) tells the client, while
/// verifying or `settling`.
pub(super) fn facilitator_failure(
    error: &swapd_x402::FacilitatorError,
    settling: bool,
) -> (ErrorCode, &'static str) {
    match error {
        swapd_x402::FacilitatorError::Unavailable(_) if settling => (
            ErrorCode::ServiceUnavailable,
            "the payment facilitator did not confirm the settlement in time; the call was not \
             executed: send the same request with the same PAYMENT-SIGNATURE (and \
             Idempotency-Key) again: the payment settles at most once and then buys the call",
        ),
        swapd_x402::FacilitatorError::Unavailable(_) => (
            ErrorCode::ServiceUnavailable,
            "the payment facilitator is unavailable; nothing was charged: retry later",
        ),
        swapd_x402::FacilitatorError::BadAnswer(_) => (
            ErrorCode::FacilitatorError,
            "the payment facilitator answered something unusable; the call was not executed",
        ),
    }
}

/// A facilitator's reason as a client may see it: an x402 reason code (`snake_case`), never
/// free text.
pub(super) fn reason_code(reason: Option<String>, fallback: &str) -> String {
    reason
        .filter(|r| {
            (1..=64).contains(&r.len())
                && r.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
        .unwrap_or_else(|| fallback.to_owned())
}

/// The segment of `path` where `template` has `parameter` (templates have no wildcards).
pub(super) fn path_parameter<'p>(template: &str, path: &'p str, parameter: &str) -> &'p str {
    template
        .split('/')
        .zip(path.split('/'))
        .find_map(|(declared, actual)| (declared == parameter).then_some(actual))
        .unwrap_or_default()
}

/// The wallet an owner scope (`wallet:<address>`) names; `None` for an API key's.
pub(super) fn wallet_of_owner(owner: &swapd_core::owner::Owner) -> Option<Wallet> {
    let swapd_core::owner::Owner::Wallet(address) = owner else {
        return None;
    };
    if address.starts_with("0x") {
        address.parse().ok().map(Wallet::Evm)
    } else {
        Some(Wallet::Solana(address.clone()))
    }
}

#[cfg(test)]
mod tests;
