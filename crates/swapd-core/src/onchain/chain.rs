//! The chain-reader port and what live tracking decides from a chain's answers
//! (docs/onchain.md, "Live tracking"), without I/O: a reported transaction is `not_indexed`
//! until its receipt exists, `source_confirming` until it has the network's confirmations,
//! `reverted` when its receipt says so, and lost when the chain still does not know it after
//! the plan's deadline. What arrived is read from the receipt's ERC-20 `Transfer` logs to the
//! recipient, never from a provider's estimate.

use alloy_primitives::{Address, B256, U256, b256};
use async_trait::async_trait;

use crate::address::Network;

/// `keccak256("Transfer(address,address,uint256)")`: topic 0 of every ERC-20 transfer log.
pub const TRANSFER_TOPIC: B256 =
    b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

/// How long after its report a transaction the chain does not know may still appear, even when
/// the plan's deadline is sooner: a node indexes a broadcast transaction within seconds.
pub const NOT_FOUND_GRACE_MS: i64 = 60_000;

/// One log of a receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvmLog {
    pub address: Address,
    pub topics: Vec<B256>,
    pub data: Vec<u8>,
}

/// A mined transaction as its chain reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvmReceipt {
    pub block_number: u64,
    /// `status` 1: executed; 0: reverted.
    pub success: bool,
    pub logs: Vec<EvmLog>,
    /// Who sent it, and what its gas cost them (`gasUsed × effectiveGasPrice`).
    pub from: Address,
    pub gas_paid: U256,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The node timed out, refused, or answered something unusable; ask again later.
    #[error("{0}")]
    Unavailable(String),
}

impl From<ChainError> for crate::market::provider::ProviderError {
    fn from(error: ChainError) -> Self {
        let ChainError::Unavailable(detail) = error;
        crate::market::provider::ProviderError::Unavailable(detail)
    }
}

/// Reads one EVM chain through its node.
#[async_trait]
pub trait EvmChain: Send + Sync + 'static {
    fn network(&self) -> Network;
    /// Blocks on top of a transaction's own before it counts as final.
    fn confirmations(&self) -> u64;
    /// The receipt of `tx_hash` (`0x` + 64 hex), `None` while the chain does not know it mined.
    async fn receipt(&self, tx_hash: &str) -> Result<Option<EvmReceipt>, ChainError>;
    /// The number of the latest block.
    async fn head(&self) -> Result<u64, ChainError>;
    /// `address`'s balance of the chain's coin at the end of block `block`.
    async fn balance(&self, address: Address, block: u64) -> Result<U256, ChainError>;
}

/// Where a reported source transaction stands on its chain; `R` is what a final, executed one
/// shows (an EVM receipt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceTx<R = EvmReceipt> {
    /// Not mined (or not indexed) yet.
    NotIndexed,
    /// Mined, with fewer confirmations than the network needs.
    Confirming { confirmations: u64 },
    /// Mined and final, executed.
    Confirmed(R),
    /// Mined and final, reverted: nothing was swapped.
    Reverted,
    /// Still unknown after the plan's deadline: it will not be mined.
    Lost,
}

/// Judges the chain's answer about a reported transaction. `head` is the latest block; a
/// receipt in block `n` has `head - n + 1` confirmations.
pub fn source_tx(
    receipt: Option<EvmReceipt>,
    head: u64,
    confirmations_needed: u64,
    lost_after_ms: i64,
    now_ms: i64,
) -> SourceTx {
    let Some(receipt) = receipt else {
        return if now_ms >= lost_after_ms {
            SourceTx::Lost
        } else {
            SourceTx::NotIndexed
        };
    };
    let confirmations = head.saturating_sub(receipt.block_number) + 1;
    if confirmations < confirmations_needed.max(1) {
        SourceTx::Confirming { confirmations }
    } else if receipt.success {
        SourceTx::Confirmed(receipt)
    } else {
        SourceTx::Reverted
    }
}

/// When a reported transaction the chain does not know counts as lost: the plan's deadline,
/// and never sooner than [`NOT_FOUND_GRACE_MS`] after the report.
pub fn lost_after_ms(plan_expires_at_ms: i64, reported_at_ms: i64) -> i64 {
    plan_expires_at_ms.max(reported_at_ms + NOT_FOUND_GRACE_MS)
}

/// The sum of `token`'s `Transfer` logs to `recipient` in `logs`, in base units.
pub fn transferred_to(logs: &[EvmLog], token: Address, recipient: Address) -> U256 {
    logs.iter()
        .filter(|log| {
            log.address == token
                && log.topics.len() == 3
                && log.topics[0] == TRANSFER_TOPIC
                && log.topics[2] == recipient.into_word()
                && log.data.len() == 32
        })
        .fold(U256::ZERO, |sum, log| {
            sum.saturating_add(U256::from_be_slice(&log.data))
        })
}

/// Where a Solana transaction stands (`getSignatureStatuses`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SolanaStatus {
    /// It executed with an error: nothing it did holds but its fee.
    pub failed: bool,
    /// Its block is finalized (it can no longer be dropped).
    pub finalized: bool,
}

/// A token balance of one owner before and after a Solana transaction, in base units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBalance {
    pub owner: String,
    pub mint: String,
    pub before: U256,
    pub after: U256,
}

/// What a finalized Solana transaction changed (`getTransaction`'s `meta`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SolanaTx {
    /// The account that paid the fee (the first signer), and the fee in lamports.
    pub fee_payer: String,
    pub fee: u64,
    /// Lamports of each account before and after.
    pub lamports: Vec<(String, u64, u64)>,
    pub tokens: Vec<TokenBalance>,
}

/// Reads Solana through a node's JSON-RPC.
#[async_trait]
pub trait SolanaChain: Send + Sync + 'static {
    /// `None` while the cluster does not know the signature.
    async fn status(&self, signature: &str) -> Result<Option<SolanaStatus>, ChainError>;
    /// The finalized transaction's balance changes; `None` until it is finalized.
    async fn transaction(&self, signature: &str) -> Result<Option<SolanaTx>, ChainError>;
    /// Whether an account (base58) exists, at the configured commitment.
    async fn account_exists(&self, address: &str) -> Result<bool, ChainError>;
}

/// Judges a Solana signature's status as [`source_tx`] judges an EVM receipt: not indexed (or
/// lost after `lost_after_ms`), confirming until finalized, reverted when it failed.
pub fn solana_source(
    status: Option<SolanaStatus>,
    lost_after_ms: i64,
    now_ms: i64,
) -> SourceTx<()> {
    match status {
        None if now_ms >= lost_after_ms => SourceTx::Lost,
        None => SourceTx::NotIndexed,
        Some(status) if !status.finalized => SourceTx::Confirming { confirmations: 0 },
        Some(status) if status.failed => SourceTx::Reverted,
        Some(_) => SourceTx::Confirmed(()),
    }
}

/// What a Solana transaction paid `recipient`: of the token `mint`, the rise of its token
/// balances; of SOL (`mint` `None`), the rise of its lamports, counting back the fee when it
/// paid it. `None` when nothing arrived.
pub fn solana_received(tx: &SolanaTx, recipient: &str, mint: Option<&str>) -> Option<U256> {
    let received = match mint {
        Some(mint) => {
            let (before, after) = tx
                .tokens
                .iter()
                .filter(|balance| balance.owner == recipient && balance.mint == mint)
                .fold((U256::ZERO, U256::ZERO), |(before, after), balance| {
                    (before + balance.before, after + balance.after)
                });
            after.checked_sub(before)?
        }
        None => {
            let (_, before, after) = tx.lamports.iter().find(|(key, _, _)| key == recipient)?;
            let fee = if tx.fee_payer == recipient { tx.fee } else { 0 };
            U256::from(*after + fee).checked_sub(U256::from(*before))?
        }
    };
    (!received.is_zero()).then_some(received)
}

/// What a transaction paid `recipient` in the chain's coin (which leaves no log): its balance
/// after the transaction's block less before, plus the gas the recipient paid when it sent the
/// transaction, plus the value it sent with it. Exact when no other transaction of that block
/// moved the recipient's coin. `None` when nothing arrived.
pub fn native_received(
    before: U256,
    after: U256,
    receipt: &EvmReceipt,
    recipient: Address,
    value_sent: U256,
) -> Option<U256> {
    let spent = if receipt.from == recipient {
        receipt.gas_paid.saturating_add(value_sent)
    } else {
        U256::ZERO
    };
    let received = after.saturating_add(spent).checked_sub(before)?;
    (!received.is_zero()).then_some(received)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::address;

    const USDC: Address = address!("833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    const ALICE: Address = address!("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    const BOB: Address = address!("70997970C51812dc3A010C7d01b50e0d17dc79C8");

    fn transfer(token: Address, from: Address, to: Address, units: u64) -> EvmLog {
        EvmLog {
            address: token,
            topics: vec![TRANSFER_TOPIC, from.into_word(), to.into_word()],
            data: U256::from(units).to_be_bytes::<32>().to_vec(),
        }
    }

    fn receipt(block_number: u64, success: bool) -> EvmReceipt {
        EvmReceipt {
            block_number,
            success,
            logs: Vec::new(),
            from: ALICE,
            gas_paid: U256::from(21_000u64),
        }
    }

    #[test]
    fn coin_received_counts_back_what_the_recipient_spent_on_the_transaction() {
        let sent = receipt(5, true);
        let ether = |units: u64| U256::from(units);
        // Alice sent it: she paid 21000 gas and 7 of value, and is 1000 up after it.
        assert_eq!(
            native_received(ether(100_000), ether(101_000), &sent, ALICE, ether(7)),
            Some(ether(22_007))
        );
        // Bob only received.
        assert_eq!(
            native_received(ether(5), ether(505), &sent, BOB, ether(7)),
            Some(ether(500))
        );
        assert_eq!(
            native_received(ether(5), ether(5), &sent, BOB, ether(0)),
            None
        );
        assert_eq!(
            native_received(ether(5), ether(1), &sent, BOB, ether(0)),
            None
        );
    }

    #[test]
    fn a_transaction_is_judged_by_its_receipt_and_confirmations() {
        assert_eq!(source_tx(None, 10, 2, 1_000, 999), SourceTx::NotIndexed);
        assert_eq!(source_tx(None, 10, 2, 1_000, 1_000), SourceTx::Lost);
        assert_eq!(
            source_tx(Some(receipt(10, true)), 10, 2, 0, 5),
            SourceTx::Confirming { confirmations: 1 }
        );
        assert_eq!(
            source_tx(Some(receipt(10, true)), 11, 2, 0, 5),
            SourceTx::Confirmed(receipt(10, true))
        );
        // A reverted transaction waits for its confirmations too: a reorg may still include
        // another version of it.
        assert_eq!(
            source_tx(Some(receipt(10, false)), 10, 2, 0, 5),
            SourceTx::Confirming { confirmations: 1 }
        );
        assert_eq!(
            source_tx(Some(receipt(10, false)), 12, 2, 0, 5),
            SourceTx::Reverted
        );
        // Zero confirmations configured still needs the receipt's own block.
        assert_eq!(
            source_tx(Some(receipt(10, true)), 10, 0, 0, 5),
            SourceTx::Confirmed(receipt(10, true))
        );
    }

    #[test]
    fn solana_signatures_are_final_when_finalized_and_pay_by_balance_changes() {
        let status = |failed, finalized| Some(SolanaStatus { failed, finalized });
        assert_eq!(solana_source(None, 10, 9), SourceTx::NotIndexed);
        assert_eq!(solana_source(None, 10, 10), SourceTx::Lost);
        assert_eq!(
            solana_source(status(false, false), 10, 5),
            SourceTx::Confirming { confirmations: 0 }
        );
        assert_eq!(solana_source(status(true, true), 10, 5), SourceTx::Reverted);
        assert_eq!(
            solana_source(status(false, true), 10, 5),
            SourceTx::Confirmed(())
        );

        let tx = SolanaTx {
            fee_payer: "alice".into(),
            fee: 5_000,
            lamports: vec![("alice".into(), 1_000_000, 2_995_000), ("bob".into(), 7, 7)],
            tokens: vec![
                TokenBalance {
                    owner: "alice".into(),
                    mint: "usdc".into(),
                    before: U256::from(100u64),
                    after: U256::ZERO,
                },
                TokenBalance {
                    owner: "bob".into(),
                    mint: "usdc".into(),
                    before: U256::ZERO,
                    after: U256::from(2_500_000u64),
                },
            ],
        };
        assert_eq!(
            solana_received(&tx, "bob", Some("usdc")),
            Some(U256::from(2_500_000u64))
        );
        assert_eq!(
            solana_received(&tx, "alice", Some("usdc")),
            None,
            "alice sent hers"
        );
        // Alice paid the fee: it is counted back.
        assert_eq!(
            solana_received(&tx, "alice", None),
            Some(U256::from(2_000_000u64))
        );
        assert_eq!(solana_received(&tx, "bob", None), None);
        assert_eq!(solana_received(&tx, "carol", None), None);
    }

    #[test]
    fn lost_means_after_the_deadline_and_a_grace_after_the_report() {
        assert_eq!(lost_after_ms(300_000, 10_000), 300_000);
        assert_eq!(
            lost_after_ms(300_000, 290_000),
            290_000 + NOT_FOUND_GRACE_MS
        );
    }

    #[test]
    fn only_the_tokens_transfers_to_the_recipient_count() {
        let logs = vec![
            transfer(USDC, BOB, ALICE, 1_500_000),
            transfer(USDC, BOB, ALICE, 250),
            // To someone else, from another contract, or not a Transfer: ignored.
            transfer(USDC, ALICE, BOB, 9),
            transfer(BOB, BOB, ALICE, 9),
            EvmLog {
                topics: vec![B256::ZERO, BOB.into_word(), ALICE.into_word()],
                ..transfer(USDC, BOB, ALICE, 9)
            },
        ];
        assert_eq!(transferred_to(&logs, USDC, ALICE), U256::from(1_500_250));
        assert_eq!(transferred_to(&logs, USDC, BOB), U256::from(9));
        assert_eq!(transferred_to(&[], USDC, ALICE), U256::ZERO);
    }
}
