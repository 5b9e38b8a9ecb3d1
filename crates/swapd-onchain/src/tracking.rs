//! What every live router shares when it follows an execution: the source transaction judged on
//! its chain (`swapd_core::onchain::chain`), and what a final receipt paid (docs/onchain.md, "Live
//! tracking").

use alloy_primitives::{Address, U256};
use swapd_core::amount::{Amount, Rounding};
use swapd_core::fees::Payee;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::market::provider::ProviderError;
use swapd_core::onchain::chain::{self, EvmLog, EvmReceipt, SolanaTx, SourceTx};
use swapd_core::onchain::plan::{ExecutionPlan, ExecutionStatus, Outcome, Tracked};
use swapd_types::onchain::ExecutionTx;

use crate::Chains;

/// What the source chain says about a reported transaction; `F` is what a final, executed one
/// shows (an EVM receipt, a Solana transaction's changes).
pub enum OnChain<F> {
    /// Enough to answer: not indexed, confirming, reverted or lost.
    Decided(Tracked),
    /// Final and executed.
    Final(F),
    /// swapd does not read the source chain.
    Unread,
}

/// The execution's state from its source transaction's judgement, unless it is final.
fn decided<F>(judged: SourceTx<F>, source: &ExecutionTx) -> OnChain<F> {
    OnChain::Decided(match judged {
        SourceTx::Confirmed(final_tx) => return OnChain::Final(final_tx),
        SourceTx::NotIndexed => {
            Tracked::state(ExecutionStatus::Submitted, "not_indexed", Vec::new())
        }
        SourceTx::Lost => Tracked::state(ExecutionStatus::Failed, "tx_not_found", Vec::new()),
        SourceTx::Confirming { .. } => Tracked::state(
            ExecutionStatus::Pending,
            "source_confirming",
            vec![source.clone()],
        ),
        SourceTx::Reverted => {
            Tracked::state(ExecutionStatus::Failed, "reverted", vec![source.clone()])
        }
    })
}

/// Looks `source` up on its EVM chain, when swapd reads it.
pub async fn on_chain(
    chains: &Chains,
    from: &CurrencyDef,
    source: &ExecutionTx,
    lost_after_ms: i64,
    now_ms: i64,
) -> Result<OnChain<EvmReceipt>, ProviderError> {
    let Some(reader) = chains.evm(from.network) else {
        return Ok(OnChain::Unread);
    };
    let receipt = reader.receipt(&source.tx_hash).await?;
    let head = match receipt {
        Some(_) => reader.head().await?,
        None => 0,
    };
    let judged = chain::source_tx(receipt, head, reader.confirmations(), lost_after_ms, now_ms);
    Ok(decided(judged, source))
}

/// Looks a Solana signature up on Solana, when swapd reads it.
pub async fn on_solana(
    chains: &Chains,
    source: &ExecutionTx,
    lost_after_ms: i64,
    now_ms: i64,
) -> Result<OnChain<SolanaTx>, ProviderError> {
    let Some(reader) = chains.solana() else {
        return Ok(OnChain::Unread);
    };
    let status = reader.status(&source.tx_hash).await?;
    Ok(
        match decided(chain::solana_source(status, lost_after_ms, now_ms), source) {
            OnChain::Final(()) => match reader.transaction(&source.tx_hash).await? {
                Some(tx) => OnChain::Final(tx),
                // Finalized by its status, not served yet by getTransaction: look again.
                None => OnChain::Decided(Tracked::state(
                    ExecutionStatus::Pending,
                    "source_confirming",
                    vec![source.clone()],
                )),
            },
            OnChain::Decided(tracked) => OnChain::Decided(tracked),
            OnChain::Unread => OnChain::Unread,
        },
    )
}

/// What a Solana transaction paid the plan's recipient in `to` (a mint, or SOL).
pub fn solana_received(tx: &SolanaTx, plan: &ExecutionPlan, to: &CurrencyDef) -> Option<U256> {
    chain::solana_received(tx, recipient(plan), to.contract)
}

/// What a bridge's destination transaction shows on its chain.
pub enum AtDestination {
    /// swapd reads no node of that chain.
    Unread,
    /// The node does not have it (final) yet.
    NotYet,
    /// Final: what it paid the recipient (`None`: nothing).
    Paid(Option<U256>),
}

/// Reads the destination transaction `hash` on `to`'s chain (an EVM receipt's logs or
/// balances; a finalized Solana transaction's balance changes).
pub async fn at_destination(
    chains: &Chains,
    plan: &ExecutionPlan,
    to: &CurrencyDef,
    hash: &str,
) -> Result<AtDestination, ProviderError> {
    if to.network == swapd_core::address::Network::Solana {
        let Some(reader) = chains.solana() else {
            return Ok(AtDestination::Unread);
        };
        return Ok(match reader.transaction(hash).await? {
            Some(tx) => AtDestination::Paid(solana_received(&tx, plan, to)),
            None => AtDestination::NotYet,
        });
    }
    let Some(reader) = chains.evm(to.network) else {
        return Ok(AtDestination::Unread);
    };
    let Some(receipt) = reader.receipt(hash).await? else {
        return Ok(AtDestination::NotYet);
    };
    let from = plan.from;
    Ok(AtDestination::Paid(
        received(chains, &receipt, plan, from, to).await?,
    ))
}

/// Where the plan's output goes.
fn recipient(plan: &ExecutionPlan) -> &str {
    plan.recipient.as_deref().unwrap_or(&plan.wallet_address)
}

/// The transaction on the plan's source chain.
pub fn source_tx(from: &CurrencyDef, tx_hash: &str) -> ExecutionTx {
    ExecutionTx {
        role: "source".into(),
        chain: from.network.caip2().unwrap_or_default(),
        tx_hash: tx_hash.to_owned(),
    }
}

/// What `to`'s transfers in `logs` paid `recipient`; `None` for a native currency (no logs) or
/// when nothing was paid.
fn paid(logs: &[EvmLog], to: &CurrencyDef, recipient: &str) -> Option<U256> {
    let token: Address = to.contract?.parse().ok()?;
    let recipient: Address = recipient.parse().ok()?;
    let units = chain::transferred_to(logs, token, recipient);
    (!units.is_zero()).then_some(units)
}

/// What `logs` paid each fee recipient in `to`, when the plan's router pays the fees to
/// addresses in a token (0x): zero when nothing arrived; none when the chain cannot show it
/// (no recipients, or the chain's coin, which leaves no log).
pub fn fees_paid(logs: &[EvmLog], plan: &ExecutionPlan, to: &CurrencyDef) -> Vec<(Payee, U256)> {
    let Some(token) = to
        .contract
        .and_then(|contract| contract.parse::<Address>().ok())
    else {
        return Vec::new();
    };
    plan.onchain_fees
        .iter()
        .filter_map(|fee| {
            let recipient: Address = fee.recipient.parse().ok()?;
            Some((fee.payee, chain::transferred_to(logs, token, recipient)))
        })
        .collect()
}

/// What a final receipt on `to`'s chain paid the plan's recipient in `to`: its `Transfer` logs
/// for a token; for the chain's coin (which leaves no log), the recipient's balance change over
/// the receipt's block, counting back what it spent on the transaction
/// (`swapd_core::onchain::chain::native_received`). `None` when nothing arrived, or swapd does not read
/// that chain.
pub async fn received(
    chains: &Chains,
    receipt: &EvmReceipt,
    plan: &ExecutionPlan,
    from: &CurrencyDef,
    to: &CurrencyDef,
) -> Result<Option<U256>, ProviderError> {
    let recipient_text = recipient(plan);
    if to.contract.is_some() {
        return Ok(paid(&receipt.logs, to, recipient_text));
    }
    let (Some(reader), Ok(recipient)) = (chains.evm(to.network), recipient_text.parse::<Address>())
    else {
        return Ok(None);
    };
    let before = reader
        .balance(recipient, receipt.block_number.saturating_sub(1))
        .await?;
    let after = reader.balance(recipient, receipt.block_number).await?;
    let value_sent = match from.contract {
        None if from.network == to.network => crate::units(plan.from_amount, from),
        _ => U256::ZERO,
    };
    Ok(chain::native_received(
        before, after, receipt, recipient, value_sent,
    ))
}

/// Done: `units` of `to` arrived.
pub fn completed(to: &CurrencyDef, units: U256, tx_hashes: Vec<ExecutionTx>) -> Tracked {
    let amount = Amount::from_base_units(units, to.decimals, Rounding::Down);
    Tracked::done(Outcome::Completed, to, amount, tx_hashes)
}
