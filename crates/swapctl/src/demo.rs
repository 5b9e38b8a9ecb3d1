//! `swapctl demo`: the whole journey against a sandbox swapd, each step checked.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use serde_json::Value;
use swapd_client::market::ExecutionType;
use swapd_client::onchain::{
    ExecutionReportInput, ExecutionStatus, ExecutionView, OnchainResolveInput, Outcome,
};
use swapd_client::orders::{EmergencyChoice, EmergencyInput, OrderInput, OrderView};
use swapd_client::sandbox::DepositInput;
use swapd_client::x402::{PrivateKeySigner, SolanaKey, Wallet, X402Client};
use swapd_client::{BusinessClient, ErrorCode, RetryPolicy, RoutesQuery, SwapApi};

use crate::cli::DemoArgs;
use crate::config::Settings;
use crate::onchain::wait_for;
use crate::orders::follow;
use crate::output::Out;

/// Addresses the sandbox accepts and pays normally (none of its burn addresses).
const TRON_PAYOUT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const ETH_PAYOUT: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
const BTC_REFUND: &str = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";

const DEMO_PERMISSIONS: &str = "prices:read,orders:create,orders:read,orders:update,notifications:write,webhooks:read,webhooks:write";

pub async fn run(settings: Settings, args: DemoArgs) -> anyhow::Result<()> {
    // The server first: a fresh `swapd serve` may still be starting (and migrating its data
    // dir, which `swapd keys create` also opens).
    let mode = wait_for_server(&settings.url).await?;
    ensure!(
        mode == "sandbox",
        "swapd at {} runs in {mode} mode: the demo simulates deposits, so it needs sandbox mode",
        settings.url
    );
    let settings = match &args.data_dir {
        Some(dir) => {
            let (key, secret) = create_key(dir, args.swapd_bin.as_deref())?;
            println!("created API key {key} in {}", dir.display());
            settings.with_credentials(key, secret)
        }
        None if settings.has_credentials() => settings,
        None => bail!(
            "the demo needs an API key: pass --data-dir with swapd's data directory (it creates \
             one there), or set SWAPD_API_KEY and SWAPD_API_SECRET"
        ),
    };
    let client = settings.business()?;
    client
        .readiness()
        .await
        .context("the API key is not accepted")?;
    let evm = settings
        .evm_key
        .clone()
        .unwrap_or_else(PrivateKeySigner::random);
    let solana = settings
        .solana_key
        .clone()
        .unwrap_or_else(|| SolanaKey::from_bytes(&rand_seed()));
    println!(
        "swapd {} in sandbox mode; EVM wallet {}, Solana wallet {}",
        settings.url,
        evm.address(),
        Wallet::Solana(solana.clone()).address()
    );

    let limit = Duration::from_secs(args.step_timeout);
    let mut failed = Vec::new();
    let mut step =
        |title: &str, outcome: Result<anyhow::Result<String>, tokio::time::error::Elapsed>| {
            let outcome = outcome
                .unwrap_or_else(|_| Err(anyhow::anyhow!("timed out after {}s", limit.as_secs())));
            match outcome {
                Ok(summary) => println!("✔ {title}: {summary}\n"),
                Err(error) => {
                    println!("✘ {title}: {error:#}\n");
                    failed.push(title.to_owned());
                }
            }
        };
    println!("\n== 1. An offchain fixed-rate order, from routes to payout ==");
    step("offchain order", timed(limit, fixed_order(&client)).await);
    println!("== 2. An emergency: too little arrives, the customer asks for a refund ==");
    step("emergency", timed(limit, emergency(&client)).await);
    println!("== 3. An onchain bridge: ETH on Base to USDC on Solana ==");
    step(
        "onchain bridge",
        timed(limit, bridge(&client, &evm, &solana)).await,
    );
    println!("== 4. A paid x402 order, owned by a Solana wallet that signs in ==");
    step(
        "x402 order",
        timed(limit, paid_order(&settings.url, &evm, &solana)).await,
    );

    if args.swaps > 0 {
        println!(
            "== 5. The market: {} across the providers ==",
            crate::output::count(args.swaps as usize, "swap", "swaps")
        );
        let wallet = evm.address().to_checksum(None);
        // Long enough for every swap and a refresh of the figures.
        let limit = limit.max(Duration::from_secs(600));
        step(
            "market",
            timed(limit, market_swaps(&client, &wallet, args.swaps)).await,
        );
    }
    let steps = if args.swaps > 0 { 5 } else { 4 };
    if failed.is_empty() {
        println!("All {steps} steps ended as expected.");
        Ok(())
    } else {
        bail!(
            "{} of {steps} steps failed: {}",
            failed.len(),
            failed.join(", ")
        )
    }
}

/// The providers the market step spreads its swaps over: the sandbox's two desks (a float
/// BTC → USDT on Ethereum each, a pair both trade) and its EVM DEX (ETH → USDC on Ethereum).
const MARKET: [&str; 3] = ["atlas", "borealis", "meridian"];

/// Runs `n` swaps at once, spread over [`MARKET`], tallies how they ended, then shows the
/// providers' scorecards once the figures include them.
async fn market_swaps(client: &BusinessClient, wallet: &str, n: u32) -> anyhow::Result<String> {
    let mut swaps = tokio::task::JoinSet::new();
    // A few at a time, as a busy partner would.
    let at_once = std::sync::Arc::new(tokio::sync::Semaphore::new(8));
    for i in 0..n {
        let provider = MARKET[i as usize % MARKET.len()];
        let (client, wallet, at_once) = (client.clone(), wallet.to_owned(), at_once.clone());
        swaps.spawn(async move {
            let _turn = at_once.acquire_owned().await;
            (provider, market_swap(&client, &wallet, provider).await)
        });
    }
    let mut tally: std::collections::BTreeMap<(&str, String), u32> = Default::default();
    while let Some(joined) = swaps.join_next().await {
        let (provider, ended) = joined.context("a swap task panicked")?;
        *tally.entry((provider, ended?)).or_default() += 1;
    }
    for ((provider, ended), count) in &tally {
        println!("  {provider}: {count} {ended}");
    }
    let cards = wait_for_figures(client).await?;
    for card in cards
        .providers
        .iter()
        .filter(|c| MARKET.contains(&c.provider.as_str()))
    {
        println!(
            "  {:<9} {}",
            card.provider,
            card.observed.as_ref().map_or_else(
                || format!("too few outcomes yet (figures from {})", cards.min_samples),
                crate::market::observed
            )
        );
    }
    Ok("the scorecards above rank the next routes (`swapctl routes --sort best`)".into())
}

/// One swap through `provider`, followed to its end: how it ended.
async fn market_swap(
    client: &BusinessClient,
    wallet: &str,
    provider: &str,
) -> anyhow::Result<String> {
    let offchain = provider != "meridian";
    let mut query = if offchain {
        let mut query = RoutesQuery::new("BTC", "USDTETH", "0.05");
        query.rate_type = Some(swapd_client::market::RateType::Float);
        query
    } else {
        let mut query = RoutesQuery::new("ETH", "USDCETH", "1").wallet(wallet);
        query.wallet_chain_namespace = Some("eip155".into());
        query
    };
    query.provider = Some(provider.into());
    let routes = client.routes(&query).await?;
    let card = routes
        .routes
        .iter()
        .find(|c| c.is_available && c.route_quote_id.is_some())
        .with_context(|| format!("{provider} offers no route now"))?;
    Ok(if offchain {
        offchain_swap(client, card, ETH_PAYOUT, false).await?.status
    } else {
        let done = onchain_swap(client, card, wallet, false).await?;
        match done.outcome {
            Some(outcome) => serde_json::to_value(outcome)?
                .as_str()
                .unwrap_or("done")
                .to_owned(),
            None => done.status.as_str().to_owned(),
        }
    })
}

/// The scorecards once every provider of [`MARKET`] shows figures, or as they are after the
/// figures' refresh had time to run (a server keeps them at most a refresh interval behind).
async fn wait_for_figures(
    client: &BusinessClient,
) -> anyhow::Result<swapd_client::market::Scorecards> {
    let started = std::time::Instant::now();
    loop {
        let cards = client.providers().await?;
        let shown = cards
            .providers
            .iter()
            .filter(|c| MARKET.contains(&c.provider.as_str()))
            .all(|c| c.observed.is_some());
        if shown || started.elapsed() > Duration::from_secs(90) {
            return Ok(cards);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// The server's mode, once it answers (free x402 readiness: no key needed); waits up to a minute
/// for a server that is still starting.
async fn wait_for_server(url: &str) -> anyhow::Result<String> {
    let probe = X402Client::new(url)?.with_retry(RetryPolicy::none());
    let started = std::time::Instant::now();
    let mut told = false;
    loop {
        match probe.readiness().await {
            Ok(readiness) => return Ok(readiness.mode),
            Err(swapd_client::Error::Transport(_))
                if started.elapsed() < Duration::from_secs(60) =>
            {
                if !told {
                    println!("waiting for swapd at {url} …");
                    told = true;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => {
                return Err(error).with_context(|| {
                    format!("cannot reach swapd at {url} (is `swapd serve` running?)")
                });
            }
        }
    }
}

async fn timed<T>(
    limit: Duration,
    work: impl Future<Output = T>,
) -> Result<T, tokio::time::error::Elapsed> {
    tokio::time::timeout(limit, work).await
}

fn rand_seed() -> [u8; 32] {
    let key = PrivateKeySigner::random();
    key.to_bytes().0
}

/// Runs `swapd keys create` on the data directory and reads the key and secret it prints.
fn create_key(data_dir: &Path, swapd_bin: Option<&Path>) -> anyhow::Result<(String, String)> {
    let swapd = swapd_bin
        .map(Path::to_path_buf)
        .unwrap_or_else(default_swapd);
    let name = format!("swapctl-demo-{}", std::process::id());
    let output = std::process::Command::new(&swapd)
        .arg("--data-dir")
        .arg(data_dir)
        .args([
            "keys",
            "create",
            "--name",
            &name,
            "--permissions",
            DEMO_PERMISSIONS,
            // Room for `--swaps`: each swap makes a handful of calls.
            "--per-minute",
            "1200",
            "--per-hour",
            "20000",
            "--weight-per-hour",
            "100000",
            "--json",
        ])
        .output()
        .with_context(|| {
            format!(
                "cannot run {} (point --swapd-bin at the swapd binary)",
                swapd.display()
            )
        })?;
    ensure!(
        output.status.success(),
        "`swapd keys create` failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    let created: Value = serde_json::from_slice(&output.stdout)
        .context("`swapd keys create --json` printed no JSON")?;
    let text = |field: &str| {
        created[field]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("`swapd keys create --json` printed no {field}"))
    };
    Ok((text("apiKey")?, text("apiSecret")?))
}

/// `swapd` next to this binary (a cargo build or an install puts both there), else on PATH.
fn default_swapd() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.parent()
                .map(|dir| dir.join(format!("swapd{}", std::env::consts::EXE_SUFFIX)))
        })
        .filter(|path| path.exists())
        .unwrap_or_else(|| PathBuf::from("swapd"))
}

fn quiet() -> Out {
    Out { json: false }
}

async fn wait_settled(client: &BusinessClient, order_id: &str) -> anyhow::Result<OrderView> {
    follow(
        client,
        &quiet(),
        order_id,
        Duration::from_millis(500),
        Duration::from_secs(600),
    )
    .await
}

async fn fixed_order(client: &BusinessClient) -> anyhow::Result<String> {
    let mut query = RoutesQuery::new("BTC", "USDTTRC", "0.05");
    query.rate_type = Some(swapd_client::market::RateType::Fixed);
    let routes = client.routes(&query).await?;
    let card = routes
        .routes
        .iter()
        .find(|c| {
            c.execution_type == ExecutionType::Offchain
                && c.is_available
                && c.route_quote_id.is_some()
        })
        .context("no available offchain route for 0.05 BTC → USDTTRC")?;
    println!(
        "  {}; best offchain: {} pays {} USDTTRC",
        crate::output::count(routes.count, "route", "routes"),
        card.execution_provider,
        card.expected_output_amount.as_deref().unwrap_or("?")
    );
    let done = offchain_swap(client, card, TRON_PAYOUT, true).await?;
    match done.status.as_str() {
        "completed" => Ok(format!(
            "{} completed: {} USDTTRC paid in {}",
            done.order_id,
            done.to.amount,
            done.to.tx_id.as_deref().unwrap_or("?")
        )),
        // Desks refund or fail some swaps, in the sandbox as in the world: the order ended
        // as it should, and the desk's scorecard counts it (docs/market.md).
        "refunded" | "failed" => Ok(format!(
            "{} ended {} by {} (desks do that; `swapctl providers` shows how often)",
            done.order_id, done.status, done.provider
        )),
        other => bail!("the order ended {other}"),
    }
}

/// Locks `card`'s terms, opens the order, has the sandbox deposit what it asks and follows it
/// to its end (`narrate`: telling each step).
async fn offchain_swap(
    client: &BusinessClient,
    card: &swapd_client::market::RouteCard,
    to_address: &str,
    narrate: bool,
) -> anyhow::Result<OrderView> {
    let resolved = client
        .resolve_route(card.route_quote_id.as_deref().unwrap_or_default())
        .await?;
    if narrate {
        println!(
            "  locked at rate {} with createToken {}",
            resolved.rate, resolved.create_token
        );
    }
    let order = client
        .create_order(&OrderInput {
            create_token: Some(resolved.create_token),
            to_address: to_address.into(),
            refund_address: Some(BTC_REFUND.into()),
            ..OrderInput::default()
        })
        .await?;
    if narrate {
        println!(
            "  order {}: send {} BTC to {}",
            order.order_id, order.from.amount, order.from.deposit_address
        );
    }
    let deposit = client
        .sandbox_deposit(
            &order.order_id,
            &DepositInput {
                amount: order.from.amount.clone(),
                confirmations: None,
            },
        )
        .await?;
    if narrate {
        println!(
            "  sandbox deposit {} of {} BTC; following the order…",
            deposit.tx_id, deposit.amount
        );
    }
    wait_settled(client, &order.order_id).await
}

async fn emergency(client: &BusinessClient) -> anyhow::Result<String> {
    let order = client
        .create_order(&OrderInput {
            from_ccy: Some("BTC".into()),
            to_ccy: Some("ETH".into()),
            amount: Some("0.05".into()),
            rate_type: Some(swapd_client::market::RateType::Fixed),
            to_address: ETH_PAYOUT.into(),
            ..OrderInput::default()
        })
        .await?;
    let short = nine_tenths(&order.from.amount)?;
    println!(
        "  order {} expects {} BTC; the sandbox deposits only {short}",
        order.order_id, order.from.amount
    );
    client
        .sandbox_deposit(
            &order.order_id,
            &DepositInput {
                amount: short,
                confirmations: None,
            },
        )
        .await?;
    let judged = wait_settled(client, &order.order_id).await?;
    ensure!(
        judged.status == "emergency",
        "the order ended {} instead of emergency",
        judged.status
    );
    let reasons = judged
        .emergency
        .as_ref()
        .map(|e| e.reasons.join("+"))
        .unwrap_or_default();
    ensure!(
        reasons.contains("LESS"),
        "the emergency's reasons are {reasons}, not LESS"
    );
    println!("  emergency {reasons}; choosing REFUND to {BTC_REFUND}");
    client
        .emergency(
            &order.order_id,
            &EmergencyInput {
                choice: EmergencyChoice::Refund,
                refund_address: Some(BTC_REFUND.into()),
                refund_tag: None,
            },
        )
        .await?;
    let refunded = wait_settled(client, &order.order_id).await?;
    ensure!(
        refunded.status == "refunded",
        "the order ended {} instead of refunded",
        refunded.status
    );
    Ok(format!(
        "{} refunded: {} BTC back in {}",
        refunded.order_id,
        refunded.refund.amount.as_deref().unwrap_or("?"),
        refunded.refund.tx_id.as_deref().unwrap_or("?")
    ))
}

/// 90 % of a decimal amount, exactly, at the same scale (rounded down).
fn nine_tenths(amount: &str) -> anyhow::Result<String> {
    let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
    let digits: u128 = format!("{whole}{fraction}")
        .parse()
        .context("not a decimal amount")?;
    let scaled = (digits * 9 / 10).to_string();
    if fraction.is_empty() {
        return Ok(scaled);
    }
    let padded = format!("{scaled:0>width$}", width = fraction.len() + 1);
    let (w, f) = padded.split_at(padded.len() - fraction.len());
    Ok(format!("{w}.{f}"))
}

async fn bridge(
    client: &BusinessClient,
    evm: &PrivateKeySigner,
    solana: &SolanaKey,
) -> anyhow::Result<String> {
    let wallet = evm.address().to_checksum(None);
    let recipient = Wallet::Solana(solana.clone()).address();
    let mut query = RoutesQuery::new("ETHBASE", "USDCSOL", "1")
        .wallet(&wallet)
        .recipient(&recipient);
    query.wallet_chain_namespace = Some("eip155".into());
    let routes = client.routes(&query).await?;
    let card = routes
        .routes
        .iter()
        .find(|c| {
            c.execution_type == ExecutionType::Onchain
                && c.is_available
                && c.route_quote_id.is_some()
        })
        .context("no available onchain route for 1 ETH (Base) → USDC (Solana)")?;
    let done = onchain_swap(client, card, &wallet, true).await?;
    match (done.status, done.outcome) {
        (ExecutionStatus::Done, Some(Outcome::Completed)) => Ok(format!(
            "{} done: {} {} received",
            done.execution_plan_id,
            done.received_amount.as_deref().unwrap_or("?"),
            done.received_token.as_deref().unwrap_or("")
        )),
        // Routers fail some executions, in the sandbox as in the world (docs/market.md).
        (ExecutionStatus::Failed, _) => Ok(format!(
            "{} failed ({}): routers do that; `swapctl providers` shows how often",
            done.execution_plan_id,
            done.substatus.as_deref().unwrap_or("-")
        )),
        (status, outcome) => bail!("the execution ended {} ({outcome:?})", status.as_str()),
    }
}

/// Resolves `card` into a plan for `wallet`, reports the transaction the wallet would send and
/// follows the execution to its end (`narrate`: telling each step).
async fn onchain_swap(
    client: &BusinessClient,
    card: &swapd_client::market::RouteCard,
    wallet: &str,
    narrate: bool,
) -> anyhow::Result<ExecutionView> {
    let plan = client
        .resolve_onchain(&OnchainResolveInput {
            route_quote_id: card.route_quote_id.clone().unwrap_or_default(),
            wallet_address: wallet.to_owned(),
            wallet_chain_namespace: Some("eip155".into()),
            slippage_bps: None,
        })
        .await?;
    if narrate {
        println!(
            "  plan {} via {}: {} step(s), at least {} {}",
            plan.execution_plan_id,
            plan.execution_provider,
            plan.steps.len(),
            plan.min_output_amount,
            plan.to_ccy
        );
    }
    // The wallet would sign and broadcast the plan's transaction; the sandbox chain takes any
    // hash, and its last byte (01: a normal completion) picks the outcome (docs/sandbox.md).
    let mut hash = PrivateKeySigner::random().to_bytes().0;
    hash[31] = 0x01;
    let tx_hash = format!("0x{}", hex::encode(hash));
    client
        .report_execution(
            &plan.execution_access_token,
            &ExecutionReportInput {
                execution_plan_id: plan.execution_plan_id.clone(),
                chain_namespace: "eip155".into(),
                wallet_address: wallet.to_owned(),
                tx_hash: Some(tx_hash.clone()),
                signatures: None,
            },
        )
        .await?;
    if narrate {
        println!("  reported {tx_hash}; following the execution…");
    }
    wait_for(
        client,
        &quiet(),
        &plan.execution_plan_id,
        &plan.execution_access_token,
        Duration::from_secs(600),
    )
    .await
}

async fn paid_order(
    url: &str,
    evm: &PrivateKeySigner,
    solana: &SolanaKey,
) -> anyhow::Result<String> {
    let owner = || Wallet::Solana(solana.clone());
    let paying = X402Client::new(url)?
        .paying_with(evm.clone())
        .signed_in_as(owner());
    let input = OrderInput {
        from_ccy: Some("BTC".into()),
        to_ccy: Some("USDTTRC".into()),
        amount: Some("0.05".into()),
        to_address: TRON_PAYOUT.into(),
        ..OrderInput::default()
    };
    let created = paying.post("/api/x402/orders", &input).await?;
    let settlement = created.settlement.context("the order was not charged")?;
    ensure!(settlement.success, "the payment did not settle");
    let order_id = created.answer.data["orderId"]
        .as_str()
        .context("no orderId")?
        .to_owned();
    println!(
        "  402 → paid by {} (transaction {}) → order {order_id}",
        settlement.payer.as_deref().unwrap_or("?"),
        settlement.transaction
    );
    let reader = X402Client::new(url)?.signed_in_as(owner());
    let read = reader
        .get(&format!("/api/x402/orders/{order_id}"), &[])
        .await?;
    ensure!(
        read.settlement.is_none(),
        "reading the wallet's own order was charged"
    );
    ensure!(
        read.answer.data["orderId"] == order_id.as_str(),
        "the wallet read another order"
    );
    println!("  the Solana wallet signs in (SIWX) and reads it for free");
    let stranger =
        X402Client::new(url)?.signed_in_as(Wallet::Solana(SolanaKey::from_bytes(&rand_seed())));
    match stranger.order(&order_id).await {
        Err(e) if e.code() == Some(ErrorCode::OrderNotFound) => {}
        other => bail!("another wallet could read the order: {other:?}"),
    }
    println!("  another wallet gets 404");
    Ok(format!(
        "{order_id} created with one payment, owned by {}",
        owner().address()
    ))
}

#[cfg(test)]
mod tests {
    use super::nine_tenths;

    #[test]
    fn nine_tenths_is_exact_at_the_same_scale() {
        assert_eq!(nine_tenths("0.05").unwrap(), "0.04");
        assert_eq!(nine_tenths("0.05000000").unwrap(), "0.04500000");
        assert_eq!(nine_tenths("12.3").unwrap(), "11.0");
        assert_eq!(nine_tenths("10").unwrap(), "9");
        assert!(nine_tenths("abc").is_err());
    }
}
