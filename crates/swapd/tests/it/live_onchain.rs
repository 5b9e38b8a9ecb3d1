//! Live onchain routes on a real EVM chain: a local hardhat node (chain id 8453, installed by
//! `.ci/run` from `tests/npm-chain/package-lock.json`) runs a real ERC-20 at USDC's Base address
//! and a router that pays it out. A fake LI.FI that the test controls serves quotes whose
//! `transactionRequest` calls that router; the test's wallet signs and broadcasts the plan's
//! transaction, and swapd follows the real receipt, reads the real `Transfer` log and reports
//! what actually arrived. A transaction that reverts on chain ends as `failed`. And a gasless
//! Relay plan against a fake Relay: the signature swapd posts is the wallet's, checked by the
//! fake against the EIP-712 permit it issued.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_network::TxSignerSync;
use alloy_primitives::{Address, Bytes, TxKind, U256, address};
use alloy_signer_local::PrivateKeySigner;
use alloy_sol_types::{SolCall, sol};
use serde_json::{Value, json};
use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support::{Live, Options, Resp, TestKey, TestServer, text};

sol! {
    function mint(address to, uint256 value) external;
    function balanceOf(address owner) external view returns (uint256);
    function swapNativeForToken(address token, uint256 amountOut, uint256 minAmountOut, address recipient) external payable;
    function swapNativeForTokenWithFees(address token, uint256 amountOut, uint256 minAmountOut, address recipient, address[] feeRecipients, uint256[] fees) external payable;
    function swapTokenForNative(address token, uint256 amountIn, uint256 amountOut, uint256 minAmountOut, address recipient) external;
}

const USDC_BASE: Address = address!("833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
/// Where the fake LI.FI's transactions go: LI.FI's diamond address, running the test router.
const ROUTER: Address = address!("1231DEB6f5749EF6cE6943a275A1D3E7486F4EaE");
/// Hardhat's first account: unlocked on the node, it sets the chain up.
const DEPLOYER: &str = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const TOKEN: &str = "X-Onchain-Execution-Access-Token";

fn chain_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/npm-chain")
}

/// A hardhat node on a free port, stopped when dropped.
struct LocalChain {
    child: Child,
    url: String,
    http: reqwest::Client,
}

impl Drop for LocalChain {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LocalChain {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("node_modules/.bin/hardhat")
            .args([
                "--config",
                "hardhat.config.cjs",
                "node",
                "--hostname",
                "127.0.0.1",
            ])
            .args(["--port", &port.to_string()])
            .current_dir(chain_dir())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the hardhat node");
        let chain = LocalChain {
            child,
            url: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        for _ in 0..600 {
            if let Ok(id) = chain.try_rpc("eth_chainId", json!([])).await {
                assert_eq!(id, "0x2105", "the local chain runs as Base (8453)");
                return chain;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the hardhat node did not start within 60 s");
    }

    async fn try_rpc(&self, method: &str, params: Value) -> Result<Value, Value> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let answer: Value = self
            .http
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .map_err(|e| json!(e.to_string()))?
            .json()
            .await
            .map_err(|e| json!(e.to_string()))?;
        match answer.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(answer["result"].clone()),
        }
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        self.try_rpc(method, params)
            .await
            .unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    async fn mine(&self) {
        self.rpc("evm_mine", json!([])).await;
    }

    async fn token_balance(&self, owner: Address) -> U256 {
        let data = balanceOfCall { owner }.abi_encode();
        let result = self
            .rpc(
                "eth_call",
                json!([{"to": USDC_BASE, "data": Bytes::from(data)}, "latest"]),
            )
            .await;
        U256::from_str_radix(result.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    }

    /// Places the test contracts (compiled here by solc-js) at USDC's and the router's
    /// addresses, and gives the router USDC to pay out.
    async fn deploy(&self) {
        let output = Command::new("node")
            .arg("compile.mjs")
            .current_dir(chain_dir())
            .output()
            .expect("run node compile.mjs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let runtime: Value = serde_json::from_slice(&output.stdout).unwrap();
        self.rpc("hardhat_setCode", json!([USDC_BASE, runtime["TestToken"]]))
            .await;
        self.rpc("hardhat_setCode", json!([ROUTER, runtime["TestRouter"]]))
            .await;
        // Coin for the router to pay out.
        self.rpc("hardhat_setBalance", json!([ROUTER, "0x56bc75e2d63100000"]))
            .await;
        let mint = mintCall {
            to: ROUTER,
            value: U256::from(1_000_000_000u64),
        }
        .abi_encode();
        self.rpc(
            "eth_sendTransaction",
            json!([{"from": DEPLOYER, "to": USDC_BASE, "data": Bytes::from(mint)}]),
        )
        .await;
    }

    /// Signs `transaction` (a plan step's) with `wallet` and broadcasts it; its hash.
    async fn sign_and_send(&self, wallet: &PrivateKeySigner, transaction: &Value) -> String {
        let nonce = self
            .rpc(
                "eth_getTransactionCount",
                json!([wallet.address(), "pending"]),
            )
            .await;
        let quantity = |value: &Value| value.as_str().unwrap().parse::<u64>().unwrap();
        let mut tx = TxEip1559 {
            chain_id: 8453,
            nonce: u64::from_str_radix(nonce.as_str().unwrap().trim_start_matches("0x"), 16)
                .unwrap(),
            gas_limit: match transaction["gas"] {
                // No gas limit in the plan: the wallet estimates it, as wallets do.
                Value::Null => {
                    let estimate = self
                        .rpc(
                            "eth_estimateGas",
                            json!([{"from": wallet.address(), "to": transaction["to"],
                                    "data": transaction["data"],
                                    "value": format!("{:#x}", transaction["value"].as_str().unwrap().parse::<u128>().unwrap())}]),
                        )
                        .await;
                    u64::from_str_radix(estimate.as_str().unwrap().trim_start_matches("0x"), 16)
                        .unwrap()
                }
                ref gas => quantity(gas),
            },
            max_fee_per_gas: 20_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: TxKind::Call(transaction["to"].as_str().unwrap().parse().unwrap()),
            value: transaction["value"].as_str().unwrap().parse().unwrap(),
            access_list: Default::default(),
            input: transaction["data"].as_str().unwrap().parse().unwrap(),
        };
        let signature = wallet.sign_transaction_sync(&mut tx).unwrap();
        let envelope = TxEnvelope::from(tx.into_signed(signature));
        let hash = envelope.tx_hash().to_string();
        let raw = Bytes::from(envelope.encoded_2718());
        // A transaction that reverts is still mined; hardhat answers it with an error.
        let _ = self.try_rpc("eth_sendRawTransaction", json!([raw])).await;
        hash
    }
}

/// A fake LI.FI: quotes on Base whose transaction calls the router. An input of 0.01 ETH pays
/// 30.000123 USDC (more than quoted: the chain decides); 0.02 ETH asks the router for less than
/// its own minimum, so the transaction reverts on chain; 25 USDC pays 0.008000000000000123 ETH
/// once the wallet allowed the router to take them.
struct FakeLiFi {
    recipient: Address,
}

impl Respond for FakeLiFi {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let query: std::collections::HashMap<String, String> =
            request.url.query_pairs().into_owned().collect();
        let from_amount = query["fromAmount"].clone();
        let native = "0x0000000000000000000000000000000000000000";
        let usdc = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
        let ((from_token, from_decimals), (to_token, to_decimals)) = if query["fromToken"] == native
        {
            ((native, 18), (usdc, 6))
        } else {
            ((usdc, 6), (native, 18))
        };
        let (to_amount, to_amount_min, data, value) = match from_amount.as_str() {
            "10000000000000000" | "20000000000000000" | "30000000000000000" => {
                let (to_amount, to_amount_min, paid) = match from_amount.as_str() {
                    "10000000000000000" => (30_000_000u128, 29_850_000u128, 30_000_123u128),
                    // Pays under its quote, above the minimum.
                    "30000000000000000" => (90_000_000, 89_550_000, 89_600_000),
                    // Under the minimum: the router reverts.
                    _ => (60_000_000, 59_700_000, 59_000_000),
                };
                let data = swapNativeForTokenCall {
                    token: USDC_BASE,
                    amountOut: U256::from(paid),
                    minAmountOut: U256::from(to_amount_min),
                    recipient: self.recipient,
                }
                .abi_encode();
                let value = format!("{:#x}", from_amount.parse::<u128>().unwrap());
                (to_amount, to_amount_min, data, value)
            }
            "25000000" => {
                let data = swapTokenForNativeCall {
                    token: USDC_BASE,
                    amountIn: U256::from(25_000_000u64),
                    amountOut: U256::from(8_000_000_000_000_123u128),
                    minAmountOut: U256::from(7_960_000_000_000_000u128),
                    recipient: self.recipient,
                }
                .abi_encode();
                (
                    8_000_000_000_000_000,
                    7_960_000_000_000_000,
                    data,
                    "0x0".to_owned(),
                )
            }
            other => return ResponseTemplate::new(404).set_body_json(json!({"message": other})),
        };
        let token = |address: &str, decimals: u8| json!({"address": address, "decimals": decimals, "chainId": 8453, "symbol": "T"});
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "lifi-e2e", "type": "lifi", "tool": "testdex",
            "action": {
                "fromChainId": 8453, "toChainId": 8453,
                "fromToken": token(from_token, from_decimals),
                "toToken": token(to_token, to_decimals),
                "fromAmount": from_amount, "slippage": 0.005,
                "fromAddress": query["fromAddress"], "toAddress": query["fromAddress"]
            },
            "estimate": {
                "tool": "testdex", "fromAmount": from_amount,
                "toAmount": to_amount.to_string(), "toAmountMin": to_amount_min.to_string(),
                "approvalAddress": ROUTER, "feeCosts": [], "gasCosts": [], "executionDuration": 5
            },
            "transactionRequest": {
                "to": ROUTER, "data": Bytes::from(data), "value": value,
                "gasLimit": "0x30d40", "from": query["fromAddress"], "chainId": 8453
            }
        }))
    }
}

async fn plan_for(
    server: &TestServer,
    key: &TestKey,
    wallet: Address,
    (from, to): (&str, &str),
    amount: &str,
) -> Value {
    let query = format!("fromCcy={from}&toCcy={to}&amount={amount}&walletAddress={wallet}");
    let card = card_of(server, key, &query, "lifi").await;
    assert_eq!(card["executionType"], "onchain");
    resolve(server, key, &card, wallet).await
}

/// The available route card of `provider` among the routes `query` discovers.
async fn card_of(server: &TestServer, key: &TestKey, query: &str, provider: &str) -> Value {
    let resp = server.call(key, "GET", "/api/v3/routes", query, b"").await;
    let cards = resp.data(200)["routes"].as_array().unwrap().clone();
    let card = cards
        .iter()
        .find(|card| card["executionProvider"] == provider)
        .unwrap_or_else(|| panic!("no {provider} card in {cards:?}"))
        .clone();
    assert_eq!(card["isAvailable"], true, "{card}");
    card
}

/// The plan of `card` for `wallet`.
async fn resolve(server: &TestServer, key: &TestKey, card: &Value, wallet: Address) -> Value {
    let body = json!({"routeQuoteId": card["routeQuoteId"], "walletAddress": wallet});
    let resp = server
        .call(
            key,
            "POST",
            "/api/v3/onchain/routes/resolve",
            "",
            &serde_json::to_vec(&body).unwrap(),
        )
        .await;
    resp.data(200).clone()
}

async fn report(server: &TestServer, key: &TestKey, plan: &Value, tx_hash: &str) -> Resp {
    let body = json!({
        "executionPlanId": plan["executionPlanId"],
        "chainNamespace": "eip155",
        "walletAddress": plan["walletAddress"],
        "txHash": tx_hash,
    });
    let request = server
        .sign(
            key,
            "POST",
            "/api/v3/onchain/executions",
            "",
            &serde_json::to_vec(&body).unwrap(),
        )
        .set(TOKEN, plan["executionAccessToken"].as_str().unwrap());
    server.send(&request).await
}

async fn execution(server: &TestServer, key: &TestKey, plan: &Value) -> Value {
    let id = plan["executionPlanId"].as_str().unwrap();
    let request = server
        .sign(
            key,
            "GET",
            &format!("/api/v3/onchain/executions/{id}"),
            "",
            b"",
        )
        .set(TOKEN, plan["executionAccessToken"].as_str().unwrap());
    server.send(&request).await.data(200).clone()
}

/// The local chain with the test contracts and a wallet holding 1 ETH; `None` (the test is
/// skipped) where hardhat is not installed, which CI does not allow.
async fn chain_with_a_funded_wallet() -> Option<(LocalChain, PrivateKeySigner)> {
    if !chain_dir().join("node_modules/.bin/hardhat").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test: npm ci --prefix tests/npm-chain (.ci/run does)"
        );
        println!("SKIPPED: run `npm ci --prefix tests/npm-chain` to install the local chain");
        return None;
    }
    let chain = LocalChain::start().await;
    chain.deploy().await;
    let wallet = PrivateKeySigner::random();
    chain
        .rpc(
            "hardhat_setBalance",
            json!([wallet.address(), "0xde0b6b3a7640000"]),
        )
        .await;
    Some((chain, wallet))
}

/// One tracker pass, a little later.
async fn track(server: &TestServer) {
    server.clock.advance_ms(1_000);
    server.tracker.run_due().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lifi_plan_is_signed_broadcast_and_followed_on_a_real_chain() {
    let Some((chain, wallet)) = chain_with_a_funded_wallet().await else {
        return;
    };

    let lifi = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/quote"))
        .respond_with(FakeLiFi {
            recipient: wallet.address(),
        })
        .mount(&lifi)
        .await;
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["lifi".into()];
    providers.lifi.base_url = format!("{}/v1/", lifi.uri()).parse().unwrap();
    providers.lifi.timeout_ms = 5_000;
    let chains = [(
        "base".to_owned(),
        swapd::config::ChainConfig {
            rpc_url: chain.url.parse().unwrap(),
            confirmations: Some(2),
            timeout_ms: 5_000,
        },
    )]
    .into();
    let server = TestServer::start_with(Options {
        live: Some(Live { providers, chains }),
        ..Options::default()
    })
    .await;
    let key = server.key(&[PricesRead, OrdersCreate, OrdersRead]).await;

    // The plan: one router call carrying 0.01 ETH (no approval for a native input).
    let eth_to_usdc = ("ETHBASE", "USDCBASE");
    let plan = plan_for(&server, &key, wallet.address(), eth_to_usdc, "0.01").await;
    assert_eq!(plan["executionProvider"], "lifi");
    assert_eq!(plan["expectedOutputAmount"], "30");
    assert_eq!(plan["minOutputAmount"], "29.85");
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    let transaction = &steps[0]["transaction"];
    assert_eq!(transaction["to"], ROUTER.to_checksum(None));
    assert_eq!(transaction["value"], "10000000000000000");
    assert_eq!(transaction["gas"], "200000");
    assert_eq!(steps[0]["chain"], "eip155:8453");

    // The wallet signs and broadcasts it; hardhat mines it at once.
    let hash = chain.sign_and_send(&wallet, transaction).await;
    let submitted = report(&server, &key, &plan, &hash).await;
    assert_eq!(submitted.data(200)["status"], "submitted");

    // Mined, one confirmation of the two configured.
    track(&server).await;
    let pending = execution(&server, &key, &plan).await;
    assert_eq!(pending["status"], "pending", "{pending}");
    assert_eq!(pending["substatus"], "source_confirming");
    assert_eq!(pending["txHashes"][0]["txHash"], hash);
    assert_eq!(pending["txHashes"][0]["chain"], "eip155:8453");

    chain.mine().await;
    track(&server).await;
    let done = execution(&server, &key, &plan).await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["outcome"], "completed");
    assert_eq!(done["terminal"], true);
    assert_eq!(done["receivedToken"], "USDCBASE");
    // What the receipt's Transfer log paid, not the quote's 30.
    assert_eq!(done["receivedAmount"], "30.000123");
    assert_eq!(
        chain.token_balance(wallet.address()).await,
        U256::from(30_000_123u64)
    );

    // A transaction that reverts on chain: the execution fails once the revert is final.
    let plan = plan_for(&server, &key, wallet.address(), eth_to_usdc, "0.02").await;
    let hash = chain
        .sign_and_send(&wallet, &plan["steps"][0]["transaction"])
        .await;
    let receipt = chain.rpc("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(
        receipt["status"], "0x0",
        "the router refuses below its minimum"
    );
    assert_eq!(
        report(&server, &key, &plan, &hash).await.data(200)["status"],
        "submitted"
    );
    chain.mine().await;
    track(&server).await;
    let failed = execution(&server, &key, &plan).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["substatus"], "reverted");
    assert_eq!(failed["terminal"], true);
    assert_eq!(failed["receivedAmount"], Value::Null);
    assert_eq!(
        chain.token_balance(wallet.address()).await,
        U256::from(30_000_123u64),
        "nothing more arrived"
    );

    // A token input: the wallet first allows the router to take it, then swaps; the coin that
    // arrives leaves no log and is read from the wallet's balance over the swap's block.
    let plan = plan_for(
        &server,
        &key,
        wallet.address(),
        ("USDCBASE", "ETHBASE"),
        "25",
    )
    .await;
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["stepId"], "approve");
    assert_eq!(steps[0]["transaction"]["to"], USDC_BASE.to_checksum(None));
    let _approval = chain.sign_and_send(&wallet, &steps[0]["transaction"]).await;
    let hash = chain.sign_and_send(&wallet, &steps[1]["transaction"]).await;
    let receipt = chain.rpc("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(
        receipt["status"], "0x1",
        "the approval let the router take the USDC"
    );
    assert_eq!(
        report(&server, &key, &plan, &hash).await.data(200)["status"],
        "submitted"
    );
    chain.mine().await;
    track(&server).await;
    let done = execution(&server, &key, &plan).await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["receivedToken"], "ETHBASE");
    assert_eq!(done["receivedAmount"], "0.008000000000000123");
    assert_eq!(
        chain.token_balance(wallet.address()).await,
        U256::from(5_000_123u64)
    );

    // A swap that delivers less than its quote (above the minimum) is observed as such:
    // the receipt's amount, not the quote's, is what LI.FI's outcome says it delivered.
    let plan = plan_for(&server, &key, wallet.address(), eth_to_usdc, "0.03").await;
    assert_eq!(plan["expectedOutputAmount"], "90");
    let hash = chain
        .sign_and_send(&wallet, &plan["steps"][0]["transaction"])
        .await;
    report(&server, &key, &plan, &hash).await;
    chain.mine().await;
    track(&server).await;
    track(&server).await;
    let done = execution(&server, &key, &plan).await;
    assert_eq!(done["receivedAmount"], "89.6", "{done}");
    let outcomes = server
        .state
        .store
        .recent_outcomes("lifi", 10)
        .await
        .unwrap();
    let observed = outcomes
        .iter()
        .find(|o| o.source_id == text(&plan["executionPlanId"]))
        .unwrap();
    assert!(observed.counted);
    assert_eq!(observed.delivered.unwrap().to_string(), "89.6");
    // (89.6 − 90) ÷ 90 = −44.4 bps.
    assert_eq!(observed.delivered_vs_quoted_bps(), Some(-44));
    let samples = server.state.store.outcome_samples(0).await.unwrap();
    let figures = swapd_core::market::observed::Observed::of(&samples, 1);
    let router = figures.provider("lifi").unwrap();
    // Three completed swaps (+0, +0, −44 bps) and the reverted one.
    assert_eq!(router.sample_size, 4);
    assert_eq!(router.success_bps, 7_500);

    // No execution needed LI.FI's status API: a swap on one chain is judged on the chain.
    let asked: Vec<String> = lifi
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| request.url.path().to_owned())
        .collect();
    assert!(asked.iter().all(|path| path == "/v1/quote"), "{asked:?}");
}

const USDC_ARB: Address = address!("af88d065e77c8cC2239327C5EDb3A432268e5831");
const RELAY_REQUEST: &str = "0x92b99e6e1ee1deeb9531b5ad7f87091b3d71254b3176de9e8b5f6c6d0bd3a331";
const FILL: &str = "0x5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f";

/// A fake Relay: quotes 25 USDC on Base → Arbitrum as one permit to sign for the quoting user,
/// remembers each permit it issued, and reports the intent filled once a permit arrived.
#[derive(Clone, Default)]
struct FakeRelay {
    issued: Arc<Mutex<Vec<Value>>>,
    verified: Arc<Mutex<Vec<Address>>>,
}

impl FakeRelay {
    fn permit(user: &str) -> Value {
        json!({
            "domain": {"name": "USD Coin", "version": "2", "chainId": 8453, "verifyingContract": USDC_BASE},
            "types": {"Permit": [{"name": "owner", "type": "address"}, {"name": "spender", "type": "address"},
                                 {"name": "value", "type": "uint256"}, {"name": "nonce", "type": "uint256"},
                                 {"name": "deadline", "type": "uint256"}]},
            "primaryType": "Permit",
            "value": {"owner": user, "spender": "0xf70da97812cb96acdf810712aa562db8dfa3dbef", "value": "25000000",
                      "nonce": "0", "deadline": "1800000300"}
        })
    }

    /// Whether `signature` signs the permit issued to `user`, over the EIP-712 payload as
    /// issued (the domain type as EIP-712 defines it from the domain's fields).
    fn signer_of(&self, signature: &str) -> Option<Address> {
        let bytes = alloy_primitives::hex::decode(signature).ok()?;
        let signature = alloy_primitives::Signature::from_raw(&bytes).ok()?;
        self.issued.lock().unwrap().iter().find_map(|sign| {
            let mut typed = json!({"types": sign["types"], "primaryType": sign["primaryType"],
                                   "domain": sign["domain"], "message": sign["value"]});
            typed["types"]["EIP712Domain"] = json!([
                {"name": "name", "type": "string"}, {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}
            ]);
            let typed: alloy_dyn_abi::TypedData = serde_json::from_value(typed).ok()?;
            let hash = typed.eip712_signing_hash().ok()?;
            let signer = signature.recover_address_from_prehash(&hash).ok()?;
            let owner: Address = sign["value"]["owner"].as_str()?.parse().ok()?;
            (signer == owner).then_some(signer)
        })
    }
}

impl Respond for FakeRelay {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        match request.url.path() {
            "/quote/v2" => {
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                let sign = Self::permit(body["user"].as_str().unwrap());
                self.issued.lock().unwrap().push(sign.clone());
                let side = |chain: u64, address: Address, amount: &str, minimum: &str| {
                    json!({"currency": {"chainId": chain, "address": address, "decimals": 6, "symbol": "USDC"},
                           "amount": amount, "minimumAmount": minimum})
                };
                ResponseTemplate::new(200).set_body_json(json!({
                    "steps": [{"id": "authorize", "kind": "signature", "requestId": RELAY_REQUEST,
                               "items": [{"status": "incomplete", "data": {
                                   "sign": {"signatureKind": "eip712", "domain": sign["domain"], "types": sign["types"],
                                            "primaryType": sign["primaryType"], "value": sign["value"]},
                                   "post": {"endpoint": "/execute/permits", "method": "POST",
                                            "body": {"kind": "erc2612", "requestId": RELAY_REQUEST}}}}]}],
                    "fees": {},
                    "details": {"currencyIn": side(8453, USDC_BASE, "25000000", "25000000"),
                                "currencyOut": side(42161, USDC_ARB, "24950000", "24825250"),
                                "timeEstimate": 12}
                }))
            }
            "/execute/permits" => {
                let signature = request
                    .url
                    .query_pairs()
                    .find(|(name, _)| name == "signature")
                    .map(|(_, value)| value.into_owned())
                    .unwrap_or_default();
                match self.signer_of(&signature) {
                    Some(signer) => {
                        self.verified.lock().unwrap().push(signer);
                        ResponseTemplate::new(200).set_body_json(json!({"message": "Success"}))
                    }
                    None => ResponseTemplate::new(401).set_body_json(
                        json!({"message": "Invalid signature", "errorCode": "INVALID_SIGNATURE"}),
                    ),
                }
            }
            "/intents/status/v3" => {
                let filled = !self.verified.lock().unwrap().is_empty();
                ResponseTemplate::new(200).set_body_json(if filled {
                    json!({"status": "success", "inTxHashes": [], "txHashes": [FILL], "originChainId": 8453, "destinationChainId": 42161})
                } else {
                    json!({"status": "waiting", "inTxHashes": [], "txHashes": []})
                })
            }
            _ => ResponseTemplate::new(404),
        }
    }
}

/// A node of Arbitrum that knows the fill: 24.951234 USDC to `recipient`.
async fn arbitrum_node(recipient: Address) -> MockServer {
    let node = MockServer::start().await;
    let answer = |result: Value| {
        ResponseTemplate::new(200)
            .set_body_json(json!({"jsonrpc": "2.0", "id": 1, "result": result}))
    };
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"method": "eth_getTransactionReceipt", "params": [FILL]})))
        .respond_with(answer(json!({
            "blockNumber": "0x12c", "status": "0x1", "transactionHash": FILL,
            "from": "0x0000000000000000000000000000000000000fee", "gasUsed": "0x5208", "effectiveGasPrice": "0x1",
            "logs": [{"address": USDC_ARB, "removed": false,
                      "topics": ["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
                                 format!("0x{:0>64}", "fee"), format!("0x{:0>64}", alloy_primitives::hex::encode(recipient))],
                      "data": format!("0x{:064x}", 24_951_234u64)}]
        })))
        .mount(&node)
        .await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"method": "eth_blockNumber"})))
        .respond_with(answer(json!("0x190")))
        .mount(&node)
        .await;
    node
}

#[tokio::test]
async fn a_gasless_relay_plan_posts_the_wallets_own_signatures_and_is_followed_to_its_fill() {
    let relay = MockServer::start().await;
    let fake = FakeRelay::default();
    Mock::given(wiremock::matchers::any())
        .respond_with(fake.clone())
        .mount(&relay)
        .await;
    let wallet = PrivateKeySigner::random();
    let node = arbitrum_node(wallet.address()).await;
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["relay".into()];
    providers.relay.base_url = relay.uri().parse().unwrap();
    providers.relay.timeout_ms = 5_000;
    let chains = [(
        "arbitrum".to_owned(),
        swapd::config::ChainConfig {
            rpc_url: node.uri().parse().unwrap(),
            confirmations: Some(2),
            timeout_ms: 5_000,
        },
    )]
    .into();
    let server = TestServer::start_with(Options {
        live: Some(Live { providers, chains }),
        ..Options::default()
    })
    .await;
    let key = server.key(&[PricesRead, OrdersCreate, OrdersRead]).await;

    let query = format!(
        "fromCcy=USDCBASE&toCcy=USDCARB&amount=25&walletAddress={}",
        wallet.address()
    );
    let card = card_of(&server, &key, &query, "relay").await;
    let plan = resolve(&server, &key, &card, wallet.address()).await;
    assert_eq!(plan["gasless"], true);
    assert_eq!(plan["steps"][0]["signature"]["purpose"], "permit");

    // A stranger's signature is refused by swapd before anything reaches Relay.
    let stranger = crate::onchain::sign_steps(&plan, &PrivateKeySigner::random());
    let report = |signatures: &[Value]| {
        let body = json!({
            "executionPlanId": plan["executionPlanId"], "chainNamespace": "eip155",
            "walletAddress": plan["walletAddress"], "signatures": signatures,
        });
        server
            .sign(
                &key,
                "POST",
                "/api/v3/onchain/executions",
                "",
                &serde_json::to_vec(&body).unwrap(),
            )
            .set(TOKEN, plan["executionAccessToken"].as_str().unwrap())
    };
    let refused = server.send(&report(&stranger)).await;
    assert_eq!(refused.status, 422, "{}", refused.body);

    let signed = crate::onchain::sign_steps(&plan, &wallet);
    let accepted = server.send(&report(&signed)).await;
    assert_eq!(accepted.data(200)["status"], "submitted");

    // The tracker posts the signature to Relay (which checks it against the permit it issued),
    // then follows the intent to its fill, read on Arbitrum.
    track(&server).await;
    let done = execution(&server, &key, &plan).await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["outcome"], "completed");
    assert_eq!(done["receivedToken"], "USDCARB");
    assert_eq!(done["receivedAmount"], "24.951234");
    assert_eq!(done["txHashes"][0]["role"], "destination");
    assert_eq!(done["txHashes"][0]["txHash"], FILL);
    assert_eq!(
        *fake.verified.lock().unwrap(),
        [wallet.address()],
        "posted once, by the wallet"
    );
    track(&server).await;
    assert_eq!(fake.verified.lock().unwrap().len(), 1, "never posted again");
}

/// A fake LI.FI for a bridge of 25 USDC from Base to Arbitrum, counting the status reads.
struct CountingLiFi {
    status_reads: Arc<Mutex<u32>>,
}

impl Respond for CountingLiFi {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if request.url.path() == "/v1/status" {
            *self.status_reads.lock().unwrap() += 1;
            return ResponseTemplate::new(200).set_body_json(
                json!({"status": "PENDING", "substatus": "WAIT_DESTINATION_TRANSACTION"}),
            );
        }
        let query: std::collections::HashMap<String, String> =
            request.url.query_pairs().into_owned().collect();
        let token = |chain: u64, address: Address| json!({"address": address, "decimals": 6, "chainId": chain, "symbol": "USDC"});
        ResponseTemplate::new(200).set_body_json(json!({
            "tool": "across",
            "action": {"fromToken": token(8453, USDC_BASE), "toToken": token(42161, USDC_ARB)},
            "estimate": {"fromAmount": "25000000", "toAmount": "24950000", "toAmountMin": "24825250",
                         "approvalAddress": ROUTER, "executionDuration": 60},
            "transactionRequest": {"to": ROUTER, "data": "0x00", "value": "0x0", "gasLimit": "0x30d40",
                                   "from": query["fromAddress"], "chainId": 8453}
        }))
    }
}

#[tokio::test]
async fn trackers_on_several_nodes_split_the_executions_and_never_ask_twice() {
    let lifi = MockServer::start().await;
    let status_reads = Arc::new(Mutex::new(0));
    Mock::given(wiremock::matchers::any())
        .respond_with(CountingLiFi {
            status_reads: status_reads.clone(),
        })
        .mount(&lifi)
        .await;
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["lifi".into()];
    providers.lifi.base_url = format!("{}/v1/", lifi.uri()).parse().unwrap();
    let server = TestServer::start_with(Options {
        live: Some(Live {
            providers,
            chains: Default::default(),
        }),
        ..Options::default()
    })
    .await;
    let key = server.key(&[PricesRead, OrdersCreate, OrdersRead]).await;
    let wallet = PrivateKeySigner::random().address();
    let plan = plan_for(&server, &key, wallet, ("USDCBASE", "USDCARB"), "25").await;
    let hash = format!("0x{}", "ab".repeat(32));
    assert_eq!(
        report(&server, &key, &plan, &hash).await.data(200)["status"],
        "submitted"
    );

    // A second worker node's tracker on the same database.
    let state = &server.state;
    let poll_ms = swapd::config::Config::default().orders.poll_interval_ms;
    let other = swapd_worker::ExecutionTracker::new(
        state.store.clone(),
        state.market.clone(),
        state.clock.clone(),
        poll_ms,
    );
    for pass in 1..=3 {
        server.clock.advance_ms(poll_ms);
        tokio::join!(server.tracker.run_due(), other.run_due());
        assert_eq!(
            *status_reads.lock().unwrap(),
            pass,
            "one read per look, by one node"
        );
    }
    let pending = execution(&server, &key, &plan).await;
    assert_eq!(pending["substatus"], "awaiting_destination");

    // A node that claims the plan and dies keeps it only until its lease ends.
    server.clock.advance_ms(poll_ms);
    let now = swapd_core::Clock::now_ms(server.clock.as_ref());
    let claimed = state
        .store
        .claim_due_execution_plans(now, now + swapd_worker::LEASE_MS, 10)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    other.run_due().await;
    assert_eq!(*status_reads.lock().unwrap(), 3, "leased to the dead node");
    server.clock.advance_ms(swapd_worker::LEASE_MS);
    other.run_due().await;
    assert_eq!(
        *status_reads.lock().unwrap(),
        4,
        "taken over after the lease"
    );
}

/// A fake Relay quoting 0.01 ETH → USDC on Base as one transaction that calls the router, as
/// Relay's step items may: without a gas limit. The router pays 30.000123 USDC.
struct FakeRelayWithoutGas {
    recipient: Address,
}

impl Respond for FakeRelayWithoutGas {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if request.url.path() != "/quote/v2" {
            return ResponseTemplate::new(404);
        }
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let native = Address::ZERO;
        let data = swapNativeForTokenCall {
            token: USDC_BASE,
            amountOut: U256::from(30_000_123u64),
            minAmountOut: U256::from(29_100_000u64),
            recipient: self.recipient,
        }
        .abi_encode();
        let side = |address: Address, decimals: u8, amount: &str, minimum: &str| {
            json!({"currency": {"chainId": 8453, "address": address, "decimals": decimals, "symbol": "T"},
                   "amount": amount, "minimumAmount": minimum})
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "steps": [{"id": "deposit", "kind": "transaction", "requestId": RELAY_REQUEST,
                       "items": [{"status": "incomplete", "data": {
                           "from": body["user"], "to": ROUTER, "data": Bytes::from(data),
                           "value": "10000000000000000", "chainId": 8453}}]}],
            "fees": {},
            // Relay guarantees 3 % under what it expects: wider than the resolve's slippage.
            "details": {"currencyIn": side(native, 18, "10000000000000000", "10000000000000000"),
                        "currencyOut": side(USDC_BASE, 6, "30000000", "29100000"),
                        "timeEstimate": 5}
        }))
    }
}

#[tokio::test]
async fn a_relay_step_without_gas_is_planned_without_it_and_a_wallet_sends_it() {
    let Some((chain, wallet)) = chain_with_a_funded_wallet().await else {
        return;
    };
    let relay = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(FakeRelayWithoutGas {
            recipient: wallet.address(),
        })
        .mount(&relay)
        .await;
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["relay".into()];
    providers.relay.base_url = relay.uri().parse().unwrap();
    providers.relay.timeout_ms = 5_000;
    let chains = [(
        "base".to_owned(),
        swapd::config::ChainConfig {
            rpc_url: chain.url.parse().unwrap(),
            confirmations: Some(1),
            timeout_ms: 5_000,
        },
    )]
    .into();
    let server = TestServer::start_with(Options {
        live: Some(Live { providers, chains }),
        ..Options::default()
    })
    .await;
    let key = server.key(&[PricesRead, OrdersCreate, OrdersRead]).await;
    let query = format!(
        "fromCcy=ETHBASE&toCcy=USDCBASE&amount=0.01&walletAddress={}",
        wallet.address()
    );
    let card = card_of(&server, &key, &query, "relay").await;
    assert_eq!(card["minOutputAmount"], "29.1", "{card}");
    // The quote is unchanged at resolve, its guarantee 3 % under the expected output, wider
    // than the default 0.5 % slippage: accepted, and the plan shows Relay's own guarantee.
    let plan = resolve(&server, &key, &card, wallet.address()).await;
    assert_eq!(plan["minOutputAmount"], "29.1", "{plan}");
    assert_eq!(plan["expectedOutputAmount"], "30");
    let step = &plan["steps"][0];
    assert!(
        step["description"]
            .as_str()
            .unwrap()
            .contains("at least 29.1 USDC"),
        "{step}"
    );
    let transaction = &step["transaction"];
    assert_eq!(
        transaction["gas"],
        Value::Null,
        "never a gas limit of 0: {transaction}"
    );

    // A wallet estimates the gas and sends it; it is mined and pays out.
    let hash = chain.sign_and_send(&wallet, transaction).await;
    let receipt = chain.rpc("eth_getTransactionReceipt", json!([hash])).await;
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert_eq!(
        chain.token_balance(wallet.address()).await,
        U256::from(30_000_123u64)
    );
}

/// A fake 0x (AllowanceHolder API) on Base: 0.01 ETH buys 30.0001 USDC, of which it pays each
/// fee (`swapFeeBps` of the buy amount, in the buy token) to its `swapFeeRecipient` and the rest
/// to the taker, in the one transaction it quotes, through the test router. Asked without the
/// fee parameters, it answers 400.
struct FakeZeroX;

impl Respond for FakeZeroX {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let query: std::collections::HashMap<String, String> =
            request.url.query_pairs().into_owned().collect();
        let usdc = USDC_BASE.to_checksum(None);
        let (Some(recipients), Some(bps), Some(token)) = (
            query.get("swapFeeRecipient"),
            query.get("swapFeeBps"),
            query.get("swapFeeToken"),
        ) else {
            return ResponseTemplate::new(400).set_body_json(json!({"name": "INPUT_INVALID"}));
        };
        assert_eq!(token, &usdc, "the fees are taken in the buy token");
        let gross = 30_000_100u64;
        let recipients: Vec<Address> = recipients.split(',').map(|a| a.parse().unwrap()).collect();
        let fees: Vec<U256> = bps
            .split(',')
            .map(|bps| U256::from(gross * bps.parse::<u64>().unwrap() / 10_000))
            .collect();
        let paid: u64 = fees.iter().map(|fee| fee.to::<u64>()).sum();
        let (buy, min_buy) = (gross - paid, 29_700_000u64);
        let data = swapNativeForTokenWithFeesCall {
            token: USDC_BASE,
            amountOut: U256::from(buy),
            minAmountOut: U256::from(min_buy),
            recipient: query["taker"].parse().unwrap(),
            feeRecipients: recipients,
            fees,
        }
        .abi_encode();
        ResponseTemplate::new(200).set_body_json(json!({
            "liquidityAvailable": true,
            "buyToken": usdc, "buyAmount": buy.to_string(), "minBuyAmount": min_buy.to_string(),
            "sellToken": "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE",
            "sellAmount": query["sellAmount"],
            "fees": {"integratorFee": null, "zeroExFee": null, "gasFee": null},
            "issues": {"allowance": null, "balance": null, "simulationIncomplete": false},
            "totalNetworkFee": "1000000000000",
            "transaction": {"to": ROUTER, "data": Bytes::from(data), "gas": "200000",
                            "gasPrice": "1000000000", "value": query["sellAmount"]},
            "zid": "0x1"
        }))
    }
}

/// The fees on a live 0x route: quoted per party (the affiliate's share carved out of the
/// service fee), passed to 0x as `swapFeeRecipient`/`swapFeeBps`/`swapFeeToken` with one
/// recipient per party (the operator's, the partner's), paid on a real chain by the plan's own
/// transaction, and realized in the ledger from the receipt's `Transfer` logs to the
/// recipients: exactly what was expected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0x_plan_pays_each_partys_fee_on_chain_and_the_ledger_realizes_it_from_the_logs() {
    let Some((chain, wallet)) = chain_with_a_funded_wallet().await else {
        return;
    };
    let (operator, partner) = (
        PrivateKeySigner::random().address(),
        PrivateKeySigner::random().address(),
    );

    let zerox = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(FakeZeroX)
        .mount(&zerox)
        .await;
    let mut providers = swapd::config::Config::default().providers;
    providers.live = vec!["zerox".into()];
    providers.zerox.base_url = format!("{}/", zerox.uri()).parse().unwrap();
    providers.zerox.api_key = Some("zx-key".parse().unwrap());
    providers.zerox.timeout_ms = 5_000;
    let chains = [(
        "base".to_owned(),
        swapd::config::ChainConfig {
            rpc_url: chain.url.parse().unwrap(),
            confirmations: Some(1),
            timeout_ms: 5_000,
        },
    )]
    .into();
    let mut fees = swapd::config::FeesConfig {
        service_bps: 30,
        ..Default::default()
    };
    fees.recipients.evm = Some(operator.to_string().parse().unwrap());
    let server = TestServer::start_with(Options {
        live: Some(Live { providers, chains }),
        fees,
        ..Options::default()
    })
    .await;
    let now = swapd_core::Clock::now_ms(server.clock.as_ref());
    let affiliate =
        swapd_core::affiliates::Affiliate::new("wallet-app", "Wallet App", 2_500, "0xabc", now)
            .unwrap();
    server
        .state
        .store
        .insert_affiliate(&affiliate)
        .await
        .unwrap();
    let policy = swapd_core::api_keys::ApiKeyPolicy::new(
        "partner",
        [PricesRead, OrdersCreate, OrdersRead],
        &[],
        &[],
        Default::default(),
    )
    .unwrap()
    .with_markup_bps(20)
    .with_markup_recipient(&partner.to_checksum(None))
    .unwrap();
    let key = server.key_with_policy(policy).await;

    let query = format!(
        "fromCcy=ETHBASE&toCcy=USDCBASE&amount=0.01&walletAddress={}&affiliateCode=wallet-app",
        wallet.address()
    );
    let card = card_of(&server, &key, &query, "zerox").await;
    // Of the 30.0001 USDC: 0.09 the operator's (a quarter of it the affiliate's), 0.06 the
    // partner's.
    assert_eq!(card["expectedOutputAmount"], "29.8501");
    let parties: Vec<(Value, Value, Value)> = card["fees"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|fee| ["service", "affiliate", "partner"].contains(&fee["kind"].as_str().unwrap()))
        .map(|fee| {
            (
                fee["kind"].clone(),
                fee["bps"].clone(),
                fee["amount"].clone(),
            )
        })
        .collect();
    assert_eq!(
        parties,
        [
            (json!("service"), json!("22.5"), json!("0.0675")),
            (json!("affiliate"), json!("7.5"), json!("0.0225")),
            (json!("partner"), json!("20"), json!("0.06")),
        ]
    );

    let plan = resolve(&server, &key, &card, wallet.address()).await;
    let hash = chain
        .sign_and_send(&wallet, &plan["steps"][0]["transaction"])
        .await;
    assert_eq!(
        report(&server, &key, &plan, &hash).await.data(200)["status"],
        "submitted"
    );
    track(&server).await;
    let done = execution(&server, &key, &plan).await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["receivedAmount"], "29.8501");
    assert_eq!(chain.token_balance(operator).await, U256::from(90_000u64));
    assert_eq!(chain.token_balance(partner).await, U256::from(60_000u64));

    // Expected with the plan, realized from the Transfer logs: one row per party and stage.
    let rows = server
        .state
        .store
        .fee_ledger(Some(&key.owner()), 0, i64::MAX, 100)
        .await
        .unwrap();
    let id = plan["executionPlanId"].as_str().unwrap();
    let mut seen: Vec<(String, String, String)> = rows
        .iter()
        .map(|row| {
            assert_eq!((row.order_id.as_str(), row.currency.code), (id, "USDCBASE"));
            let party = row.party.as_str().to_owned();
            (party, row.stage.as_str().to_owned(), row.amount.to_string())
        })
        .collect();
    seen.sort();
    let row = |party: &str, stage: &str, amount: &str| (party.into(), stage.into(), amount.into());
    assert_eq!(
        seen,
        [
            row("affiliate", "expected", "0.0225"),
            row("affiliate", "realized", "0.0225"),
            row("partner", "expected", "0.06"),
            row("partner", "realized", "0.06"),
            row("service", "expected", "0.0675"),
            row("service", "realized", "0.0675"),
        ]
    );
    // The partner's earnings: its markup, expected and realized.
    let earnings = server
        .call(&key, "GET", "/api/v3/earnings", "", b"")
        .await
        .data(200)
        .clone();
    assert_eq!(
        earnings["totals"],
        json!([{"currency": "USDCBASE", "expected": "0.06", "realized": "0.06"}])
    );
}
