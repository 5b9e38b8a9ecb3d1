//! swapd's use cases (docs/architecture.md, "Use cases"): what a caller asks of swapd, decided
//! over the ports of `swapd-core` (store, market, clock) and answered with domain results or an
//! [`Error`]. The HTTP handlers, the hosted order page, the console (and later MCP tools) parse
//! their input, call one function here and respond; none of them calls another surface.
//!
//! A mutation writes its answer with its effect, in one transaction, when the caller holds an
//! Idempotency-Key ([`IdempotencyKey`]); the answer comes back as an [`Answer`].

use std::sync::Arc;

use swapd_core::idempotency::StoredResponse;
use swapd_core::market::Market;
use swapd_core::offchain::follow::LifecycleRules;
use swapd_core::onchain::access::AccessTokens;
use swapd_core::rate_limit::Windows;
use swapd_core::secrets::MasterKey;
use swapd_core::store::IdempotentFinish;
use swapd_core::webhooks::delivery::Courier;
use swapd_core::{Clock, Mode, Store};

pub mod earnings;
mod error;
pub mod input;
pub mod market_intel;
pub mod observed;
pub mod onchain;
pub mod orders;
pub mod quotes;
pub mod routes;
pub mod sandbox;
pub mod scorecards;
pub mod webhooks;

pub use error::Error;

/// What every use case works with: the ports and settings, borrowed from the surface's state.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub store: &'a Arc<dyn Store>,
    pub market: &'a Arc<dyn Market>,
    pub clock: &'a Arc<dyn Clock>,
    pub master_key: &'a MasterKey,
    /// Signs and checks onchain execution access tokens.
    pub access_tokens: &'a AccessTokens,
    pub mode: Mode,
    /// How long new orders wait for their deposit, and how often the engine looks at them.
    pub order_rules: LifecycleRules,
    /// The origin clients reach this server at, for the links it hands out.
    pub public_url: &'a str,
    /// Where webhook deliveries go out (URL checks, test callbacks).
    pub courier: &'a dyn Courier,
    /// The fixed-window budgets (replays a minute).
    pub windows: &'a dyn Windows,
    /// Replays one webhook subscription may ask for per minute.
    pub replays_per_minute: u32,
    /// The operator's fees on every quote (docs/fees.md).
    pub fees: &'a swapd_core::fees::FeePolicy,
    /// The asking partner's markup on the quotes of this request (its API key's).
    pub partner: swapd_core::fees::Markup,
    /// What providers delivered, by which routes are ranked and shown.
    pub observed: &'a observed::ObservedFigures,
}

impl Context<'_> {
    /// The fees this request's quotes ask the providers to carry: the operator's, the
    /// partner's markup, and the share of the affiliate whose code the request gives (refused
    /// when no active affiliate has it).
    pub async fn quote_fees(
        &self,
        affiliate_code: Option<&str>,
    ) -> Result<swapd_core::fees::FeePolicy, Error> {
        let affiliate_share_bps = match affiliate_code {
            None => 0,
            Some(code) if !swapd_core::affiliates::is_code(code) => {
                return Err(Error::invalid(
                    "affiliateCode",
                    "1 to 64 letters, digits, `_` or `-`",
                ));
            }
            Some(code) => match self.store.affiliate(code).await? {
                Some(affiliate) if affiliate.active => affiliate.share_bps,
                _ => {
                    return Err(Error::AffiliateUnknown(format!(
                        "no affiliate has the code `{code}`"
                    )));
                }
            },
        };
        Ok(swapd_core::fees::FeePolicy {
            partner_bps: self.partner.bps,
            affiliate_share_bps,
            recipients: swapd_core::fees::FeeRecipients {
                partner_evm: self.partner.recipient,
                ..self.fees.recipients.clone()
            },
            ..self.fees.clone()
        })
    }
}

/// The Idempotency-Key a mutation's caller holds: the write that makes the change records its
/// answer under it, in the same transaction.
pub trait IdempotencyKey: Sync {
    /// The record a write completes with `answer`.
    fn finish<'a>(&'a self, answer: &'a StoredResponse) -> IdempotentFinish<'a>;
    /// `answer` as recorded when it carries a secret: sealed with the master key, bound to this
    /// key.
    fn sealed(&self, master: &MasterKey, answer: &StoredResponse) -> StoredResponse;
    /// An id that is the same for every execution of this request (`prefix` + 32 hex digits),
    /// for an effect outside the database that a retry must repeat, not duplicate.
    fn stable_id(&self, prefix: &str) -> String;
}

/// What a mutation answers: its status and the success envelope of its data, the form it is
/// recorded in (sealed when it carries a secret), and whether the write that made the change
/// recorded it as the request's idempotent answer (when it did not, the surface records it as
/// any other answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub stored: StoredResponse,
    pub recorded: bool,
}

impl Answer {
    /// `data` in the success envelope, with `status`; not yet recorded.
    pub fn json<T: serde::Serialize>(status: u16, data: &T) -> Result<Self, Error> {
        let body = serde_json::to_vec(&swapd_types::Success::new(data))
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Self {
            status,
            stored: StoredResponse {
                status,
                body: body.clone(),
            },
            body,
            recorded: false,
        })
    }

    /// This answer, recorded sealed under `key` (it carries a secret).
    pub fn sealed(mut self, key: &dyn IdempotencyKey, master: &MasterKey) -> Self {
        self.stored = key.sealed(master, &self.stored);
        self
    }

    /// The record a write completes for `key`, when there is one.
    pub fn finish<'a>(
        &'a self,
        key: Option<&'a dyn IdempotencyKey>,
    ) -> Option<IdempotentFinish<'a>> {
        key.map(|key| key.finish(&self.stored))
    }

    /// This answer, as written with the change (under the key, when there was one).
    pub fn written(mut self, key: Option<&dyn IdempotencyKey>) -> Self {
        self.recorded = key.is_some();
        self
    }
}

/// The caller's object whose id is `text`: a malformed id is not looked up, and it, an unknown
/// id and another principal's object are the same `not_found`.
async fn find_owned<Id, T, Found>(
    text: &str,
    parse: fn(&str) -> Option<Id>,
    not_found: fn() -> Error,
    lookup: impl FnOnce(Id) -> Found,
) -> Result<T, Error>
where
    Found: std::future::Future<Output = Result<Option<T>, swapd_core::StoreError>>,
{
    let Some(id) = parse(text) else {
        return Err(not_found());
    };
    lookup(id).await?.ok_or_else(not_found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use swapd_core::store::KeyHold;

    struct Key;

    impl IdempotencyKey for Key {
        fn finish<'a>(&'a self, answer: &'a StoredResponse) -> IdempotentFinish<'a> {
            IdempotentFinish {
                principal: "key:k",
                key: "idem",
                hold: KeyHold::Lease("lease"),
                response: answer,
            }
        }

        fn sealed(&self, _master: &MasterKey, answer: &StoredResponse) -> StoredResponse {
            StoredResponse {
                status: answer.status,
                body: b"sealed".to_vec(),
            }
        }

        fn stable_id(&self, prefix: &str) -> String {
            format!("{prefix}0")
        }
    }

    #[test]
    fn an_answer_is_the_success_envelope_recorded_only_when_written_under_a_key() {
        let answer = Answer::json(201, &serde_json::json!({"id": 1})).unwrap();
        let body: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(body["data"]["id"], 1, "{body}");
        assert_eq!(answer.stored.body, answer.body);
        assert!(answer.finish(None).is_none());
        assert_eq!(answer.finish(Some(&Key)).map(|f| f.key), Some("idem"));
        assert!(!answer.clone().written(None).recorded);
        assert!(answer.clone().written(Some(&Key)).recorded);

        // A secret is recorded sealed and answered in clear.
        let master = MasterKey::from_hex(&"11".repeat(32)).unwrap();
        let sealed = answer.clone().sealed(&Key, &master);
        assert_eq!(sealed.stored.body, b"sealed");
        assert_eq!(sealed.body, answer.body);
    }

    #[test]
    fn errors_carry_their_stable_code_and_the_field_they_are_about() {
        use swapd_types::ErrorCode;
        let invalid = Error::invalid("toAddress", "is not an address");
        assert_eq!(invalid.code(), ErrorCode::ValidationFailed);
        assert_eq!(invalid.to_string(), "toAddress: is not an address");
        assert_eq!(
            invalid.field_problem(),
            Some(("toAddress", "is not an address".to_owned()))
        );
        let missing =
            Error::Choice(swapd_core::offchain::actions::ChoiceError::RefundAddressMissing);
        assert_eq!(missing.code(), ErrorCode::ValidationFailed);
        assert_eq!(
            missing.field_problem().map(|(f, _)| f),
            Some("refundAddress")
        );
        assert_eq!(Error::OrderNotFound.code(), ErrorCode::OrderNotFound);
        assert_eq!(
            Error::CreateToken(swapd_core::market::routes::RedeemError::Used).code(),
            ErrorCode::CreateTokenUsed
        );
        assert_eq!(Error::OrderNotFound.field_problem(), None);
    }
}
