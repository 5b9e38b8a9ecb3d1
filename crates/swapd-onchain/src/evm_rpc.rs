//! An EVM chain read through its node's JSON-RPC (docs/providers.md, "Chain readers"):
//! `eth_getTransactionReceipt` and `eth_blockNumber`. JSON-RPC errors arrive with HTTP 200 as
//! `{"error": {...}}`; both they and transport failures become [`ChainError::Unavailable`] in
//! swapd's words.

use std::time::Duration;

use alloy_primitives::{Address, B256, Bytes, U64, U256};
use async_trait::async_trait;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use swapd_core::address::Network;
use swapd_core::onchain::chain::{ChainError, EvmChain, EvmLog, EvmReceipt};
use swapd_http::{Call, Transport};

pub struct EvmRpc {
    network: Network,
    confirmations: u64,
    node: JsonRpc,
}

impl EvmRpc {
    /// A reader of `network` through the node at `rpc_url`.
    pub fn new(
        network: Network,
        rpc_url: &str,
        confirmations: u64,
        timeout: Duration,
    ) -> Result<Self, String> {
        Ok(Self {
            network,
            confirmations,
            node: JsonRpc::new(network, rpc_url, timeout)?,
        })
    }
}

/// A node's JSON-RPC endpoint: one call, its `result` or why there is none.
pub(crate) struct JsonRpc {
    network: Network,
    transport: Transport,
}

impl JsonRpc {
    pub(crate) fn new(network: Network, rpc_url: &str, timeout: Duration) -> Result<Self, String> {
        Ok(Self {
            network,
            transport: Transport::new("the chain node", rpc_url, timeout, Default::default())?,
        })
    }

    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<T, ChainError> {
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let answer = self
            .transport
            .post(Call::Read, "", &body.to_string(), &[])
            .await
            .map_err(|unreachable| ChainError::Unavailable(unreachable.detail))?;
        let network = self.network;
        answer.read(
            |body| rpc_result(body, method, network),
            |refused| {
                ChainError::Unavailable(format!(
                    "the {network} node answered HTTP {} to {method}",
                    refused.status
                ))
            },
        )
    }
}

/// The `result` of a JSON-RPC answer, or why there is none.
fn rpc_result<T: DeserializeOwned>(
    body: &[u8],
    method: &str,
    network: Network,
) -> Result<T, ChainError> {
    #[derive(Deserialize)]
    struct Envelope<T> {
        result: Option<T>,
        error: Option<RpcError>,
    }
    #[derive(Deserialize)]
    struct RpcError {
        code: i64,
    }
    let envelope: Envelope<T> = serde_json::from_slice(body).map_err(|_| {
        ChainError::Unavailable(format!(
            "the {network} node answered {method} with malformed JSON"
        ))
    })?;
    match (envelope.result, envelope.error) {
        (_, Some(error)) => Err(ChainError::Unavailable(format!(
            "the {network} node refused {method} (JSON-RPC error {})",
            error.code
        ))),
        (Some(result), None) => Ok(result),
        // `null` result: `Option<T>` callers read it as "not there".
        (None, None) => serde_json::from_value(serde_json::Value::Null).map_err(|_| {
            ChainError::Unavailable(format!("the {network} node answered {method} with nothing"))
        }),
    }
}

/// `eth_getTransactionReceipt`'s answer (the fields swapd reads).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireReceipt {
    pub block_number: U64,
    pub status: U64,
    pub logs: Vec<WireLog>,
    pub from: Address,
    pub gas_used: U256,
    /// Absent on some pre-London chains' receipts: then the gas price is unknown here.
    #[serde(default)]
    pub effective_gas_price: Option<U256>,
}

#[derive(Debug, Deserialize)]
pub struct WireLog {
    pub address: Address,
    pub topics: Vec<B256>,
    pub data: Bytes,
    #[serde(default)]
    pub removed: bool,
}

impl From<WireReceipt> for EvmReceipt {
    fn from(wire: WireReceipt) -> Self {
        EvmReceipt {
            block_number: wire.block_number.to::<u64>(),
            success: wire.status == U64::from(1),
            from: wire.from,
            gas_paid: wire
                .gas_used
                .saturating_mul(wire.effective_gas_price.unwrap_or_default()),
            logs: wire
                .logs
                .into_iter()
                // A log a reorg dropped is not in the chain.
                .filter(|log| !log.removed)
                .map(|log| EvmLog {
                    address: log.address,
                    topics: log.topics,
                    data: log.data.to_vec(),
                })
                .collect(),
        }
    }
}

#[async_trait]
impl EvmChain for EvmRpc {
    fn network(&self) -> Network {
        self.network
    }

    fn confirmations(&self) -> u64 {
        self.confirmations
    }

    async fn receipt(&self, tx_hash: &str) -> Result<Option<EvmReceipt>, ChainError> {
        let receipt: Option<WireReceipt> = self
            .node
            .call("eth_getTransactionReceipt", serde_json::json!([tx_hash]))
            .await?;
        Ok(receipt.map(EvmReceipt::from))
    }

    async fn head(&self) -> Result<u64, ChainError> {
        let head: U64 = self
            .node
            .call("eth_blockNumber", serde_json::json!([]))
            .await?;
        Ok(head.to::<u64>())
    }

    async fn balance(&self, address: Address, block: u64) -> Result<U256, ChainError> {
        self.node
            .call(
                "eth_getBalance",
                serde_json::json!([address, format!("{block:#x}")]),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swapd_core::onchain::chain::TRANSFER_TOPIC;
    use wiremock::matchers::{body_partial_json, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    /// A real `Transfer` log in a receipt.
    const RECEIPT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{
        "blockNumber":"0x26cb170","status":"0x1","transactionHash":"0x1f7d7a104380670016abac815a01820029b366a9c3ef82da9f655e3dcaa950bc",
        "from":"0x65081cb48d74a32e9ccfed75164b8c09972dbcf1","gasUsed":"0x5208","effectiveGasPrice":"0x3b9aca00",
        "logs":[{"address":"0x4200000000000000000000000000000000000006",
          "topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
                    "0x00000000000000000000000065081cb48d74a32e9ccfed75164b8c09972dbcf1",
                    "0x000000000000000000000000bc9f05bd2cb80f47f66444acd737ab1c66efba3b"],
          "data":"0x00000000000000000000000000000000000000000000000000001ce37ce88e85",
          "blockNumber":"0x26cb170","logIndex":"0x0","removed":false},
          {"address":"0x4200000000000000000000000000000000000006","topics":[],"data":"0x","removed":true}]}}"#;

    async fn node(method_name: &str, answer: ResponseTemplate) -> (MockServer, EvmRpc) {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(body_partial_json(
                serde_json::json!({"method": method_name}),
            ))
            .respond_with(answer)
            .mount(&server)
            .await;
        let rpc = EvmRpc::new(Network::Base, &server.uri(), 2, Duration::from_secs(2)).unwrap();
        (server, rpc)
    }

    #[tokio::test]
    async fn receipts_are_read_with_their_transfer_logs() {
        let (_server, rpc) = node(
            "eth_getTransactionReceipt",
            ResponseTemplate::new(200).set_body_string(RECEIPT),
        )
        .await;
        let receipt = rpc
            .receipt(&format!("0x{}", "1f".repeat(32)))
            .await
            .unwrap();
        let receipt = receipt.unwrap();
        assert_eq!(receipt.block_number, 0x26cb170);
        assert!(receipt.success);
        assert_eq!(receipt.logs.len(), 1, "the removed log is dropped");
        assert_eq!(receipt.logs[0].topics[0], TRANSFER_TOPIC);
        assert_eq!(receipt.logs[0].data.len(), 32);
        // 21000 gas at 1 gwei.
        assert_eq!(receipt.gas_paid, U256::from(21_000_000_000_000u64));
    }

    #[tokio::test]
    async fn balances_are_read_at_a_block() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(body_partial_json(serde_json::json!({
                "method": "eth_getBalance",
                "params": ["0x65081cb48d74a32e9ccfed75164b8c09972dbcf1", "0x64"]
            })))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_string(r#"{"jsonrpc":"2.0","id":1,"result":"0xde0b6b3a7640000"}"#),
            )
            .mount(&server)
            .await;
        let rpc = EvmRpc::new(Network::Base, &server.uri(), 2, Duration::from_secs(2)).unwrap();
        let owner: Address = "0x65081cb48d74a32e9ccfed75164b8c09972dbcf1"
            .parse()
            .unwrap();
        assert_eq!(
            rpc.balance(owner, 100).await.unwrap(),
            U256::from(1_000_000_000_000_000_000u64)
        );
    }

    #[tokio::test]
    async fn an_unknown_transaction_has_no_receipt() {
        let (_server, rpc) = node(
            "eth_getTransactionReceipt",
            ResponseTemplate::new(200).set_body_string(r#"{"jsonrpc":"2.0","id":1,"result":null}"#),
        )
        .await;
        assert_eq!(rpc.receipt("0x00").await.unwrap(), None);
    }

    #[tokio::test]
    async fn the_head_is_a_hex_quantity() {
        let (_server, rpc) = node(
            "eth_blockNumber",
            ResponseTemplate::new(200)
                .set_body_string(r#"{"jsonrpc":"2.0","id":1,"result":"0x1ce3110"}"#),
        )
        .await;
        assert_eq!(rpc.head().await.unwrap(), 0x1ce3110);
    }

    #[tokio::test]
    async fn node_errors_and_garbage_are_unavailable_in_swapds_words() {
        for answer in [
            ResponseTemplate::new(200).set_body_string(
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit exceeded, upgrade at vendor.example"}}"#,
            ),
            ResponseTemplate::new(200).set_body_string("<html>"),
            ResponseTemplate::new(403).set_body_string("forbidden by vendor.example"),
        ] {
            let (_server, rpc) = node("eth_blockNumber", answer).await;
            let ChainError::Unavailable(detail) = rpc.head().await.unwrap_err();
            assert!(detail.contains("node"), "{detail}");
            assert!(!detail.contains("vendor.example"), "{detail}");
        }
    }
}
