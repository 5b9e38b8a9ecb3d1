//! `swapd affiliates ...`: registering, listing, disabling affiliates and reading what their
//! codes earned (docs/fees.md, "Affiliates").

use anyhow::{Context, bail};
use serde_json::{Value, json};
use swapd_core::StoreError;
use swapd_core::affiliates::{Affiliate, parse_share};
use swapd_core::fees::Party;

use crate::app::Runtime;
use crate::cli::AffiliatesCommand;

pub async fn run(runtime: &Runtime, command: AffiliatesCommand) -> anyhow::Result<()> {
    match command {
        AffiliatesCommand::Create {
            code,
            name,
            share,
            payout,
            json,
        } => {
            let share_bps = parse_share(&share).with_context(|| {
                format!("--share {share}: give bps of the service fee (2500) or a percent (25%)")
            })?;
            let affiliate =
                Affiliate::new(&code, &name, share_bps, &payout, runtime.clock.now_ms())
                    .context("invalid affiliate")?;
            match runtime.store.insert_affiliate(&affiliate).await {
                Err(StoreError::Conflict(_)) => {
                    bail!(
                        "an affiliate already has the code `{code}` (swapd affiliates show {code})"
                    )
                }
                other => other?,
            }
            print(&affiliate, json)
        }
        AffiliatesCommand::List { json } => list(runtime, json).await,
        AffiliatesCommand::Show { code, json } => print(&find(runtime, &code).await?, json),
        AffiliatesCommand::Disable { code } => {
            let Some(affiliate) = runtime.store.set_affiliate_active(&code, false).await? else {
                bail!(
                    "no affiliate has the code `{code}` (list them with `swapd affiliates list`)"
                );
            };
            println!(
                "`{}` is disabled: new quotes and orders refuse it",
                affiliate.code
            );
            Ok(())
        }
        AffiliatesCommand::Earnings {
            code,
            since,
            until,
            json,
        } => earnings(runtime, &code, (since, until), json).await,
    }
}

async fn list(runtime: &Runtime, json: bool) -> anyhow::Result<()> {
    let all = runtime.store.list_affiliates().await?;
    if json {
        let all: Vec<Value> = all.iter().map(describe).collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else if all.is_empty() {
        println!(
            "No affiliates yet. Register one with: swapd affiliates create --code CODE --name NAME --share 25% --payout ADDRESS"
        );
    } else {
        println!("{:<24} {:<8} {:>10} NAME", "CODE", "ACTIVE", "SHARE BPS");
        for affiliate in &all {
            println!(
                "{:<24} {:<8} {:>10} {}",
                affiliate.code, affiliate.active, affiliate.share_bps, affiliate.name
            );
        }
    }
    Ok(())
}

/// What `code` earned in the window (`--since`, `--until`, epoch seconds), by currency.
async fn earnings(
    runtime: &Runtime,
    code: &str,
    (since, until): (Option<i64>, Option<i64>),
    json: bool,
) -> anyhow::Result<()> {
    find(runtime, code).await?;
    let now = runtime.clock.now_ms() / 1000;
    let (since, until) =
        swapd_app::earnings::window(since, until, now).map_err(|e| anyhow::anyhow!("{e}"))?;
    let rows = runtime
        .store
        .affiliate_ledger(
            code,
            since * 1000,
            until * 1000,
            swapd_app::earnings::MAX_ROWS + 1,
        )
        .await?;
    let earned = swapd_app::earnings::summary(&rows, Party::Affiliate, since, until);
    if json {
        println!("{}", serde_json::to_string_pretty(&earned)?);
        return Ok(());
    }
    println!("`{code}` from {since} to {until} (epoch seconds)");
    println!("{:<12} {:>24} {:>24}", "CURRENCY", "EXPECTED", "REALIZED");
    for total in &earned.totals {
        println!(
            "{:<12} {:>24} {:>24}",
            total.currency, total.expected, total.realized
        );
    }
    Ok(())
}

async fn find(runtime: &Runtime, code: &str) -> anyhow::Result<Affiliate> {
    runtime.store.affiliate(code).await?.with_context(|| {
        format!("no affiliate has the code `{code}` (list them with `swapd affiliates list`)")
    })
}

fn print(affiliate: &Affiliate, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(&describe(affiliate))?);
    } else {
        println!("code:      {}", affiliate.code);
        println!("name:      {}", affiliate.name);
        println!("shareBps:  {} (of the service fee)", affiliate.share_bps);
        println!("payout:    {}", affiliate.payout);
        println!("active:    {}", affiliate.active);
        println!("createdAt: {}", affiliate.created_at_ms / 1000);
    }
    Ok(())
}

/// An affiliate as `--json` shows it. Times in epoch seconds.
fn describe(affiliate: &Affiliate) -> Value {
    json!({
        "code": affiliate.code,
        "name": affiliate.name,
        "shareBps": affiliate.share_bps,
        "payout": affiliate.payout,
        "active": affiliate.active,
        "createdAt": affiliate.created_at_ms / 1000,
    })
}
