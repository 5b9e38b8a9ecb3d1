//! Onchain execution (docs/onchain.md), without I/O: the execution plan as stored, the status
//! machine an execution follows (`awaiting_user → submitted → pending → done | failed |
//! expired`, never backwards), the access tokens that scope a plan to its principal, and the
//! checks of what a wallet reports (transaction hashes, EIP-712 signatures recovered to their
//! signer).

use crate::amount::Amount;
use crate::fees::{OnchainFee, Payee};
use crate::market::currencies::CurrencyDef;
use crate::market::routes::RouteFee;
use alloy_primitives::{Address, B256, Signature};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
pub use swapd_types::onchain::{ExecutionStatus, Outcome};
use swapd_types::onchain::{
    ExecutionTx, ExecutionView, PlanStep, ReportedSignature, SignatureRequest,
};

/// How long a plan may wait for its report; the transactions' deadlines are the same time.
pub const PLAN_TTL_MS: i64 = 5 * 60 * 1000;
/// How long an access token works: long enough to poll a slow bridge to its end.
pub const ACCESS_TOKEN_TTL_MS: i64 = 24 * 60 * 60 * 1000;
pub const DEFAULT_SLIPPAGE_BPS: u32 = 50;
pub const MAX_SLIPPAGE_BPS: u32 = 5_000;
/// Plans never ask for more signatures than this, so reports are bounded too.
pub const MAX_SIGNATURES: usize = 8;
/// What the access-token key is derived for from the master key, when the operator sets no
/// `x402.access_token_secret`.
pub const ACCESS_TOKEN_KEY_PURPOSE: &str = "execution access tokens";

/// What the wallet reported, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ExecutionReport {
    /// The last transaction step's hash, normalized (lowercase hex on EVM chains).
    TxHash { tx_hash: String },
    /// One signature per signature step, in step order, lowercase hex.
    Signatures { signatures: Vec<SignedStep> },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedStep {
    pub signature_id: String,
    pub purpose: String,
    pub signature: String,
}

/// What a provider says about a reported execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracked {
    /// `submitted`, `pending`, `done` or `failed`.
    pub status: ExecutionStatus,
    pub substatus: Option<String>,
    pub outcome: Option<Outcome>,
    pub tx_hashes: Vec<ExecutionTx>,
    pub received_amount: Option<String>,
    pub received_token: Option<String>,
    /// What reached each fee recipient, in base units of the fees' currency, where the
    /// provider's transactions show it (their `Transfer` logs); empty where they do not.
    pub fees_paid: Vec<(crate::fees::Payee, alloy_primitives::U256)>,
}

/// An execution plan and where its execution stands. Stored whole; `version` guards every
/// update (compare-and-set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionPlan {
    /// `ocx_…`.
    pub id: String,
    /// Caller scope that resolved it (`key:<id>`, `wallet:<address>`).
    pub owner: String,
    pub route_quote_id: String,
    /// Same resolve request, same plan: see [`resolve_key`].
    pub resolve_key: String,
    pub provider: String,
    /// Namespace of the signing wallet.
    pub chain_namespace: String,
    pub wallet_address: String,
    pub recipient: Option<String>,
    pub from_code: String,
    pub to_code: String,
    pub from_amount: String,
    pub expected_output: String,
    pub min_output: String,
    pub slippage_bps: u32,
    pub gasless: bool,
    pub steps: Vec<PlanStep>,
    /// What the provider keeps for later (`swapd_core::provider::BuiltPlan`); never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_state: Option<serde_json::Value>,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,

    pub version: i64,
    pub status: ExecutionStatus,
    pub substatus: Option<String>,
    pub outcome: Option<Outcome>,
    pub report: Option<ExecutionReport>,
    pub reported_at_ms: Option<i64>,
    /// When a gasless report's signatures were passed on to the provider's relayer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relayed_at_ms: Option<i64>,
    pub tx_hashes: Vec<ExecutionTx>,
    pub received_amount: Option<String>,
    pub received_token: Option<String>,
    pub updated_at_ms: i64,
    /// The hosted execution page, its link carrying the plan's page token (docs/order-page.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_url: Option<String>,
    /// When the tracker looks at it next; `None` once terminal.
    pub next_check_at_ms: Option<i64>,
    /// The fees of its route, locked with its terms (docs/fees.md).
    #[serde(default)]
    pub fees: Vec<RouteFee>,
    /// The affiliate whose code its route was quoted with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affiliate_code: Option<String>,
    /// Where the provider pays the fees, when it pays them to addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub onchain_fees: Vec<OnchainFee>,
    /// The parties' fees as the execution's end showed them taken: the realized ledger rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fees_realized: Option<Vec<RouteFee>>,
}

/// Why a report is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error("the plan expired before anything was reported; resolve the route again")]
    PlanExpired,
    #[error("this plan already has another report; each plan executes once")]
    AlreadyReported,
    #[error("{0}")]
    WrongKind(&'static str),
}

/// Whether a report changed the execution or repeated the one it already has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    New,
    Repeated,
}

/// What a new plan is made of: the resolved route card's terms and the steps its provider built.
#[derive(Debug, Clone)]
pub struct NewPlan {
    pub id: String,
    pub owner: String,
    pub route_quote_id: String,
    pub resolve_key: String,
    pub provider: String,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub wallet_address: String,
    pub recipient: Option<String>,
    pub from_amount: Amount,
    pub expected_output: Amount,
    pub min_output: Amount,
    pub slippage_bps: u32,
    pub gasless: bool,
    pub steps: Vec<PlanStep>,
    pub provider_state: Option<serde_json::Value>,
    /// The hosted execution page's link (with its token).
    pub page_url: Option<String>,
    pub now_ms: i64,
    pub expires_at_ms: i64,
    pub fees: Vec<RouteFee>,
    pub affiliate_code: Option<String>,
    pub onchain_fees: Vec<OnchainFee>,
}

impl ExecutionPlan {
    /// A plan awaiting the wallet, at version 1; the tracker expires it if nothing is reported
    /// in time.
    pub fn open(new: NewPlan) -> Self {
        Self {
            id: new.id,
            owner: new.owner,
            route_quote_id: new.route_quote_id,
            resolve_key: new.resolve_key,
            provider: new.provider,
            chain_namespace: new.from.network.chain_namespace().to_owned(),
            wallet_address: new.wallet_address,
            recipient: new.recipient,
            from_code: new.from.code.into(),
            to_code: new.to.code.into(),
            from_amount: new.from_amount.to_string(),
            expected_output: new.expected_output.to_string(),
            min_output: new.min_output.to_string(),
            slippage_bps: new.slippage_bps,
            gasless: new.gasless,
            steps: new.steps,
            provider_state: new.provider_state,
            created_at_ms: new.now_ms,
            expires_at_ms: new.expires_at_ms,
            version: 1,
            status: ExecutionStatus::AwaitingUser,
            substatus: Some(
                if new.gasless {
                    "awaiting_signatures"
                } else {
                    "awaiting_transaction"
                }
                .into(),
            ),
            outcome: None,
            report: None,
            reported_at_ms: None,
            relayed_at_ms: None,
            tx_hashes: Vec::new(),
            received_amount: None,
            received_token: None,
            updated_at_ms: new.now_ms,
            page_url: new.page_url,
            next_check_at_ms: Some(new.expires_at_ms),
            fees: new.fees,
            affiliate_code: new.affiliate_code,
            onchain_fees: new.onchain_fees,
            fees_realized: None,
        }
    }

    /// The signature steps the wallet must sign, in order.
    pub fn signature_requests(&self) -> impl Iterator<Item = &SignatureRequest> {
        self.steps.iter().filter_map(|step| step.signature.as_ref())
    }

    /// Records `report` at `now_ms`: the execution becomes `submitted`. The same report again
    /// is accepted without change (a retried request); any other second report is refused.
    pub fn accept_report(
        &mut self,
        report: ExecutionReport,
        now_ms: i64,
    ) -> Result<Accepted, ReportError> {
        if let Some(existing) = &self.report {
            return if *existing == report {
                Ok(Accepted::Repeated)
            } else {
                Err(ReportError::AlreadyReported)
            };
        }
        if self.status == ExecutionStatus::Expired || now_ms >= self.expires_at_ms {
            return Err(ReportError::PlanExpired);
        }
        match (&report, self.gasless) {
            (ExecutionReport::TxHash { .. }, true) => {
                return Err(ReportError::WrongKind(
                    "this plan is gasless: report the signatures of its signature steps, not a txHash",
                ));
            }
            (ExecutionReport::Signatures { .. }, false) => {
                return Err(ReportError::WrongKind(
                    "this plan's steps are transactions: report the txHash of the last one",
                ));
            }
            _ => {}
        }
        self.report = Some(report);
        self.reported_at_ms = Some(now_ms);
        self.status = ExecutionStatus::Submitted;
        self.substatus = Some("not_indexed".into());
        self.touch(now_ms, Some(now_ms));
        Ok(Accepted::New)
    }

    /// Applies a provider's answer. Statuses only move forward and terminal ones never change,
    /// so a stale or confused answer cannot undo progress. `true` when the execution changed;
    /// otherwise it is only [rescheduled](Self::reschedule) (unless terminal).
    pub fn apply_tracked(&mut self, tracked: Tracked, now_ms: i64, next_check_ms: i64) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        if self.report.is_none() || rank(tracked.status) < rank(self.status) {
            self.reschedule(next_check_ms);
            return false;
        }
        let changed = tracked.status != self.status
            || tracked.substatus != self.substatus
            || tracked.outcome != self.outcome
            || tracked.tx_hashes != self.tx_hashes
            || tracked.received_amount != self.received_amount
            || tracked.received_token != self.received_token;
        if !changed {
            self.reschedule(next_check_ms);
            return false;
        }
        let terminal = tracked.status.is_terminal();
        if tracked.outcome == Some(Outcome::Completed) {
            self.fees_realized = Some(self.realized_fees(&tracked.fees_paid));
        }
        self.status = tracked.status;
        self.substatus = tracked.substatus;
        self.outcome = tracked.outcome;
        self.tx_hashes = tracked.tx_hashes;
        self.received_amount = tracked.received_amount;
        self.received_token = tracked.received_token;
        self.touch(now_ms, (!terminal).then_some(next_check_ms));
        true
    }

    /// The parties' fees a completed execution realized: what reached each fee recipient,
    /// where the chain shows it; otherwise the provider collected what it quoted
    /// (docs/fees.md).
    fn realized_fees(&self, fees_paid: &[(Payee, alloy_primitives::U256)]) -> Vec<RouteFee> {
        let Some(currency) = self
            .fees
            .iter()
            .find(|fee| fee.kind.parse::<crate::fees::Party>().is_ok())
            .and_then(|fee| crate::market::currencies::currency(&fee.currency))
        else {
            return self.fees.clone();
        };
        fees_paid
            .iter()
            .fold(self.fees.clone(), |fees, (payee, units)| {
                let paid = Amount::from_base_units(
                    *units,
                    currency.decimals,
                    crate::amount::Rounding::Down,
                );
                match payee {
                    Payee::Operator => crate::fees::realized_operator_fees(&fees, paid, currency),
                    Payee::Partner => crate::fees::realized_partner_fee(&fees, paid, currency),
                }
            })
    }

    /// Its fees as the ledger files them: as quoted, or as realized.
    pub fn charged(&self, stage: crate::fees::Stage) -> crate::fees::Charged<'_> {
        crate::fees::Charged::at(
            stage,
            (&self.id, &self.owner, self.affiliate_code.as_deref()),
            &self.fees,
            self.fees_realized.as_deref(),
        )
    }

    /// The signatures of a gasless report not yet passed on to the provider's relayer.
    pub fn signatures_to_relay(&self) -> Option<&[SignedStep]> {
        match (&self.report, self.relayed_at_ms) {
            (Some(ExecutionReport::Signatures { signatures }), None) => Some(signatures),
            _ => None,
        }
    }

    /// Records that the relayer has the signatures (and its new state, when it gave one). The
    /// look at the execution that follows in the same pass makes the new version that saves
    /// both.
    pub fn relayed(&mut self, provider_state: Option<serde_json::Value>, now_ms: i64) {
        if provider_state.is_some() {
            self.provider_state = provider_state;
        }
        self.relayed_at_ms = Some(now_ms);
        self.substatus = Some("relayed".into());
        self.updated_at_ms = now_ms;
    }

    /// Ends an execution whose relayer refused its signatures: nothing was submitted.
    pub fn relay_refused(&mut self, now_ms: i64) {
        self.status = ExecutionStatus::Failed;
        self.substatus = Some("relay_refused".into());
        self.touch(now_ms, None);
    }

    /// Expires a plan nothing was reported for once its time is up. `true` when it did.
    pub fn expire_if_due(&mut self, now_ms: i64) -> bool {
        if self.status != ExecutionStatus::AwaitingUser || now_ms < self.expires_at_ms {
            return false;
        }
        self.status = ExecutionStatus::Expired;
        self.substatus = Some("plan_expired".into());
        self.touch(now_ms, None);
        true
    }

    /// Moves the next look to `next_check_ms` without changing the execution (a new version to
    /// save, the same `updated_at`).
    pub fn reschedule(&mut self, next_check_ms: i64) {
        self.version += 1;
        self.next_check_at_ms = Some(next_check_ms);
    }

    fn touch(&mut self, now_ms: i64, next_check_at_ms: Option<i64>) {
        self.version += 1;
        self.updated_at_ms = now_ms;
        self.next_check_at_ms = next_check_at_ms;
    }

    /// The execution as shown at `now_ms` (an unreported plan past its time shows `expired`
    /// even before the tracker has recorded it).
    pub fn view(&self, now_ms: i64) -> ExecutionView {
        let mut shown = self.clone();
        shown.expire_if_due(now_ms);
        ExecutionView {
            execution_plan_id: shown.id,
            execution_provider: shown.provider,
            status: shown.status,
            substatus: shown.substatus,
            terminal: shown.status.is_terminal(),
            outcome: shown.outcome,
            tx_hashes: shown.tx_hashes,
            received_amount: shown.received_amount,
            received_token: shown.received_token,
            from_ccy: shown.from_code,
            to_ccy: shown.to_code,
            from_amount: shown.from_amount,
            expected_output_amount: shown.expected_output,
            min_output_amount: shown.min_output,
            wallet_address: shown.wallet_address,
            recipient_address: shown.recipient,
            expires_at: shown.expires_at_ms / 1000,
            reported_at: shown.reported_at_ms.map(|ms| ms / 1000),
            updated_at: self.updated_at_ms.max(shown.updated_at_ms) / 1000,
            execution_page_url: shown.page_url,
        }
    }
}

fn rank(status: ExecutionStatus) -> u8 {
    match status {
        ExecutionStatus::AwaitingUser => 0,
        ExecutionStatus::Submitted => 1,
        ExecutionStatus::Pending => 2,
        ExecutionStatus::Done | ExecutionStatus::Failed | ExecutionStatus::Expired => 3,
    }
}

/// The identity of a resolve request: one plan per principal, card, wallet and slippage, so
/// resolving the same card twice returns the same plan.
pub fn resolve_key(
    route_quote_id: &str,
    namespace: &str,
    wallet_address: &str,
    slippage_bps: u32,
) -> String {
    let wallet = if namespace == "eip155" {
        wallet_address.to_ascii_lowercase()
    } else {
        wallet_address.to_owned()
    };
    hex::encode(Sha256::digest(format!(
        "{route_quote_id}\n{namespace}\n{wallet}\n{slippage_bps}"
    )))
}

/// Whether two wallet addresses of `namespace` name the same wallet (EVM ignores letter case).
pub fn same_wallet(namespace: &str, a: &str, b: &str) -> bool {
    if namespace == "eip155" {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// A transaction hash as reported, checked for `namespace` and normalized: `0x` + 64 hex on
/// EVM chains (lowercased), a base58 64-byte signature on Solana.
pub fn normalize_tx_hash(namespace: &str, text: &str) -> Result<String, &'static str> {
    match namespace {
        "eip155" => {
            let hex = text
                .strip_prefix("0x")
                .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                .ok_or("an EVM txHash is 0x and 64 hexadecimal digits")?;
            Ok(format!("0x{}", hex.to_ascii_lowercase()))
        }
        "solana" => match bs58::decode(text).into_vec() {
            Ok(bytes) if bytes.len() == 64 && text.len() <= 88 => Ok(text.to_owned()),
            _ => Err("a Solana txHash is the base58 transaction signature (64 bytes)"),
        },
        _ => Err("unknown chain namespace"),
    }
}

/// Why a reported signature does not sign its step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureProblem {
    #[error("expected {expected} signatures (one per signature step), got {got}")]
    Count { expected: usize, got: usize },
    #[error("signature {index}: expected signatureId `{expected}` with purpose `{purpose}`")]
    WrongStep {
        index: usize,
        expected: String,
        purpose: String,
    },
    #[error("signature `{0}` is not a 65-byte 0x-hex signature")]
    Malformed(String),
    #[error("signature `{0}` has a non-canonical (high) s value")]
    NonCanonical(String),
    #[error("signature `{id}` was made by {recovered}, not by the plan's wallet {wallet}")]
    WrongSigner {
        id: String,
        recovered: String,
        wallet: String,
    },
    #[error("signature `{0}` does not match its typed data")]
    Unrecoverable(String),
    #[error("the plan's typed data for `{0}` cannot be hashed")]
    BadTypedData(String),
}

/// Checks that `reported` holds, in order, one signature per signature step of `plan`, each an
/// EIP-712 signature of the step's typed data by the plan's wallet. Returns the normalized
/// report.
pub fn verify_signatures(
    plan: &ExecutionPlan,
    reported: &[ReportedSignature],
) -> Result<Vec<SignedStep>, SignatureProblem> {
    let requests: Vec<&SignatureRequest> = plan.signature_requests().collect();
    if requests.len() != reported.len() {
        return Err(SignatureProblem::Count {
            expected: requests.len(),
            got: reported.len(),
        });
    }
    let wallet: Address = plan
        .wallet_address
        .parse()
        .map_err(|_| SignatureProblem::BadTypedData(plan.wallet_address.clone()))?;
    requests
        .iter()
        .zip(reported)
        .enumerate()
        .map(|(index, (request, signed))| {
            if signed.signature_id != request.signature_id || signed.purpose != request.purpose {
                return Err(SignatureProblem::WrongStep {
                    index,
                    expected: request.signature_id.clone(),
                    purpose: request.purpose.clone(),
                });
            }
            let id = &request.signature_id;
            let hash = typed_data_hash(&request.typed_data)
                .ok_or_else(|| SignatureProblem::BadTypedData(id.clone()))?;
            let recovered = recover_signer(&hash, &signed.signature, id)?;
            if recovered != wallet {
                return Err(SignatureProblem::WrongSigner {
                    id: id.clone(),
                    recovered: recovered.to_checksum(None),
                    wallet: wallet.to_checksum(None),
                });
            }
            Ok(SignedStep {
                signature_id: id.clone(),
                purpose: request.purpose.clone(),
                signature: signed.signature.to_ascii_lowercase(),
            })
        })
        .collect()
}

/// The EIP-712 signing hash of typed data in `eth_signTypedData_v4` JSON.
pub fn typed_data_hash(typed_data: &serde_json::Value) -> Option<B256> {
    let typed: alloy_dyn_abi::TypedData = serde_json::from_value(typed_data.clone()).ok()?;
    typed.eip712_signing_hash().ok()
}

fn recover_signer(hash: &B256, signature: &str, id: &str) -> Result<Address, SignatureProblem> {
    let bytes = signature
        .strip_prefix("0x")
        .and_then(|h| hex::decode(h).ok())
        .filter(|b| b.len() == 65)
        .ok_or_else(|| SignatureProblem::Malformed(id.into()))?;
    let signature =
        Signature::from_raw(&bytes).map_err(|_| SignatureProblem::Malformed(id.into()))?;
    // Contracts (OpenZeppelin ECDSA, USDC's permit) refuse high-s signatures; so do we, which
    // also keeps one signature per (message, key).
    if signature.normalize_s().is_some() {
        return Err(SignatureProblem::NonCanonical(id.into()));
    }
    signature
        .recover_address_from_prehash(hash)
        .map_err(|_| SignatureProblem::Unrecoverable(id.into()))
}

/// Signs and checks `executionAccessToken`s: `v1.<planId>.<expiresAtSecs>.<mac>`, the MAC an
/// HMAC-SHA256 over the plan, its principal and the expiry under the operator's secret. The
/// principal is not in the token, so a token presented by anyone else does not verify.
#[derive(Clone)]
pub struct AccessTokens {
    key: [u8; 32],
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the execution access token is malformed")]
    Malformed,
    #[error("the execution access token was issued for another execution plan")]
    OtherPlan,
    #[error("the execution access token expired; resolve the route again for a new plan")]
    Expired,
    #[error("the execution access token is not valid for this caller")]
    Invalid,
}

impl AccessTokens {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// Keyed by an operator-set secret of any length.
    pub fn from_secret(secret: &str) -> Self {
        let mut digest = Sha256::new();
        digest.update(b"swapd execution access tokens\n");
        digest.update(secret.as_bytes());
        Self::new(digest.finalize().into())
    }

    pub fn issue(&self, plan_id: &str, owner: &str, expires_at_secs: i64) -> String {
        let mac = self.mac(plan_id, owner, expires_at_secs).finalize();
        format!(
            "v1.{plan_id}.{expires_at_secs}.{}",
            URL_SAFE_NO_PAD.encode(mac.into_bytes())
        )
    }

    pub fn verify(
        &self,
        token: &str,
        plan_id: &str,
        owner: &str,
        now_secs: i64,
    ) -> Result<(), TokenError> {
        let mut parts = token.split('.');
        let (Some("v1"), Some(token_plan), Some(expiry), Some(mac), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(TokenError::Malformed);
        };
        let expires_at_secs: i64 = expiry.parse().map_err(|_| TokenError::Malformed)?;
        let mac = URL_SAFE_NO_PAD
            .decode(mac)
            .map_err(|_| TokenError::Malformed)?;
        if token_plan != plan_id {
            return Err(TokenError::OtherPlan);
        }
        // Constant-time comparison (hmac's verify_slice).
        self.mac(plan_id, owner, expires_at_secs)
            .verify_slice(&mac)
            .map_err(|_| TokenError::Invalid)?;
        if now_secs >= expires_at_secs {
            return Err(TokenError::Expired);
        }
        Ok(())
    }

    fn mac(&self, plan_id: &str, owner: &str, expires_at_secs: i64) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(b"swapd execution access token v1\n");
        mac.update(plan_id.as_bytes());
        mac.update(b"\n");
        mac.update(owner.as_bytes());
        mac.update(b"\n");
        mac.update(expires_at_secs.to_string().as_bytes());
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(gasless: bool) -> ExecutionPlan {
        ExecutionPlan {
            id: "ocx_00000000000000000000000000000001".into(),
            owner: "key:a".into(),
            route_quote_id: "rqq_1".into(),
            resolve_key: "k".into(),
            provider: "meridian".into(),
            chain_namespace: "eip155".into(),
            wallet_address: "0x0000000000000000000000000000000000000001".into(),
            recipient: None,
            from_code: "ETH".into(),
            to_code: "USDCETH".into(),
            from_amount: "1".into(),
            expected_output: "3000".into(),
            min_output: "2985".into(),
            slippage_bps: 50,
            gasless,
            steps: Vec::new(),
            provider_state: None,
            created_at_ms: 0,
            expires_at_ms: 1_000,
            version: 1,
            status: ExecutionStatus::AwaitingUser,
            substatus: Some("awaiting_transaction".into()),
            outcome: None,
            report: None,
            reported_at_ms: None,
            relayed_at_ms: None,
            tx_hashes: Vec::new(),
            received_amount: None,
            received_token: None,
            updated_at_ms: 0,
            page_url: None,
            next_check_at_ms: Some(1_000),
            fees: Vec::new(),
            affiliate_code: None,
            onchain_fees: Vec::new(),
            fees_realized: None,
        }
    }

    fn tx(hash: &str) -> ExecutionReport {
        ExecutionReport::TxHash {
            tx_hash: hash.into(),
        }
    }

    fn tracked(status: ExecutionStatus, substatus: &str) -> Tracked {
        Tracked {
            status,
            substatus: Some(substatus.into()),
            outcome: None,
            tx_hashes: Vec::new(),
            received_amount: None,
            received_token: None,
            fees_paid: Vec::new(),
        }
    }

    #[test]
    fn a_completed_execution_realizes_its_fees_from_what_reached_the_recipient() {
        let fee = |kind: &str, amount: &str| RouteFee {
            kind: kind.into(),
            bps: Some("15".into()),
            amount: amount.into(),
            currency: "USDCBASE".into(),
        };
        let done = |fees_paid| Tracked {
            outcome: Some(Outcome::Completed),
            fees_paid,
            ..tracked(ExecutionStatus::Done, "completed")
        };
        let reported = |plan: &mut ExecutionPlan| {
            plan.fees = vec![
                fee("service", "0.045"),
                fee("affiliate", "0.045"),
                fee("partner", "0.03"),
            ];
            plan.accept_report(tx("0xaa"), 10).unwrap();
        };
        let amounts = |plan: &ExecutionPlan| -> Vec<String> {
            let realized = plan.fees_realized.as_ref().expect("realized");
            realized.iter().map(|fee| fee.amount.clone()).collect()
        };

        let mut plan = plan(false);
        reported(&mut plan);
        let paid = |units: u64| alloy_primitives::U256::from(units);
        let fees_paid = vec![
            (Payee::Operator, paid(80_000)),
            (Payee::Partner, paid(29_000)),
        ];
        assert!(plan.apply_tracked(done(fees_paid), 30, 40));
        assert_eq!(
            amounts(&plan),
            ["0.04", "0.04", "0.029"],
            "what the chain showed each recipient, the operator's split as quoted"
        );

        let mut plan = self::plan(false);
        reported(&mut plan);
        assert!(plan.apply_tracked(done(Vec::new()), 30, 40));
        assert_eq!(
            amounts(&plan),
            ["0.045", "0.045", "0.03"],
            "the provider took what it quoted"
        );
    }

    #[test]
    fn a_report_is_accepted_once_and_repeats_are_harmless() {
        let mut plan = plan(false);
        assert_eq!(plan.accept_report(tx("0xa"), 10), Ok(Accepted::New));
        assert_eq!(plan.status, ExecutionStatus::Submitted);
        assert_eq!(plan.version, 2);
        assert_eq!(plan.accept_report(tx("0xa"), 20), Ok(Accepted::Repeated));
        assert_eq!(plan.version, 2);
        assert_eq!(
            plan.accept_report(tx("0xb"), 20),
            Err(ReportError::AlreadyReported)
        );
    }

    #[test]
    fn reports_after_expiry_or_of_the_wrong_kind_are_refused() {
        let mut late = plan(false);
        assert_eq!(
            late.accept_report(tx("0xa"), 1_000),
            Err(ReportError::PlanExpired)
        );
        let mut gasless = plan(true);
        assert!(matches!(
            gasless.accept_report(tx("0xa"), 1),
            Err(ReportError::WrongKind(_))
        ));
        let mut with_tx = plan(false);
        assert!(matches!(
            with_tx.accept_report(
                ExecutionReport::Signatures {
                    signatures: Vec::new()
                },
                1
            ),
            Err(ReportError::WrongKind(_))
        ));
        assert_eq!(with_tx.version, 1);
    }

    #[test]
    fn statuses_only_move_forward_and_terminal_ones_stay() {
        let mut plan = plan(false);
        // Nothing reported: a tracker answer changes nothing.
        assert!(!plan.apply_tracked(tracked(ExecutionStatus::Pending, "x"), 5, 6));
        plan.accept_report(tx("0xa"), 10).unwrap();
        assert!(plan.apply_tracked(
            tracked(ExecutionStatus::Pending, "source_confirming"),
            11,
            12
        ));
        assert!(!plan.apply_tracked(tracked(ExecutionStatus::Submitted, "not_indexed"), 12, 13));
        assert_eq!(plan.status, ExecutionStatus::Pending);
        let (version, updated_at) = (plan.version, plan.updated_at_ms);
        assert!(!plan.apply_tracked(
            tracked(ExecutionStatus::Pending, "source_confirming"),
            13,
            14
        ));
        // No change of the execution: only its next look moves (a save, so a new version).
        assert_eq!(plan.updated_at_ms, updated_at);
        assert_eq!(plan.version, version + 1);
        assert_eq!(plan.next_check_at_ms, Some(14));
        let mut done = tracked(ExecutionStatus::Done, "completed");
        done.outcome = Some(Outcome::Completed);
        assert!(plan.apply_tracked(done, 15, 16));
        assert_eq!(plan.next_check_at_ms, None);
        assert!(!plan.apply_tracked(tracked(ExecutionStatus::Failed, "reverted"), 17, 18));
        assert_eq!(plan.outcome, Some(Outcome::Completed));
    }

    #[test]
    fn gasless_signatures_are_relayed_once_and_a_refusal_ends_the_execution() {
        let mut relayed = plan(true);
        assert_eq!(relayed.signatures_to_relay(), None, "nothing reported yet");
        let signatures = vec![SignedStep {
            signature_id: "sig_1".into(),
            purpose: "order".into(),
            signature: "0x01".into(),
        }];
        relayed
            .accept_report(
                ExecutionReport::Signatures {
                    signatures: signatures.clone(),
                },
                10,
            )
            .unwrap();
        assert_eq!(relayed.signatures_to_relay(), Some(signatures.as_slice()));
        let version = relayed.version;
        relayed.relayed(Some(serde_json::json!({"tradeHash": "0x1"})), 20);
        // Saved by the look that follows in the same pass: one new version for both.
        assert_eq!(relayed.version, version);
        assert_eq!(relayed.signatures_to_relay(), None);
        assert_eq!(relayed.provider_state.as_ref().unwrap()["tradeHash"], "0x1");
        assert_eq!(relayed.substatus.as_deref(), Some("relayed"));

        let mut refused = plan(true);
        refused
            .accept_report(ExecutionReport::Signatures { signatures }, 10)
            .unwrap();
        refused.relay_refused(30);
        assert_eq!(refused.status, ExecutionStatus::Failed);
        assert_eq!(refused.substatus.as_deref(), Some("relay_refused"));
        assert_eq!(refused.next_check_at_ms, None);
        // Only reports carrying signatures are relayed.
        let mut with_tx = plan(false);
        with_tx.accept_report(tx("0xa"), 10).unwrap();
        assert_eq!(with_tx.signatures_to_relay(), None);
    }

    #[test]
    fn unreported_plans_expire_and_show_expired_before_the_tracker_records_it() {
        let mut plan = plan(false);
        assert_eq!(plan.view(999).status, ExecutionStatus::AwaitingUser);
        let view = plan.view(1_000);
        assert_eq!(view.status, ExecutionStatus::Expired);
        assert!(view.terminal);
        assert!(plan.expire_if_due(1_000));
        assert!(!plan.expire_if_due(2_000));
        assert_eq!(
            plan.accept_report(tx("0xa"), 500),
            Err(ReportError::PlanExpired)
        );
    }

    #[test]
    fn resolve_keys_ignore_evm_letter_case_only() {
        let a = resolve_key("rqq_1", "eip155", "0xAbC", 50);
        assert_eq!(a, resolve_key("rqq_1", "eip155", "0xabc", 50));
        assert_ne!(a, resolve_key("rqq_1", "eip155", "0xabc", 51));
        assert_ne!(
            resolve_key("rqq_1", "solana", "Abc", 50),
            resolve_key("rqq_1", "solana", "abc", 50)
        );
    }

    #[test]
    fn tx_hashes_are_checked_per_namespace() {
        let evm = format!("0x{}", "AB".repeat(32));
        assert_eq!(
            normalize_tx_hash("eip155", &evm).unwrap(),
            format!("0x{}", "ab".repeat(32))
        );
        assert!(normalize_tx_hash("eip155", "0x1234").is_err());
        assert!(normalize_tx_hash("eip155", &"ab".repeat(33)).is_err());
        let solana = bs58::encode([7u8; 64]).into_string();
        assert_eq!(normalize_tx_hash("solana", &solana).unwrap(), solana);
        assert!(normalize_tx_hash("solana", &bs58::encode([7u8; 32]).into_string()).is_err());
        assert!(normalize_tx_hash("solana", &evm).is_err());
    }

    /// The example of EIP-712 itself (`Mail` from Cow to Bob, signed with keccak256("cow")).
    fn eip712_mail() -> serde_json::Value {
        serde_json::json!({
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"}
                ],
                "Person": [
                    {"name": "name", "type": "string"},
                    {"name": "wallet", "type": "address"}
                ],
                "Mail": [
                    {"name": "from", "type": "Person"},
                    {"name": "to", "type": "Person"},
                    {"name": "contents", "type": "string"}
                ]
            },
            "primaryType": "Mail",
            "domain": {
                "name": "Ether Mail",
                "version": "1",
                "chainId": 1,
                "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC"
            },
            "message": {
                "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
                "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
                "contents": "Hello, Bob!"
            }
        })
    }

    const MAIL_SIGNATURE: &str = "0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b915621c";

    fn mail_plan(wallet: &str) -> ExecutionPlan {
        let mut plan = plan(true);
        plan.wallet_address = wallet.into();
        plan.steps = vec![PlanStep {
            step_id: "s1".into(),
            kind: "signature".into(),
            description: "sign".into(),
            chain_id: Some(1),
            chain: "eip155:1".into(),
            transaction: None,
            signature: Some(SignatureRequest {
                signature_id: "sig_mail".into(),
                purpose: "order".into(),
                typed_data: eip712_mail(),
            }),
        }];
        plan
    }

    fn signed(signature: &str) -> Vec<ReportedSignature> {
        vec![ReportedSignature {
            signature_id: "sig_mail".into(),
            purpose: "order".into(),
            signature: signature.into(),
        }]
    }

    #[test]
    fn eip712_signatures_recover_to_the_plan_wallet() {
        assert_eq!(
            typed_data_hash(&eip712_mail()).unwrap().to_string(),
            "0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2"
        );
        let cow = "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826";
        let ok = verify_signatures(&mail_plan(cow), &signed(MAIL_SIGNATURE)).unwrap();
        assert_eq!(ok[0].signature, MAIL_SIGNATURE);
        // Any letter case of the wallet is the same wallet.
        assert!(
            verify_signatures(&mail_plan(&cow.to_lowercase()), &signed(MAIL_SIGNATURE)).is_ok()
        );

        let bob = "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB";
        assert!(matches!(
            verify_signatures(&mail_plan(bob), &signed(MAIL_SIGNATURE)),
            Err(SignatureProblem::WrongSigner { .. })
        ));
        // A flipped bit of r recovers someone else (or nobody).
        let tampered = MAIL_SIGNATURE.replacen("4355", "4356", 1);
        assert!(matches!(
            verify_signatures(&mail_plan(cow), &signed(&tampered)),
            Err(SignatureProblem::WrongSigner { .. } | SignatureProblem::Unrecoverable(_))
        ));
        // The same signature over changed typed data does not verify either.
        let mut changed = mail_plan(cow);
        changed.steps[0].signature.as_mut().unwrap().typed_data["message"]["contents"] =
            "Hello, Eve!".into();
        assert!(verify_signatures(&changed, &signed(MAIL_SIGNATURE)).is_err());
        assert!(matches!(
            verify_signatures(&mail_plan(cow), &signed("0x1234")),
            Err(SignatureProblem::Malformed(_))
        ));
        assert!(matches!(
            verify_signatures(&mail_plan(cow), &[]),
            Err(SignatureProblem::Count {
                expected: 1,
                got: 0
            })
        ));
        let mut wrong_id = signed(MAIL_SIGNATURE);
        wrong_id[0].signature_id = "sig_other".into();
        assert!(matches!(
            verify_signatures(&mail_plan(cow), &wrong_id),
            Err(SignatureProblem::WrongStep { .. })
        ));
    }

    #[test]
    fn high_s_twins_of_valid_signatures_are_refused() {
        let signature = Signature::from_raw(&hex::decode(&MAIL_SIGNATURE[2..]).unwrap()).unwrap();
        // (r, n - s, !v) recovers the same key: the malleable twin.
        let n = alloy_primitives::U256::from_str_radix(
            "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141",
            16,
        )
        .unwrap();
        let twin = Signature::new(signature.r(), n - signature.s(), !signature.v());
        let twin = format!("0x{}", hex::encode(twin.as_bytes()));
        assert!(matches!(
            verify_signatures(
                &mail_plan("0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"),
                &signed(&twin)
            ),
            Err(SignatureProblem::NonCanonical(_))
        ));
    }

    #[test]
    fn access_tokens_bind_plan_principal_and_expiry() {
        let tokens = AccessTokens::new([9; 32]);
        let plan = "ocx_00000000000000000000000000000001";
        let token = tokens.issue(plan, "key:a", 2_000);
        assert_eq!(tokens.verify(&token, plan, "key:a", 1_999), Ok(()));
        assert_eq!(
            tokens.verify(&token, plan, "key:a", 2_000),
            Err(TokenError::Expired)
        );
        assert_eq!(
            tokens.verify(&token, plan, "key:b", 1_000),
            Err(TokenError::Invalid)
        );
        assert_eq!(
            tokens.verify(
                &token,
                "ocx_00000000000000000000000000000002",
                "key:a",
                1_000
            ),
            Err(TokenError::OtherPlan)
        );
        // A longer expiry written into the token breaks its MAC.
        let forged = token.replace(".2000.", ".9000.");
        assert_eq!(
            tokens.verify(&forged, plan, "key:a", 1_000),
            Err(TokenError::Invalid)
        );
        assert_eq!(
            AccessTokens::new([8; 32]).verify(&token, plan, "key:a", 1_000),
            Err(TokenError::Invalid)
        );
        for malformed in ["", "v1", "v2.a.1.b", "v1.a.b.c", "v1.a.1.!!", "v1.a.1.b.c"] {
            assert_eq!(
                tokens.verify(malformed, plan, "key:a", 1_000),
                Err(TokenError::Malformed),
                "{malformed}"
            );
        }
    }
}
