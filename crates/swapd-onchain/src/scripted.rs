//! A chain as tests script it: receipts by hash, a head, and balances per block.

use std::sync::Mutex;

use alloy_primitives::{Address, U256};
use async_trait::async_trait;
use swapd_core::address::Network;
use swapd_core::onchain::chain::{ChainError, EvmChain, EvmLog, EvmReceipt, TRANSFER_TOPIC};

pub struct ScriptedChain {
    pub network: Network,
    pub receipts: Mutex<Vec<(String, EvmReceipt)>>,
    pub head: Mutex<u64>,
    pub balances: Mutex<Vec<(Address, u64, U256)>>,
}

impl ScriptedChain {
    pub fn new(network: Network) -> Self {
        Self {
            network,
            receipts: Mutex::default(),
            head: Mutex::default(),
            balances: Mutex::default(),
        }
    }

    /// `tx_hash` mined in `block` (the head moves there), sent by `from`, with `logs`.
    pub fn mined(
        &self,
        tx_hash: &str,
        block: u64,
        success: bool,
        from: Address,
        logs: Vec<EvmLog>,
    ) {
        self.receipts.lock().unwrap().push((
            tx_hash.to_owned(),
            EvmReceipt {
                block_number: block,
                success,
                logs,
                from,
                gas_paid: U256::from(21_000u64),
            },
        ));
        self.set_head(block);
    }

    pub fn set_head(&self, block: u64) {
        *self.head.lock().unwrap() = block;
    }
}

/// A `Transfer` of `units` of `token` to `to`.
pub fn paid_log(token: Address, to: &str, units: u64) -> EvmLog {
    EvmLog {
        address: token,
        topics: vec![
            TRANSFER_TOPIC,
            Address::ZERO.into_word(),
            to.parse::<Address>().unwrap().into_word(),
        ],
        data: U256::from(units).to_be_bytes::<32>().to_vec(),
    }
}

#[async_trait]
impl EvmChain for ScriptedChain {
    fn network(&self) -> Network {
        self.network
    }

    fn confirmations(&self) -> u64 {
        2
    }

    async fn receipt(&self, tx_hash: &str) -> Result<Option<EvmReceipt>, ChainError> {
        Ok(self
            .receipts
            .lock()
            .unwrap()
            .iter()
            .find(|(hash, _)| hash == tx_hash)
            .map(|(_, receipt)| receipt.clone()))
    }

    async fn head(&self) -> Result<u64, ChainError> {
        Ok(*self.head.lock().unwrap())
    }

    async fn balance(&self, address: Address, block: u64) -> Result<U256, ChainError> {
        Ok(self
            .balances
            .lock()
            .unwrap()
            .iter()
            .filter(|(owner, at, _)| *owner == address && *at <= block)
            .max_by_key(|(_, at, _)| *at)
            .map(|(_, _, balance)| *balance)
            .unwrap_or_default())
    }
}

/// Solana as tests script it: statuses and finalized transactions by signature.
#[derive(Default)]
pub struct ScriptedSolana {
    pub statuses: Mutex<Vec<(String, swapd_core::onchain::chain::SolanaStatus)>>,
    pub transactions: Mutex<Vec<(String, swapd_core::onchain::chain::SolanaTx)>>,
    /// The accounts that exist.
    pub accounts: Mutex<Vec<String>>,
}

#[async_trait]
impl swapd_core::onchain::chain::SolanaChain for ScriptedSolana {
    async fn status(
        &self,
        signature: &str,
    ) -> Result<Option<swapd_core::onchain::chain::SolanaStatus>, ChainError> {
        Ok(self
            .statuses
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(known, _)| known == signature)
            .map(|(_, status)| *status))
    }

    async fn transaction(
        &self,
        signature: &str,
    ) -> Result<Option<swapd_core::onchain::chain::SolanaTx>, ChainError> {
        Ok(self
            .transactions
            .lock()
            .unwrap()
            .iter()
            .find(|(known, _)| known == signature)
            .map(|(_, tx)| tx.clone()))
    }

    async fn account_exists(&self, address: &str) -> Result<bool, ChainError> {
        Ok(self.accounts.lock().unwrap().iter().any(|a| a == address))
    }
}

/// `text` of the catalog's currency `code`.
pub fn amount(text: &str, code: &str) -> swapd_core::amount::Amount {
    let currency = swapd_core::market::currencies::currency(code).expect("a catalog code");
    swapd_core::amount::Amount::parse(text, currency.precision).expect("an amount")
}

/// A plan of `provider` from `from` to `to` for `wallet`, reported at 10 s and due then; its
/// deadline 300 s.
pub fn plan(
    provider: &str,
    wallet: &str,
    from: &str,
    to: &str,
) -> swapd_core::onchain::plan::ExecutionPlan {
    let currency = |code| swapd_core::market::currencies::currency(code).expect("a catalog code");
    let (from, to) = (currency(from), currency(to));
    let one = |def: &swapd_core::market::currencies::CurrencyDef| {
        swapd_core::amount::Amount::parse("1", def.precision).expect("one")
    };
    swapd_core::onchain::plan::ExecutionPlan {
        id: "ocx_1".parse().expect("a plan id"),
        owner: "key:a".parse().expect("an owner"),
        route_quote_id: "rqq_1".parse().expect("a route quote id"),
        resolve_key: "k".into(),
        provider: provider.into(),
        wallet_address: wallet.into(),
        recipient: None,
        from,
        to,
        from_amount: one(from),
        expected_output: one(to),
        min_output: one(to),
        slippage_bps: 50,
        gasless: false,
        steps: Vec::new(),
        provider_state: None,
        created_at_ms: 0,
        expires_at_ms: 300_000,
        version: 2,
        status: swapd_core::onchain::plan::ExecutionStatus::Submitted,
        substatus: None,
        outcome: None,
        report: None,
        reported_at_ms: Some(10_000),
        relayed_at_ms: None,
        tx_hashes: Vec::new(),
        received_amount: None,
        received_token: None,
        updated_at_ms: 10_000,
        page_url: None,
        next_check_at_ms: Some(10_000),
        fees: Vec::new(),
        affiliate_code: None,
        onchain_fees: Vec::new(),
        fees_realized: None,
    }
}

/// The operator's EVM fee recipient of [`fee_policy`].
pub const FEE_RECIPIENT: &str = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

/// Fees asked of a router: a 30 bps service fee, a quarter of it an affiliate's, a partner's
/// 20 bps markup (which a router paying one recipient leaves out), the operator's recipients
/// and the partner's.
pub fn fee_policy() -> swapd_core::fees::FeePolicy {
    swapd_core::fees::FeePolicy {
        service_bps: 30,
        partner_bps: 20,
        affiliate_share_bps: 2_500,
        recipients: swapd_core::fees::FeeRecipients {
            evm: Some(FEE_RECIPIENT.parse().unwrap()),
            solana: [(
                "USDCSOL".to_owned(),
                "FeeAccount1111111111111111111111111111111111".to_owned(),
            )]
            .into(),
            partner_evm: Some(PARTNER_RECIPIENT.parse().unwrap()),
        },
        ..Default::default()
    }
}

/// The partner's EVM recipient of [`fee_policy`].
pub const PARTNER_RECIPIENT: &str = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

/// A quote's fee entries as `(kind, bps, amount, currency)`.
pub fn entries(fees: &[swapd_core::fees::entry::Fee]) -> Vec<(String, String, String, String)> {
    fees.iter()
        .filter_map(|fee| {
            Some((
                fee.kind.as_str().to_owned(),
                fee.rate?.to_string(),
                fee.amount.to_string(),
                fee.currency.code.to_owned(),
            ))
        })
        .collect()
}
