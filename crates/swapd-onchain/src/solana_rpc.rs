//! Solana read through a node's JSON-RPC: `getSignatureStatuses` (with the history searched)
//! for where a signature stands, and `getTransaction` (at the configured commitment,
//! `jsonParsed`, versioned transactions included) for the balances it changed.

use std::collections::BTreeMap;
use std::time::Duration;

use alloy_primitives::U256;
use async_trait::async_trait;
use serde::Deserialize;
use swapd_core::address::Network;
use swapd_core::onchain::chain::{ChainError, SolanaChain, SolanaStatus, SolanaTx, TokenBalance};

use crate::evm_rpc::JsonRpc;

pub struct SolanaRpc {
    node: JsonRpc,
    commitment: Commitment,
}

impl SolanaRpc {
    pub fn new(rpc_url: &str, timeout: Duration, commitment: Commitment) -> Result<Self, String> {
        Ok(Self {
            node: JsonRpc::new(Network::Solana, rpc_url, timeout)?,
            commitment,
        })
    }
}

/// How settled a Solana transaction must be before swapd counts it: Solana has commitment
/// levels, not a count of blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commitment {
    /// Voted on by a supermajority of the cluster.
    Confirmed,
    /// Rooted: 31 or more confirmed blocks on top, never rolled back.
    Finalized,
}

impl Commitment {
    /// Confirmed blocks on top of a finalized one.
    pub const FINALIZED_CONFIRMATIONS: u64 = 31;

    /// The commitment a chain's `confirmations` setting stands for (docs/configuration.md):
    /// unset or 31 and more is finalized, fewer is confirmed (never `processed`, which a fork
    /// can undo).
    pub fn for_confirmations(confirmations: Option<u64>) -> Self {
        match confirmations {
            Some(count) if count < Self::FINALIZED_CONFIRMATIONS => Commitment::Confirmed,
            _ => Commitment::Finalized,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Commitment::Confirmed => "confirmed",
            Commitment::Finalized => "finalized",
        }
    }

    /// Whether a signature at `status` (its `confirmationStatus`) has reached this commitment.
    fn reached(self, status: Option<&str>) -> bool {
        match self {
            Commitment::Confirmed => matches!(status, Some("confirmed" | "finalized")),
            Commitment::Finalized => status == Some("finalized"),
        }
    }
}

#[derive(Debug, Deserialize)]
struct Statuses {
    value: Vec<Option<WireStatus>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireStatus {
    #[serde(default)]
    err: Option<serde_json::Value>,
    #[serde(default)]
    confirmation_status: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct WireTransaction {
    meta: Meta,
    transaction: Transaction,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    fee: u64,
    pre_balances: Vec<u64>,
    post_balances: Vec<u64>,
    #[serde(default)]
    pre_token_balances: Vec<WireTokenBalance>,
    #[serde(default)]
    post_token_balances: Vec<WireTokenBalance>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTokenBalance {
    account_index: usize,
    mint: String,
    #[serde(default)]
    owner: Option<String>,
    ui_token_amount: UiTokenAmount,
}

#[derive(Debug, Deserialize)]
struct UiTokenAmount {
    amount: String,
}

#[derive(Debug, Deserialize)]
struct Transaction {
    message: Message,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message {
    account_keys: Vec<AccountKey>,
}

#[derive(Debug, Deserialize)]
struct AccountKey {
    pubkey: String,
}

impl TryFrom<WireTransaction> for SolanaTx {
    type Error = ChainError;

    fn try_from(wire: WireTransaction) -> Result<Self, ChainError> {
        let malformed =
            || ChainError::Unavailable("the Solana node answered a malformed transaction".into());
        let keys: Vec<String> = wire
            .transaction
            .message
            .account_keys
            .into_iter()
            .map(|key| key.pubkey)
            .collect();
        let meta = wire.meta;
        if meta.pre_balances.len() != keys.len() || meta.post_balances.len() != keys.len() {
            return Err(malformed());
        }
        let lamports = keys
            .iter()
            .zip(meta.pre_balances.iter().zip(&meta.post_balances))
            .map(|(key, (before, after))| (key.clone(), *before, *after))
            .collect();
        // Token accounts by index: (owner, mint) → (before, after).
        let mut tokens: BTreeMap<usize, TokenBalance> = BTreeMap::new();
        for (balances, after) in [
            (&meta.pre_token_balances, false),
            (&meta.post_token_balances, true),
        ] {
            for balance in balances {
                let amount = U256::from_str_radix(&balance.ui_token_amount.amount, 10)
                    .map_err(|_| malformed())?;
                let entry = tokens
                    .entry(balance.account_index)
                    .or_insert_with(|| TokenBalance {
                        owner: balance.owner.clone().unwrap_or_default(),
                        mint: balance.mint.clone(),
                        before: U256::ZERO,
                        after: U256::ZERO,
                    });
                if after {
                    entry.after = amount;
                } else {
                    entry.before = amount;
                }
            }
        }
        Ok(SolanaTx {
            fee_payer: keys.first().cloned().ok_or_else(malformed)?,
            fee: meta.fee,
            lamports,
            tokens: tokens.into_values().collect(),
        })
    }
}

#[async_trait]
impl SolanaChain for SolanaRpc {
    async fn status(&self, signature: &str) -> Result<Option<SolanaStatus>, ChainError> {
        let statuses: Statuses = self
            .node
            .call(
                "getSignatureStatuses",
                serde_json::json!([[signature], {"searchTransactionHistory": true}]),
            )
            .await?;
        Ok(statuses
            .value
            .into_iter()
            .next()
            .flatten()
            .map(|status| SolanaStatus {
                failed: status.err.is_some_and(|err| !err.is_null()),
                finalized: self
                    .commitment
                    .reached(status.confirmation_status.as_deref()),
            }))
    }

    async fn transaction(&self, signature: &str) -> Result<Option<SolanaTx>, ChainError> {
        let transaction: Option<WireTransaction> = self
            .node
            .call(
                "getTransaction",
                serde_json::json!([signature, {"encoding": "jsonParsed",
                                               "commitment": self.commitment.as_str(),
                                               "maxSupportedTransactionVersion": 0}]),
            )
            .await?;
        transaction.map(SolanaTx::try_from).transpose()
    }

    async fn account_exists(&self, address: &str) -> Result<bool, ChainError> {
        let account: AccountInfo = self
            .node
            .call(
                "getAccountInfo",
                serde_json::json!([address, {"encoding": "base64",
                                             "commitment": self.commitment.as_str()}]),
            )
            .await?;
        Ok(account.value.is_some())
    }
}

/// `getAccountInfo`'s answer: `value` is `null` for an account that does not exist.
#[derive(Debug, Deserialize)]
struct AccountInfo {
    value: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use wiremock::matchers::{body_partial_json, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    const SIGNATURE: &str =
        "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW";
    const WALLET: &str = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
    const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

    async fn node(method_name: &str, result: serde_json::Value) -> (MockServer, SolanaRpc) {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(body_partial_json(
                serde_json::json!({"method": method_name}),
            ))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(
                    serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": result}),
                ),
            )
            .mount(&server)
            .await;
        let rpc =
            SolanaRpc::new(&server.uri(), Duration::from_secs(2), Commitment::Finalized).unwrap();
        (server, rpc)
    }

    #[tokio::test]
    async fn an_account_exists_when_the_node_has_it() {
        let (_server, rpc) = node(
            "getAccountInfo",
            serde_json::json!({"context": {"slot": 82}, "value": {"data": ["", "base64"], "executable": false, "lamports": 2039280, "owner": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "rentEpoch": 0, "space": 165}}),
        )
        .await;
        assert!(rpc.account_exists(WALLET).await.unwrap());
        let (_server, rpc) = node(
            "getAccountInfo",
            serde_json::json!({"context": {"slot": 82}, "value": null}),
        )
        .await;
        assert!(!rpc.account_exists(WALLET).await.unwrap());
    }

    #[tokio::test]
    async fn signature_statuses_say_failed_and_finalized() {
        for (status, expected) in [
            (serde_json::json!(null), None),
            (
                serde_json::json!({"slot": 72, "confirmations": 10, "err": null, "status": {"Ok": null}, "confirmationStatus": "confirmed"}),
                Some(SolanaStatus {
                    failed: false,
                    finalized: false,
                }),
            ),
            (
                serde_json::json!({"slot": 72, "confirmations": null, "err": {"InstructionError": [0, "Custom"]}, "confirmationStatus": "finalized"}),
                Some(SolanaStatus {
                    failed: true,
                    finalized: true,
                }),
            ),
        ] {
            let (_server, rpc) = node(
                "getSignatureStatuses",
                serde_json::json!({"context": {"slot": 82}, "value": [status]}),
            )
            .await;
            assert_eq!(rpc.status(SIGNATURE).await.unwrap(), expected);
        }
    }

    #[tokio::test]
    async fn a_finalized_transaction_gives_its_balance_changes() {
        let (_server, rpc) = node(
            "getTransaction",
            serde_json::json!({
                "slot": 300, "blockTime": 1717000000,
                "meta": {"err": null, "fee": 5000, "preBalances": [1000000000, 2039280, 1],
                         "postBalances": [994995000, 2039280, 1],
                         "preTokenBalances": [{"accountIndex": 1, "mint": USDC, "owner": WALLET,
                                               "uiTokenAmount": {"amount": "1000000", "decimals": 6, "uiAmount": 1.0, "uiAmountString": "1"}}],
                         "postTokenBalances": [{"accountIndex": 1, "mint": USDC, "owner": WALLET,
                                                "uiTokenAmount": {"amount": "26000000", "decimals": 6, "uiAmount": 26.0, "uiAmountString": "26"}}]},
                "transaction": {"signatures": [SIGNATURE],
                                "message": {"accountKeys": [
                                    {"pubkey": WALLET, "signer": true, "writable": true, "source": "transaction"},
                                    {"pubkey": "Fh7vYvWq2KUB8wyS6ZwVmc1MEcFEsYY7m2H5U2ByVtyb", "signer": false, "writable": true, "source": "transaction"},
                                    {"pubkey": "JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4", "signer": false, "writable": false, "source": "lookupTable"}]}}
            }),
        )
        .await;
        let tx = rpc.transaction(SIGNATURE).await.unwrap().unwrap();
        assert_eq!(tx.fee_payer, WALLET);
        assert_eq!(tx.fee, 5_000);
        assert_eq!(tx.lamports[0], (WALLET.into(), 1_000_000_000, 994_995_000));
        assert_eq!(
            swapd_core::onchain::chain::solana_received(&tx, WALLET, Some(USDC)),
            Some(U256::from(25_000_000u64))
        );
        let (_server, rpc) = node("getTransaction", serde_json::json!(null)).await;
        assert_eq!(rpc.transaction(SIGNATURE).await.unwrap(), None);
    }

    #[test]
    fn confirmations_map_to_a_commitment_that_a_status_reaches() {
        assert_eq!(Commitment::for_confirmations(None), Commitment::Finalized);
        assert_eq!(
            Commitment::for_confirmations(Some(31)),
            Commitment::Finalized
        );
        assert_eq!(
            Commitment::for_confirmations(Some(1)),
            Commitment::Confirmed
        );
        assert_eq!(
            Commitment::for_confirmations(Some(0)),
            Commitment::Confirmed
        );
        assert!(Commitment::Confirmed.reached(Some("confirmed")));
        assert!(Commitment::Confirmed.reached(Some("finalized")));
        assert!(!Commitment::Confirmed.reached(Some("processed")));
        assert!(!Commitment::Finalized.reached(Some("confirmed")));
        assert!(Commitment::Finalized.reached(Some("finalized")));
    }
}
