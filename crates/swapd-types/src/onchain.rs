//! Wire shapes of onchain execution (docs/onchain.md): resolving an onchain route card into an
//! execution plan, reporting what the wallet did, and polling the execution. Amounts shown to
//! people are decimal strings in display units; values inside transactions are base-unit integer
//! strings; times are Unix seconds.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The header that carries an `executionAccessToken`.
pub const ACCESS_TOKEN_HEADER: &str = "X-Onchain-Execution-Access-Token";

/// Where an execution stands (docs/onchain.md, "Status").
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ExecutionStatus {
    /// The plan was issued; the wallet has not reported anything yet.
    AwaitingUser,
    /// A transaction or signatures were reported; the chain has not shown them yet.
    Submitted,
    /// Seen on chain and in progress (`substatus` says where).
    Pending,
    /// Finished; `outcome` says what the wallet holds now.
    Done,
    /// Finished without a swap; `substatus` says why.
    Failed,
    /// The plan's time ran out before anything was reported.
    Expired,
}

impl ExecutionStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// `done`, `failed` and `expired` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ExecutionStatus::Done | ExecutionStatus::Failed | ExecutionStatus::Expired
        )
    }
}

/// What a `done` execution left in the wallet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The requested token arrived.
    Completed,
    /// Another token arrived (for a bridge: the intermediate asset on the destination chain).
    Partial,
    /// The input came back to the wallet.
    Refunded,
}

/// `POST /onchain/routes/resolve`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OnchainResolveInput {
    /// An onchain card's `routeQuoteId` from `GET /routes`.
    pub route_quote_id: String,
    /// The wallet that signs the plan.
    pub wallet_address: String,
    /// `eip155` or `solana`; defaults to the namespace of the source chain.
    #[serde(default)]
    pub wallet_chain_namespace: Option<String>,
    /// Largest shortfall below the expected output the plan accepts, in basis points (0 to
    /// 5000; default 50).
    #[serde(default)]
    pub slippage_bps: Option<u32>,
}

/// A transaction for the wallet to sign and broadcast: EVM fields, or a serialized Solana
/// transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum PlanTransaction {
    #[serde(rename_all = "camelCase")]
    Evm {
        /// Contract called (checksummed).
        to: String,
        /// ABI-encoded calldata, `0x`-prefixed hex.
        data: String,
        /// Native value sent, in base units (wei).
        value: String,
        /// Gas limit suggested, in gas units; `null` when the provider gave none: the wallet
        /// estimates it (`eth_estimateGas`), as it does for any transaction. Never `"0"`.
        #[serde(default)]
        gas: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Solana {
        /// Base64 of an unsigned transaction (signature slots zeroed; legacy in the sandbox,
        /// versioned from Jupiter): sign it with the wallet, then send it.
        serialized_transaction: String,
        /// The last block height at which the transaction's blockhash is valid; `null` when
        /// the provider does not say. Past it the transaction can no longer land: resolve again.
        #[serde(default)]
        last_valid_block_height: Option<u64>,
    },
}

/// EIP-712 typed data the wallet signs instead of sending a transaction (gasless routes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureRequest {
    /// Quote it back in the execution report.
    pub signature_id: String,
    /// `permit` (EIP-2612 allowance) or `order` (the provider's order).
    pub purpose: String,
    /// `{types, primaryType, domain, message}` as `eth_signTypedData_v4` takes it.
    #[schema(value_type = Object)]
    pub typed_data: serde_json::Value,
}

/// One thing the wallet does, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    pub step_id: String,
    /// `transaction` or `signature`.
    pub kind: String,
    /// What the step does, for people.
    pub description: String,
    /// EIP-155 chain id; `null` on Solana.
    pub chain_id: Option<u64>,
    /// CAIP-2 id of the chain (`eip155:8453`, `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp`).
    pub chain: String,
    /// Set when `kind` is `transaction`.
    pub transaction: Option<PlanTransaction>,
    /// Set when `kind` is `signature`.
    pub signature: Option<SignatureRequest>,
}

/// An execution plan with the token that scopes access to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionPlanView {
    /// `ocx_…`.
    pub execution_plan_id: String,
    /// Send it as `X-Onchain-Execution-Access-Token` to report and poll this execution.
    pub execution_access_token: String,
    /// When the token stops working (Unix seconds).
    pub execution_access_token_expires_at: i64,
    /// Report before this time (Unix seconds); the transactions' deadlines are this time too.
    pub expires_at: i64,
    pub execution_provider: String,
    pub route_quote_id: String,
    /// Namespace of the signing wallet: `eip155` or `solana`.
    pub chain_namespace: String,
    pub wallet_address: String,
    /// Where the output goes when it is not the signing wallet.
    pub recipient_address: Option<String>,
    pub from_ccy: String,
    pub to_ccy: String,
    pub from_amount: String,
    pub expected_output_amount: String,
    /// The least the plan accepts: the expected output less `slippageBps`.
    pub min_output_amount: String,
    pub slippage_bps: u32,
    /// `true` when the steps are signatures and a relayer pays the gas.
    pub gasless: bool,
    pub steps: Vec<PlanStep>,
    /// The hosted page of this execution (status, steps, transactions, what arrived), for a
    /// human to follow; its link carries a token of this execution alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_page_url: Option<String>,
}

/// One signature of an execution report.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReportedSignature {
    pub signature_id: String,
    pub purpose: String,
    /// 65-byte `r‖s‖v` signature, `0x`-prefixed hex.
    pub signature: String,
}

/// `POST /onchain/executions`: exactly one of `txHash` and `signatures`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionReportInput {
    pub execution_plan_id: String,
    pub chain_namespace: String,
    pub wallet_address: String,
    /// The hash of the last transaction step the wallet broadcast.
    #[serde(default)]
    pub tx_hash: Option<String>,
    /// One per signature step of a gasless plan.
    #[serde(default)]
    pub signatures: Option<Vec<ReportedSignature>>,
}

/// A transaction of an execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionTx {
    /// `source` (on the wallet's chain) or `destination` (a bridge's payout).
    pub role: String,
    /// CAIP-2 id of the chain.
    pub chain: String,
    pub tx_hash: String,
}

/// `GET /onchain/executions/{executionPlanId}` (and the answer to a report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionView {
    pub execution_plan_id: String,
    pub execution_provider: String,
    pub status: ExecutionStatus,
    /// Detail of the status: `awaiting_transaction`, `awaiting_signatures`, `not_indexed`,
    /// `source_confirming`, `awaiting_destination`, `delayed`, `reverted`,
    /// `slippage_exceeded`, `not_found`, `plan_expired`, …
    pub substatus: Option<String>,
    /// `true` once the status can no longer change.
    pub terminal: bool,
    /// Set when `status` is `done`.
    pub outcome: Option<Outcome>,
    pub tx_hashes: Vec<ExecutionTx>,
    /// What arrived, in display units of `receivedToken`; set when `status` is `done`.
    pub received_amount: Option<String>,
    /// Currency code of what arrived.
    pub received_token: Option<String>,
    pub from_ccy: String,
    pub to_ccy: String,
    pub from_amount: String,
    pub expected_output_amount: String,
    pub min_output_amount: String,
    pub wallet_address: String,
    pub recipient_address: Option<String>,
    pub expires_at: i64,
    pub reported_at: Option<i64>,
    pub updated_at: i64,
    /// The hosted page of this execution; see [`ExecutionPlanView::execution_page_url`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_page_url: Option<String>,
}
