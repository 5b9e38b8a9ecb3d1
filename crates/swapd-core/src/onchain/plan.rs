//! An onchain execution plan and where its execution stands (docs/onchain.md), without I/O:
//! the plan as stored, the status machine an execution follows (`awaiting_user → submitted →
//! pending → done | failed | expired`, never backwards), and what a wallet's report and a
//! router's answer do to it.

use alloy_primitives::U256;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
pub use swapd_types::onchain::{ExecutionStatus, Outcome};
use swapd_types::onchain::{ExecutionTx, ExecutionView, PlanStep, SignatureRequest};

use crate::amount::{Amount, Rounding};
use crate::fees::entry::Fee;
use crate::fees::ledger::{Charged, Stage};
use crate::fees::{OnchainFee, Payee};
use crate::ids::{PlanId, RouteQuoteId};
use crate::market::currencies::CurrencyDef;
use crate::owner::Owner;

/// How long a plan may wait for its report; the transactions' deadlines are the same time.
pub const PLAN_TTL_MS: i64 = 5 * 60 * 1000;
pub const DEFAULT_SLIPPAGE_BPS: u32 = 50;
pub const MAX_SLIPPAGE_BPS: u32 = 5_000;
/// Plans never ask for more signatures than this, so reports are bounded too.
pub const MAX_SIGNATURES: usize = 8;
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

impl Tracked {
    /// Not the end yet, or a failure, with the transactions it shows.
    pub fn state(status: ExecutionStatus, substatus: &str, tx_hashes: Vec<ExecutionTx>) -> Self {
        Self {
            status,
            substatus: Some(substatus.into()),
            outcome: None,
            tx_hashes,
            received_amount: None,
            received_token: None,
            fees_paid: Vec::new(),
        }
    }

    /// Done: `amount` of `token` arrived, which is the `outcome` (also its substatus).
    pub fn done(
        outcome: Outcome,
        token: &CurrencyDef,
        amount: Amount,
        tx_hashes: Vec<ExecutionTx>,
    ) -> Self {
        let substatus = match outcome {
            Outcome::Completed => "completed",
            Outcome::Partial => "partial",
            Outcome::Refunded => "refunded",
        };
        Self {
            outcome: Some(outcome),
            received_amount: Some(amount.to_string()),
            received_token: Some(token.code.into()),
            ..Self::state(ExecutionStatus::Done, substatus, tx_hashes)
        }
    }
}

/// An execution plan and where its execution stands; `version` guards every update
/// (compare-and-set). Amounts are in their currency: the input's (`from_amount`) or the
/// output's (`expected_output`, `min_output`).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionPlan {
    pub id: PlanId,
    /// Who resolved it, and so who may see and report it.
    pub owner: Owner,
    pub route_quote_id: RouteQuoteId,
    /// Same resolve request, same plan: see [`resolve_key`].
    pub resolve_key: String,
    pub provider: String,
    pub wallet_address: String,
    pub recipient: Option<String>,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub from_amount: Amount,
    pub expected_output: Amount,
    pub min_output: Amount,
    pub slippage_bps: u32,
    pub gasless: bool,
    pub steps: Vec<PlanStep>,
    /// What the provider keeps for later (`swapd_core::onchain::router::BuiltPlan`); never shown.
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
    pub relayed_at_ms: Option<i64>,
    pub tx_hashes: Vec<ExecutionTx>,
    /// What the recipient received, as the chain or the provider reports it.
    pub received_amount: Option<String>,
    pub received_token: Option<String>,
    pub updated_at_ms: i64,
    /// The hosted execution page, its link carrying the plan's page token (docs/order-page.md).
    pub page_url: Option<String>,
    /// When the tracker looks at it next; `None` once terminal.
    pub next_check_at_ms: Option<i64>,
    /// The fees of its route, locked with its terms (docs/fees.md).
    pub fees: Vec<Fee>,
    /// The affiliate whose code its route was quoted with.
    pub affiliate_code: Option<String>,
    /// Where the provider pays the fees, when it pays them to addresses.
    pub onchain_fees: Vec<OnchainFee>,
    /// The parties' fees as the execution's end showed them taken: the realized ledger rows.
    pub fees_realized: Option<Vec<Fee>>,
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
    pub id: PlanId,
    pub owner: Owner,
    pub route_quote_id: RouteQuoteId,
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
    pub fees: Vec<Fee>,
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
            wallet_address: new.wallet_address,
            recipient: new.recipient,
            from: new.from,
            to: new.to,
            from_amount: new.from_amount,
            expected_output: new.expected_output,
            min_output: new.min_output,
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

    /// The namespace of the signing wallet: the source chain's.
    pub fn chain_namespace(&self) -> &'static str {
        self.from.network.chain_namespace()
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
    fn realized_fees(&self, fees_paid: &[(Payee, U256)]) -> Vec<Fee> {
        let Some(currency) = self
            .fees
            .iter()
            .find(|fee| fee.party().is_some())
            .map(|fee| fee.currency)
        else {
            return self.fees.clone();
        };
        fees_paid
            .iter()
            .fold(self.fees.clone(), |fees, (payee, units)| {
                let paid = Amount::from_base_units(*units, currency.decimals, Rounding::Down);
                match payee {
                    Payee::Operator => {
                        crate::fees::ledger::realized_operator_fees(&fees, paid, currency)
                    }
                    Payee::Partner => {
                        crate::fees::ledger::realized_partner_fee(&fees, paid, currency)
                    }
                }
            })
    }

    /// Its fees as the ledger files them: as quoted, or as realized.
    pub fn charged(&self, stage: Stage) -> Charged<'_> {
        Charged::at(
            stage,
            (
                self.id.as_str(),
                &self.owner,
                self.affiliate_code.as_deref(),
            ),
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
            execution_plan_id: shown.id.into_string(),
            execution_provider: shown.provider,
            status: shown.status,
            substatus: shown.substatus,
            terminal: shown.status.is_terminal(),
            outcome: shown.outcome,
            tx_hashes: shown.tx_hashes,
            received_amount: shown.received_amount,
            received_token: shown.received_token,
            from_ccy: shown.from.code.into(),
            to_ccy: shown.to.code.into(),
            from_amount: shown.from_amount.to_string(),
            expected_output_amount: shown.expected_output.to_string(),
            min_output_amount: shown.min_output.to_string(),
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn plan(gasless: bool) -> ExecutionPlan {
        let currency = |code| crate::market::currencies::currency(code).unwrap();
        let (eth, usdc) = (currency("ETH"), currency("USDCETH"));
        let amount = |text, def: &CurrencyDef| Amount::parse(text, def.precision).unwrap();
        ExecutionPlan {
            id: PlanId::stored("ocx_00000000000000000000000000000001".into()).unwrap(),
            owner: Owner::Key("a".into()),
            route_quote_id: RouteQuoteId::stored("rqq_1".into()).unwrap(),
            resolve_key: "k".into(),
            provider: "meridian".into(),
            wallet_address: "0x0000000000000000000000000000000000000001".into(),
            recipient: None,
            from: eth,
            to: usdc,
            from_amount: amount("1", eth),
            expected_output: amount("3000", usdc),
            min_output: amount("2985", usdc),
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
        let usdc = crate::market::currencies::currency("USDCBASE").unwrap();
        let fee = |kind: &str, amount: &str| Fee {
            kind: kind.parse().unwrap(),
            rate: crate::fees::Rate::parse("15"),
            amount: Amount::parse(amount, usdc.precision).unwrap(),
            currency: usdc,
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
            realized.iter().map(|fee| fee.amount.to_string()).collect()
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
}
