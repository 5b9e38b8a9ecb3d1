//! Onchain execution on `/api/v3` against a running server with the sandbox providers: route
//! cards resolved into plans, executions reported with transaction hashes or with gasless
//! signatures made here by a local key (alloy's signer), tracked to their end; every refusal,
//! ownership, and idempotency.

use crate::support::text;
use crate::support::{BLOCK_MS, Resp, TestKey, TestServer};
use alloy_primitives::{Address, hex, keccak256};
use alloy_signer::SignerSync;
use alloy_signer_local::PrivateKeySigner;
use base64::Engine;
use serde_json::{Value, json};
use swapd_types::Permission::{OrdersCreate, OrdersRead, PricesRead};

const TOKEN: &str = "X-Onchain-Execution-Access-Token";
const SOLANA_WALLET: &str = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const SOLANA_RECIPIENT: &str = "DRpbCBMxVnDK7maPM5tGv6MvB3v1sRMC86PZ8okm21hy";
const EVM_WALLET: &str = "0x52908400098527886E0F7030069857D2E4169EE7";

async fn new_key(server: &TestServer) -> TestKey {
    server.key(&[PricesRead, OrdersCreate, OrdersRead]).await
}

async fn routes(server: &TestServer, key: &TestKey, query: &str) -> Vec<Value> {
    let resp = server.call(key, "GET", "/api/v3/routes", query, b"").await;
    resp.data(200)["routes"].as_array().unwrap().clone()
}

/// The usable card of `provider` for `query`.
async fn card(server: &TestServer, key: &TestKey, query: &str, provider: &str) -> Value {
    let cards = routes(server, key, query).await;
    let card = cards
        .iter()
        .find(|c| c["executionProvider"] == provider)
        .unwrap_or_else(|| panic!("no {provider} card in {cards:?}"))
        .clone();
    assert_eq!(card["isAvailable"], true, "{card}");
    assert_eq!(card["executionType"], "onchain");
    assert_eq!(card["walletRequired"], true);
    card
}

async fn resolve(server: &TestServer, key: &TestKey, card: &Value, wallet: &str) -> Resp {
    server
        .post(
            key,
            "/api/v3/onchain/routes/resolve",
            &json!({"routeQuoteId": card["routeQuoteId"], "walletAddress": wallet}),
        )
        .await
}

async fn report(server: &TestServer, key: &TestKey, token: &str, body: &Value) -> Resp {
    let request = server
        .sign(
            key,
            "POST",
            "/api/v3/onchain/executions",
            "",
            &serde_json::to_vec(body).unwrap(),
        )
        .set(TOKEN, token);
    server.send(&request).await
}

async fn status(server: &TestServer, key: &TestKey, plan_id: &str, token: &str) -> Resp {
    let request = server
        .sign(
            key,
            "GET",
            &format!("/api/v3/onchain/executions/{plan_id}"),
            "",
            b"",
        )
        .set(TOKEN, token);
    server.send(&request).await
}

/// Moves the clock `blocks` sandbox blocks on and runs one tracker pass.
async fn blocks(server: &TestServer, blocks: i64) {
    server.clock.advance_ms(blocks * BLOCK_MS);
    server.tracker.run_due().await;
}

fn evm_hash(last_byte: u8) -> String {
    format!("0x{}{last_byte:02x}", "3c".repeat(31))
}

fn tx_report(plan: &Value, namespace: &str, wallet: &str, tx_hash: &str) -> Value {
    json!({
        "executionPlanId": plan["executionPlanId"],
        "chainNamespace": namespace,
        "walletAddress": wallet,
        "txHash": tx_hash,
    })
}

/// The 4-byte selector of a Solidity signature.
fn selector(signature: &str) -> String {
    format!("0x{}", hex::encode(&keccak256(signature)[..4]))
}

#[tokio::test]
async fn an_evm_dex_swap_runs_from_card_to_done_with_a_tx_hash() {
    let server = TestServer::start().await;
    let key = new_key(&server).await;
    let card = card(
        &server,
        &key,
        "fromCcy=ETH&toCcy=USDCETH&amount=0.5",
        "meridian",
    )
    .await;
    let resp = resolve(&server, &key, &card, EVM_WALLET).await;
    let plan = resp.data(200).clone();
    assert!(text(&plan["executionPlanId"]).starts_with("ocx_"));
    assert_eq!(plan["executionProvider"], "meridian");
    assert_eq!(plan["chainNamespace"], "eip155");
    assert_eq!(plan["walletAddress"], EVM_WALLET);
    assert_eq!(plan["expectedOutputAmount"], card["expectedOutputAmount"]);
    assert_eq!(plan["minOutputAmount"], card["minOutputAmount"]);
    assert_eq!(plan["slippageBps"], 50);
    assert_eq!(plan["gasless"], false);
    assert_eq!(plan["expiresAt"], server.now_secs() + 300);
    // Native ETH in: one router call carrying the value, no approval.
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    let step = &steps[0];
    assert_eq!(step["kind"], "transaction");
    assert_eq!(step["chainId"], 1);
    assert_eq!(step["chain"], "eip155:1");
    let tx = &step["transaction"];
    assert_eq!(tx["value"], "500000000000000000");
    assert!(text(&tx["data"]).starts_with(&selector(
        "swapExactIn(address,address,uint256,uint256,address,uint256,bytes32)"
    )));
    assert!(text(&tx["to"]).parse::<Address>().is_ok());
    assert_eq!(tx["gas"], "250000");

    let token = text(&plan["executionAccessToken"]).to_owned();
    let id = text(&plan["executionPlanId"]).to_owned();
    let awaiting = status(&server, &key, &id, &token).await;
    assert_eq!(awaiting.data(200)["status"], "awaiting_user");
    assert_eq!(awaiting.data(200)["substatus"], "awaiting_transaction");
    assert_eq!(awaiting.data(200)["terminal"], false);

    // The execution's hosted page, linked from the plan and its status.
    let page = text(&plan["executionPageUrl"]).to_owned();
    assert_eq!(awaiting.data(200)["executionPageUrl"], page.as_str());
    assert!(page.starts_with(&format!("{}/x/{id}/", server.base)));
    let html = |url: String| async move {
        let response = reqwest::get(&url).await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    };
    let (code, shown) = html(page.clone()).await;
    assert_eq!(code, 200);
    assert!(shown.contains(r#"data-status="awaiting_user""#), "{shown}");
    assert!(shown.contains(text(&steps[0]["description"])));
    assert!(shown.contains("None reported yet."));
    assert!(!shown.contains(&key.id) && !shown.contains(&token));
    // Partners put the page before their customers: it names no provider.
    let provider = text(&plan["executionProvider"]);
    assert!(!shown.contains(&format!("with {provider}")), "{shown}");
    let (code, _) = html(format!("{}/x/{id}/{}", server.base, "0".repeat(32))).await;
    assert_eq!(code, 404);

    let hash = evm_hash(0x01);
    let resp = report(
        &server,
        &key,
        &token,
        &tx_report(
            &plan,
            "eip155",
            EVM_WALLET,
            &hash.to_uppercase().replace("0X", "0x"),
        ),
    )
    .await;
    let submitted = resp.data(200);
    assert_eq!(submitted["status"], "submitted");
    assert_eq!(submitted["substatus"], "not_indexed");
    assert_eq!(submitted["reportedAt"], server.now_secs());

    blocks(&server, 1).await;
    let pending = status(&server, &key, &id, &token).await;
    let pending = pending.data(200);
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["substatus"], "source_confirming");
    assert_eq!(
        pending["txHashes"][0]["txHash"], hash,
        "stored in lowercase"
    );
    assert_eq!(pending["txHashes"][0]["role"], "source");

    blocks(&server, 2).await;
    let done = status(&server, &key, &id, &token).await;
    let done = done.data(200);
    assert_eq!(done["status"], "done");
    assert_eq!(done["outcome"], "completed");
    assert_eq!(done["terminal"], true);
    assert_eq!(done["receivedToken"], "USDCETH");
    assert_eq!(done["receivedAmount"], card["expectedOutputAmount"]);
    assert_eq!(done["txHashes"].as_array().unwrap().len(), 1);
    let (_, shown) = html(page.clone()).await;
    assert!(shown.contains(r#"data-status="done""#), "{shown}");
    assert!(shown.contains(&hash) && shown.contains(text(&done["receivedAmount"])));

    // Terminal: more passes change nothing.
    blocks(&server, 50).await;
    assert_eq!(status(&server, &key, &id, &token).await.data(200), done);
    server.stop().await;
}

#[tokio::test]
async fn a_token_swap_approves_first_and_custom_slippage_lowers_the_minimum() {
    let server = TestServer::start().await;
    let key = new_key(&server).await;
    let card = card(
        &server,
        &key,
        "fromCcy=USDCBASE&toCcy=ETHBASE&amount=2500",
        "meridian",
    )
    .await;
    let resp = server
        .post(
            &key,
            "/api/v3/onchain/routes/resolve",
            &json!({"routeQuoteId": card["routeQuoteId"], "walletAddress": EVM_WALLET,
                "walletChainNamespace": "eip155", "slippageBps": 300}),
        )
        .await;
    let plan = resp.data(200);
    assert_eq!(plan["slippageBps"], 300);
    // 300 bps below the expected output, rounded down to the currency's 8 fraction digits.
    let units = |value: &Value| -> u128 {
        let (whole, fraction) = text(value).split_once('.').unwrap_or((text(value), ""));
        format!("{whole}{fraction:0<8}").parse().unwrap()
    };
    let expected = units(&plan["expectedOutputAmount"]);
    assert_eq!(units(&plan["minOutputAmount"]), expected * 9_700 / 10_000);
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["stepId"], "approve");
    assert_eq!(
        steps[0]["transaction"]["to"],
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    );
    assert!(
        text(&steps[0]["transaction"]["data"]).starts_with(&selector("approve(address,uint256)"))
    );
    assert_eq!(steps[1]["transaction"]["value"], "0");
    assert_eq!(steps[0]["chainId"], 8453);
    server.stop().await;
}

#[tokio::test]
async fn a_solana_swap_is_an_unsigned_transaction_and_completes_with_its_signature() {
    let server = TestServer::start().await;
    let key = new_key(&server).await;
    let card = card(
        &server,
        &key,
        &format!("fromCcy=SOL&toCcy=USDCSOL&amount=3&walletAddress={SOLANA_WALLET}&walletChainNamespace=solana"),
        "sunfish",
    )
    .await;
    let resp = resolve(&server, &key, &card, SOLANA_WALLET).await;
    let plan = resp.data(200).clone();
    assert_eq!(plan["chainNamespace"], "solana");
    let step = &plan["steps"][0];
    assert_eq!(step["chain"], "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp");
    assert_eq!(step["chainId"], Value::Null);
    let serialized = base64::engine::general_purpose::STANDARD
        .decode(text(&step["transaction"]["serializedTransaction"]))
        .unwrap();
    assert_eq!(serialized[0], 1, "one signature slot");
    // The fee payer (first account key) is the wallet.
    assert_eq!(
        serialized[65 + 4..65 + 36],
        bs58::decode(SOLANA_WALLET).into_vec().unwrap()[..]
    );

    let token = text(&plan["executionAccessToken"]).to_owned();
    let id = text(&plan["executionPlanId"]).to_owned();
    // An EVM-looking hash is no Solana signature.
    let resp = report(
        &server,
        &key,
        &token,
        &tx_report(&plan, "solana", SOLANA_WALLET, &evm_hash(1)),
    )
    .await;
    resp.expect(400, "validation_failed");
    let signature = bs58::encode([0x21u8; 64]).into_string();
    let resp = report(
        &server,
        &key,
        &token,
        &tx_report(&plan, "solana", SOLANA_WALLET, &signature),
    )
    .await;
    assert_eq!(resp.data(200)["status"], "submitted");
    blocks(&server, 3).await;
    let done = status(&server, &key, &id, &token).await;
    let done = done.data(200);
    assert_eq!(done["status"], "done");
    assert_eq!(done["outcome"], "completed");
    assert_eq!(done["receivedToken"], "USDCSOL");
    assert_eq!(done["txHashes"][0]["txHash"], signature);
    assert_eq!(
        done["txHashes"][0]["chain"],
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
    );
    server.stop().await;
}

/// Resolves an ETH (Base) → USDC (Solana) bridge card for the EVM wallet with a Solana
/// recipient.
async fn bridge_plan(server: &TestServer, key: &TestKey) -> Value {
    let card = card(
        server,
        key,
        &format!(
            "fromCcy=ETHBASE&toCcy=USDCSOL&amount=1&walletAddress={EVM_WALLET}&walletChainNamespace=eip155&recipientAddress={SOLANA_RECIPIENT}"
        ),
        "arcbridge",
    )
    .await;
    resolve(server, key, &card, EVM_WALLET)
        .await
        .data(200)
        .clone()
}

#[tokio::test]
async fn an_evm_to_solana_bridge_pays_the_recipient_and_each_hash_ending_selects_its_outcome() {
    let server = TestServer::start().await;
    let key = new_key(&server).await;
    let plan = bridge_plan(&server, &key).await;
    assert_eq!(plan["recipientAddress"], SOLANA_RECIPIENT);
    assert_eq!(plan["gasless"], false);
    let tx = &plan["steps"][0]["transaction"];
    assert_eq!(tx["value"], "1000000000000000000");
    let calldata = text(&tx["data"]);
    assert!(calldata.starts_with(&selector(
        "bridgeOut(address,uint256,uint256,bytes32,bytes32,uint256,uint256,bytes32)"
    )));
    // The Solana recipient's 32-byte key is an argument of the call.
    let recipient = hex::encode(bs58::decode(SOLANA_RECIPIENT).into_vec().unwrap());
    assert!(calldata.contains(&recipient));

    let token = text(&plan["executionAccessToken"]).to_owned();
    let id = text(&plan["executionPlanId"]).to_owned();
    let resp = report(
        &server,
        &key,
        &token,
        &tx_report(&plan, "eip155", EVM_WALLET, &evm_hash(0x10)),
    )
    .await;
    assert_eq!(resp.data(200)["status"], "submitted");
    let mut seen = Vec::new();
    for _ in 0..8 {
        blocks(&server, 1).await;
        let resp = status(&server, &key, &id, &token).await;
        let view = resp.data(200);
        seen.push(format!(
            "{}/{}",
            text(&view["status"]),
            text(&view["substatus"])
        ));
    }
    seen.dedup();
    assert_eq!(
        seen,
        [
            "pending/source_confirming",
            "pending/awaiting_destination",
            "done/completed"
        ]
    );
    let done = status(&server, &key, &id, &token).await;
    let done = done.data(200);
    assert_eq!(done["receivedToken"], "USDCSOL");
    let hashes = done["txHashes"].as_array().unwrap();
    assert_eq!(hashes[1]["role"], "destination");
    assert_eq!(
        hashes[1]["chain"],
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
    );
    assert_eq!(
        bs58::decode(text(&hashes[1]["txHash"]))
            .into_vec()
            .unwrap()
            .len(),
        64
    );

    // Each documented ending, on a plan of its own.
    for (ending, status_text, outcome, token_code) in [
        (
            0xfd,
            "done",
            Value::from("refunded"),
            Value::from("ETHBASE"),
        ),
        (0xfc, "done", Value::from("partial"), Value::from("USDCSOL")),
        (0xff, "failed", Value::Null, Value::Null),
        (0xfe, "failed", Value::Null, Value::Null),
    ] {
        let server_key = new_key(&server).await;
        let plan = bridge_plan(&server, &server_key).await;
        let token = text(&plan["executionAccessToken"]).to_owned();
        let id = text(&plan["executionPlanId"]).to_owned();
        report(
            &server,
            &server_key,
            &token,
            &tx_report(&plan, "eip155", EVM_WALLET, &evm_hash(ending)),
        )
        .await;
        blocks(&server, 20).await;
        let resp = status(&server, &server_key, &id, &token).await;
        let view = resp.data(200);
        assert_eq!(view["status"], status_text, "{ending:x}: {view}");
        assert_eq!(view["outcome"], outcome, "{ending:x}");
        assert_eq!(view["receivedToken"], token_code, "{ending:x}");
        assert_eq!(view["terminal"], true);
        if ending == 0xfd {
            assert_eq!(view["receivedAmount"], "1");
        }
        if ending == 0xff {
            assert_eq!(view["substatus"], "reverted");
        }
    }
    server.stop().await;
}

/// Signs every signature step of `plan` with `signer`, as a wallet would
/// (`eth_signTypedData_v4`).
pub(crate) fn sign_steps(plan: &Value, signer: &PrivateKeySigner) -> Vec<Value> {
    plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step["kind"] == "signature")
        .map(|step| {
            let request = &step["signature"];
            let typed: alloy_dyn_abi::TypedData =
                serde_json::from_value(request["typedData"].clone()).unwrap();
            let signature = signer.sign_dynamic_typed_data_sync(&typed).unwrap();
            json!({
                "signatureId": request["signatureId"],
                "purpose": request["purpose"],
                "signature": format!("0x{}", hex::encode(signature.as_bytes())),
            })
        })
        .collect()
}

fn signature_report(plan: &Value, wallet: &str, signatures: &[Value]) -> Value {
    json!({
        "executionPlanId": plan["executionPlanId"],
        "chainNamespace": "eip155",
        "walletAddress": wallet,
        "signatures": signatures,
    })
}

#[tokio::test]
async fn a_gasless_bridge_runs_on_signatures_verified_against_the_plan_wallet() {
    let server = TestServer::start().await;
    let key = new_key(&server).await;
    let signer = PrivateKeySigner::random();
    let wallet = signer.address().to_checksum(None);
    let card = card(
        &server,
        &key,
        &format!(
            "fromCcy=USDCBASE&toCcy=USDCSOL&amount=250&walletAddress={wallet}&recipientAddress={SOLANA_RECIPIENT}"
        ),
        "arcbridge",
    )
    .await;
    let resp = resolve(&server, &key, &card, &wallet).await;
    let plan = resp.data(200).clone();
    assert_eq!(plan["gasless"], true);
    let steps = plan["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|s| s["kind"] == "signature"));
    let permit = &steps[0]["signature"];
    assert_eq!(permit["purpose"], "permit");
    assert_eq!(permit["typedData"]["primaryType"], "Permit");
    assert_eq!(
        permit["typedData"]["domain"]["verifyingContract"],
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    );
    assert_eq!(permit["typedData"]["message"]["owner"], wallet);
    assert_eq!(permit["typedData"]["message"]["value"], "250000000");
    assert_eq!(
        steps[1]["signature"]["typedData"]["primaryType"],
        "BridgeOrder"
    );
    let token = text(&plan["executionAccessToken"]).to_owned();
    let id = text(&plan["executionPlanId"]).to_owned();
    let good = sign_steps(&plan, &signer);

    // A txHash is not how a gasless plan is reported.
    report(
        &server,
        &key,
        &token,
        &tx_report(&plan, "eip155", &wallet, &evm_hash(1)),
    )
    .await
    .expect(400, "validation_failed");
    // Signed by another key: refused, naming both wallets.
    let stranger = sign_steps(&plan, &PrivateKeySigner::random());
    let resp = report(
        &server,
        &key,
        &token,
        &signature_report(&plan, &wallet, &stranger),
    )
    .await;
    resp.expect(422, "execution_signature_invalid");
    assert!(resp.message().contains(&wallet), "{}", resp.message());
    // A tampered signature (one bit of s).
    let mut tampered = good.clone();
    let mut bytes = hex::decode(&text(&tampered[1]["signature"])[2..]).unwrap();
    bytes[40] ^= 1;
    tampered[1]["signature"] = format!("0x{}", hex::encode(bytes)).into();
    report(
        &server,
        &key,
        &token,
        &signature_report(&plan, &wallet, &tampered),
    )
    .await
    .expect(422, "execution_signature_invalid");
    // The right signatures in the wrong order.
    let swapped = vec![good[1].clone(), good[0].clone()];
    report(
        &server,
        &key,
        &token,
        &signature_report(&plan, &wallet, &swapped),
    )
    .await
    .expect(422, "execution_signature_invalid");
    // Only one of the two.
    report(
        &server,
        &key,
        &token,
        &signature_report(&plan, &wallet, &good[..1]),
    )
    .await
    .expect(422, "execution_signature_invalid");
    // Nothing of that changed the execution.
    assert_eq!(
        status(&server, &key, &id, &token).await.data(200)["status"],
        "awaiting_user"
    );

    // The wallet's own signatures (its address in lowercase is the same wallet).
    let resp = report(
        &server,
        &key,
        &token,
        &signature_report(&plan, &wallet.to_lowercase(), &good),
    )
    .await;
    assert_eq!(resp.data(200)["status"], "submitted");
    blocks(&server, 7).await;
    let done = status(&server, &key, &id, &token).await;
    let done = done.data(200);
    assert_eq!(done["status"], "done");
    assert_eq!(done["outcome"], "completed");
    assert_eq!(done["receivedToken"], "USDCSOL");
    // The relayer's source transaction, then the destination transfer.
    assert_eq!(done["txHashes"][0]["chain"], "eip155:8453");
    assert_eq!(text(&done["txHashes"][0]["txHash"]).len(), 66);
    assert_eq!(done["txHashes"][1]["role"], "destination");
    server.stop().await;
}

#[tokio::test]
async fn resolve_and_report_are_idempotent() {
    let server = TestServer::start().await;
    let key = new_key(&server).await;
    let card = card(
        &server,
        &key,
        "fromCcy=ETH&toCcy=USDTETH&amount=1",
        "meridian",
    )
    .await;
    let body = serde_json::to_vec(
        &json!({"routeQuoteId": card["routeQuoteId"], "walletAddress": EVM_WALLET}),
    )
    .unwrap();
    let first = server
        .send(&server.sign(&key, "POST", "/api/v3/onchain/routes/resolve", "", &body))
        .await;
    let plan = first.data(200).clone();
    // The same body under a new Idempotency-Key: the same plan and token.
    let again = server
        .send(&server.sign(&key, "POST", "/api/v3/onchain/routes/resolve", "", &body))
        .await;
    assert_eq!(again.data(200), &plan);
    // Letter case of the wallet does not make another plan; another slippage does.
    let lower = resolve(&server, &key, &card, &EVM_WALLET.to_lowercase()).await;
    assert_eq!(lower.data(200)["executionPlanId"], plan["executionPlanId"]);
    let other = server.post(&key, "/api/v3/onchain/routes/resolve", &json!({"routeQuoteId": card["routeQuoteId"], "walletAddress": EVM_WALLET, "slippageBps": 100}))
    .await;
    assert_ne!(other.data(200)["executionPlanId"], plan["executionPlanId"]);
    // The same request even after the card expired: still the plan it made.
    server.clock.advance_ms(120_000);
    let late = server
        .send(&server.sign(&key, "POST", "/api/v3/onchain/routes/resolve", "", &body))
        .await;
    assert_eq!(late.data(200)["executionPlanId"], plan["executionPlanId"]);

    let token = text(&plan["executionAccessToken"]).to_owned();
    let body = tx_report(&plan, "eip155", EVM_WALLET, &evm_hash(7));
    let request = server
        .sign(
            &key,
            "POST",
            "/api/v3/onchain/executions",
            "",
            &serde_json::to_vec(&body).unwrap(),
        )
        .set(TOKEN, &token);
    let first = server.send(&request).await;
    assert_eq!(first.data(200)["status"], "submitted");
    // The same Idempotency-Key (on a freshly signed request) replays the stored answer.
    let idempotency_key = request.get("Idempotency-Key");
    let replayed = server
        .send(
            &server
                .sign(
                    &key,
                    "POST",
                    "/api/v3/onchain/executions",
                    "",
                    &serde_json::to_vec(&body).unwrap(),
                )
                .set(TOKEN, &token)
                .set("Idempotency-Key", &idempotency_key),
        )
        .await;
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(replayed.body, first.body);
    // The same report under a new key is harmless; another report is refused.
    let repeated = report(&server, &key, &token, &body).await;
    assert_eq!(repeated.data(200)["status"], "submitted");
    report(
        &server,
        &key,
        &token,
        &tx_report(&plan, "eip155", EVM_WALLET, &evm_hash(8)),
    )
    .await
    .expect(409, "execution_already_reported");
    server.stop().await;
}

#[tokio::test]
async fn resolve_refuses_what_it_cannot_plan() {
    let server = TestServer::start().await;
    let key = new_key(&server).await;
    let cards = routes(&server, &key, "fromCcy=USDCETH&toCcy=ETH&amount=500").await;
    let offchain = cards
        .iter()
        .find(|c| c["executionType"] == "offchain" && c["isAvailable"] == true)
        .unwrap();
    resolve(&server, &key, offchain, EVM_WALLET)
        .await
        .expect(422, "route_unavailable");
    let onchain = cards
        .iter()
        .find(|c| c["executionProvider"] == "meridian")
        .unwrap();
    resolve(&server, &key, onchain, SOLANA_WALLET)
        .await
        .expect(400, "address_invalid");
    resolve(
        &server,
        &key,
        onchain,
        "0x52908400098527886e0f7030069857d2e4169eE7",
    )
    .await
    .expect(400, "address_invalid");
    server.post(&key, "/api/v3/onchain/routes/resolve", &json!({"routeQuoteId": onchain["routeQuoteId"], "walletAddress": SOLANA_WALLET, "walletChainNamespace": "solana"}))
    .await
    .expect(422, "wallet_unsupported");
    server.post(&key, "/api/v3/onchain/routes/resolve", &json!({"routeQuoteId": onchain["routeQuoteId"], "walletAddress": EVM_WALLET, "walletChainNamespace": "cosmos"}))
    .await
    .expect(400, "validation_failed");
    server.post(&key, "/api/v3/onchain/routes/resolve", &json!({"routeQuoteId": onchain["routeQuoteId"], "walletAddress": EVM_WALLET, "slippageBps": 5001}))
    .await
    .expect(400, "validation_failed");
    server.post(&key, "/api/v3/onchain/routes/resolve", &json!({"routeQuoteId": onchain["routeQuoteId"], "walletAddress": EVM_WALLET, "slippageBps": -1}))
    .await
    .expect(400, "validation_failed");
    server.post(&key, "/api/v3/onchain/routes/resolve", &json!({"routeQuoteId": "rqq_0123456789abcdef0123456789abcdef", "walletAddress": EVM_WALLET}))
    .await
    .expect(404, "route_not_found");

    // A card quoted for one wallet does not plan for another.
    let mine = card(
        &server,
        &key,
        &format!("fromCcy=ETH&toCcy=USDCETH&amount=1&walletAddress={EVM_WALLET}"),
        "meridian",
    )
    .await;
    resolve(
        &server,
        &key,
        &mine,
        "0x0000000000000000000000000000000000000001",
    )
    .await
    .expect(403, "wallet_mismatch");

    // Cards expire: then discover again.
    server.clock.advance_ms(61_000);
    resolve(&server, &key, onchain, EVM_WALLET)
        .await
        .expect(410, "quote_expired");

    // A pair only the bridge routes: the legacy quote endpoint refuses it and says where to go.
    let bridge_only = routes(&server, &key, "fromCcy=JUPSOL&toCcy=USDCBASE&amount=100").await;
    assert!(bridge_only.iter().all(|c| c["executionType"] == "onchain"));
    assert!(
        bridge_only
            .iter()
            .any(|c| c["executionProvider"] == "arcbridge")
    );
    let refused = server
        .post(
            &key,
            "/api/v3/quotes",
            &json!({"fromCcy": "JUPSOL", "toCcy": "USDCBASE", "amount": "100"}),
        )
        .await;
    refused.expect(422, "pair_unsupported");
    assert!(
        refused.message().contains("GET /routes"),
        "{}",
        refused.message()
    );
    server.stop().await;
}

#[tokio::test]
async fn reports_and_reads_need_the_plan_token_and_refuse_bad_reports() {
    let server = TestServer::start().await;
    let key = new_key(&server).await;
    let card_query = "fromCcy=ETH&toCcy=USDCETH&amount=0.2";
    let first = resolve(
        &server,
        &key,
        &card(&server, &key, card_query, "meridian").await,
        EVM_WALLET,
    )
    .await
    .data(200)
    .clone();
    let second = resolve(
        &server,
        &key,
        &card(&server, &key, card_query, "meridian").await,
        EVM_WALLET,
    )
    .await
    .data(200)
    .clone();
    let id = text(&first["executionPlanId"]).to_owned();
    let token = text(&first["executionAccessToken"]).to_owned();
    let other_token = text(&second["executionAccessToken"]).to_owned();
    let body = tx_report(&first, "eip155", EVM_WALLET, &evm_hash(1));

    let unsigned = server.sign(
        &key,
        "POST",
        "/api/v3/onchain/executions",
        "",
        &serde_json::to_vec(&body).unwrap(),
    );
    server
        .send(&unsigned)
        .await
        .expect(401, "execution_token_missing");
    let no_token = server.sign(
        &key,
        "GET",
        &format!("/api/v3/onchain/executions/{id}"),
        "",
        b"",
    );
    server
        .send(&no_token)
        .await
        .expect(401, "execution_token_missing");
    let resp = report(&server, &key, &other_token, &body).await;
    resp.expect(401, "execution_token_invalid");
    assert!(resp.message().contains("another execution plan"));
    status(&server, &key, &id, &other_token)
        .await
        .expect(401, "execution_token_invalid");
    status(&server, &key, &id, "v1.garbage")
        .await
        .expect(401, "execution_token_invalid");
    // The token's expiry pushed out: its MAC no longer matches.
    let mut parts: Vec<&str> = token.split('.').collect();
    parts[2] = "9999999999";
    status(&server, &key, &id, &parts.join("."))
        .await
        .expect(401, "execution_token_invalid");
    status(
        &server,
        &key,
        "ocx_0123456789abcdef0123456789abcdef",
        &token,
    )
    .await
    .expect(404, "execution_not_found");

    report(
        &server,
        &key,
        &token,
        &tx_report(&first, "solana", EVM_WALLET, &evm_hash(1)),
    )
    .await
    .expect(400, "validation_failed");
    report(
        &server,
        &key,
        &token,
        &tx_report(
            &first,
            "eip155",
            "0x0000000000000000000000000000000000000001",
            &evm_hash(1),
        ),
    )
    .await
    .expect(403, "wallet_mismatch");
    report(
        &server,
        &key,
        &token,
        &tx_report(&first, "eip155", EVM_WALLET, "0x1234"),
    )
    .await
    .expect(400, "validation_failed");
    let mut both = body.clone();
    both["signatures"] = json!([]);
    report(&server, &key, &token, &both)
        .await
        .expect(400, "validation_failed");
    let mut neither = body.clone();
    neither.as_object_mut().unwrap().remove("txHash");
    report(&server, &key, &token, &neither)
        .await
        .expect(400, "validation_failed");
    assert_eq!(
        status(&server, &key, &id, &token).await.data(200)["status"],
        "awaiting_user"
    );

    // Plans expire: reads say so at once, the tracker records it, reports are refused.
    server.clock.advance_ms(300_000);
    let expired = status(&server, &key, &id, &token).await;
    assert_eq!(expired.data(200)["status"], "expired");
    assert_eq!(expired.data(200)["terminal"], true);
    server.tracker.run_due().await;
    let stored = server
        .state
        .store
        .execution_plan(&crate::support::parsed(&id), &key.owner())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status.as_str(), "expired");
    assert_eq!(stored.next_check_at_ms, None);
    report(&server, &key, &token, &body)
        .await
        .expect(410, "plan_expired");
    // The token itself still reads the plan for a day.
    assert_eq!(
        status(&server, &key, &id, &token).await.data(200)["substatus"],
        "plan_expired"
    );
    server.stop().await;
}

#[tokio::test]
async fn another_key_can_neither_use_nor_see_a_plan() {
    let server = TestServer::start().await;
    let alice = new_key(&server).await;
    let bob = new_key(&server).await;
    let card = card(
        &server,
        &alice,
        "fromCcy=ETH&toCcy=USDCETH&amount=0.3",
        "meridian",
    )
    .await;
    // Bob cannot resolve Alice's card.
    resolve(&server, &bob, &card, EVM_WALLET)
        .await
        .expect(404, "route_not_found");
    let plan = resolve(&server, &alice, &card, EVM_WALLET)
        .await
        .data(200)
        .clone();
    let id = text(&plan["executionPlanId"]).to_owned();
    let token = text(&plan["executionAccessToken"]).to_owned();
    // Alice's token in Bob's hands: the plan is not Bob's.
    let as_bob = status(&server, &bob, &id, &token).await;
    as_bob.expect(404, "execution_not_found");
    let missing = status(
        &server,
        &bob,
        "ocx_0123456789abcdef0123456789abcdef",
        &token,
    )
    .await;
    assert_eq!(
        as_bob.body, missing.body,
        "foreign and missing look the same"
    );
    report(
        &server,
        &bob,
        &token,
        &tx_report(&plan, "eip155", EVM_WALLET, &evm_hash(1)),
    )
    .await
    .expect(404, "execution_not_found");
    // Bob's own plan's token does not open Alice's plan either.
    let bob_card = card_for(&server, &bob).await;
    let bob_plan = resolve(&server, &bob, &bob_card, EVM_WALLET)
        .await
        .data(200)
        .clone();
    status(
        &server,
        &alice,
        &id,
        text(&bob_plan["executionAccessToken"]),
    )
    .await
    .expect(401, "execution_token_invalid");
    // Keys without the permissions are refused before anything else.
    let reader = server.key(&[PricesRead]).await;
    server
        .post(
            &reader,
            "/api/v3/onchain/routes/resolve",
            &json!({"routeQuoteId": card["routeQuoteId"], "walletAddress": EVM_WALLET}),
        )
        .await
        .expect(403, "permission_denied");
    status(&server, &reader, &id, &token)
        .await
        .expect(403, "permission_denied");
    server.stop().await;
}

async fn card_for(server: &TestServer, key: &TestKey) -> Value {
    card(
        server,
        key,
        "fromCcy=ETH&toCcy=USDCETH&amount=0.3",
        "meridian",
    )
    .await
}
