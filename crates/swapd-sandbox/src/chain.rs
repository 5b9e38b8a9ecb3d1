//! The sandbox chain: deposits are recorded by `POST /api/v3/sandbox/orders/{id}/deposit` and
//! gain one confirmation per block interval; transfers out are recorded once per idempotency
//! key. Both live in the database, so they survive restarts like a real chain would.

use std::sync::Arc;

use swapd_core::Store;
use swapd_core::amount::{Amount, MAX_DECIMALS};
use swapd_core::store::SandboxTransfer;

/// Well-known burn addresses. The sandbox chain refuses to pay them, so a payout or refund to
/// one fails for good: the way to see `order.failed` in sandbox.
pub const BURN_ADDRESSES: [&str; 5] = [
    "1BitcoinEaterAddressDontSendf59kuE",
    "0x000000000000000000000000000000000000dEaD",
    "1nc1nerator11111111111111111111111111111111",
    "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb",
    "rrrrrrrrrrrrrrrrrrrrBZbvji",
];

#[derive(Debug, Clone, thiserror::Error)]
pub enum ChainError {
    /// The database did not answer; retrying later may succeed.
    #[error("chain unavailable: {0}")]
    Unavailable(String),
    /// The transfer was refused for good (a destination the chain will not pay).
    #[error("transfer rejected: {0}")]
    Rejected(String),
}

/// A transfer seen on the chain to an exchange's deposit address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainDeposit {
    pub tx_id: String,
    pub amount: Amount,
    pub confirmations: u32,
    pub seen_at_ms: i64,
}

pub struct SandboxChain {
    store: Arc<dyn Store>,
    block_interval_ms: i64,
}

impl SandboxChain {
    /// A chain on `store` where every network makes a block each `block_interval_ms`.
    pub fn new(store: Arc<dyn Store>, block_interval_ms: i64) -> Self {
        assert!(block_interval_ms > 0, "blocks need time");
        Self {
            store,
            block_interval_ms,
        }
    }

    /// Transfers seen to `address` (with `tag` where the network uses one), with their current
    /// confirmations.
    pub async fn deposits(
        &self,
        address: &str,
        tag: Option<&str>,
        now_ms: i64,
    ) -> Result<Vec<ChainDeposit>, ChainError> {
        let deposits = self
            .store
            .sandbox_deposits(address, tag)
            .await
            .map_err(|e| ChainError::Unavailable(e.to_string()))?;
        deposits
            .into_iter()
            .map(|d| {
                let blocks = (now_ms - d.seen_at_ms).max(0) / self.block_interval_ms;
                Ok(ChainDeposit {
                    amount: Amount::parse(&d.amount, MAX_DECIMALS).map_err(|e| {
                        ChainError::Unavailable(format!("stored deposit amount: {e}"))
                    })?,
                    tx_id: d.tx_id,
                    confirmations: d
                        .confirmations
                        .saturating_add(u32::try_from(blocks).unwrap_or(u32::MAX)),
                    seen_at_ms: d.seen_at_ms,
                })
            })
            .collect()
    }

    /// Sends `amount` of `currency` to `address` once per `key`: a repeated call with the same
    /// key returns the first transfer's id and sends nothing.
    pub async fn transfer(
        &self,
        key: &str,
        currency: &str,
        address: &str,
        tag: Option<&str>,
        amount: &str,
        now_ms: i64,
    ) -> Result<String, ChainError> {
        if BURN_ADDRESSES.contains(&address) {
            return Err(ChainError::Rejected(format!(
                "the sandbox chain refuses transfers to the burn address {address}"
            )));
        }
        let sent = self
            .store
            .sandbox_transfer(&SandboxTransfer {
                key: key.to_owned(),
                tx_id: swapd_core::ids::new_tx_id(),
                currency: currency.to_owned(),
                address: address.to_owned(),
                tag: tag.map(Into::into),
                amount: amount.to_owned(),
                created_at_ms: now_ms,
            })
            .await
            .map_err(|e| ChainError::Unavailable(e.to_string()))?;
        Ok(sent.tx_id)
    }
}

#[cfg(test)]
mod tests {
    use swapd_core::address::Network;

    use super::BURN_ADDRESSES;

    #[test]
    fn burn_addresses_are_valid_addresses() {
        let networks = [
            Network::Bitcoin,
            Network::Ethereum,
            Network::Solana,
            Network::Tron,
            Network::Xrp,
        ];
        for (address, network) in BURN_ADDRESSES.iter().zip(networks) {
            network
                .validate_address(address)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
