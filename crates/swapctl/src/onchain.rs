//! Onchain execution: plan, report, status.

use std::time::Duration;

use anyhow::Context;
use swapd_client::SwapApi;
use swapd_client::onchain::{
    ExecutionPlanView, ExecutionReportInput, ExecutionView, OnchainResolveInput, PlanTransaction,
};

use crate::cli::OnchainCommand;
use crate::output::{Out, or_dash, relative};

/// `eip155` for `0x…` wallets, `solana` otherwise.
pub fn namespace_of(wallet: &str) -> &'static str {
    if wallet.starts_with("0x") {
        "eip155"
    } else {
        "solana"
    }
}

pub async fn run(api: &impl SwapApi, out: &Out, command: OnchainCommand) -> anyhow::Result<()> {
    match command {
        OnchainCommand::Resolve {
            route_quote_id,
            wallet,
            wallet_namespace,
            slippage_bps,
        } => {
            let plan = api
                .resolve_onchain(&OnchainResolveInput {
                    route_quote_id,
                    wallet_address: wallet,
                    wallet_chain_namespace: wallet_namespace,
                    slippage_bps,
                })
                .await?;
            if !out.json(&plan)? {
                print_plan(&plan);
            }
        }
        OnchainCommand::Report {
            execution_plan_id,
            token,
            wallet,
            namespace,
            tx_hash,
            signatures,
        } => {
            let signatures = signatures
                .map(|text| serde_json::from_str(&text))
                .transpose()
                .context(
                    "--signatures must be a JSON array of {signatureId, purpose, signature}",
                )?;
            let report = ExecutionReportInput {
                execution_plan_id,
                chain_namespace: namespace.unwrap_or_else(|| namespace_of(&wallet).to_owned()),
                wallet_address: wallet,
                tx_hash,
                signatures,
            };
            let execution = api.report_execution(&token, &report).await?;
            if !out.json(&execution)? {
                print_execution(&execution);
            }
        }
        OnchainCommand::Status {
            execution_plan_id,
            token,
            wait,
        } => {
            if wait {
                // With --json, every change was already printed as a line.
                let timeout = Duration::from_secs(600);
                let execution = wait_for(api, out, &execution_plan_id, &token, timeout).await?;
                if !out.json {
                    print_execution(&execution);
                }
            } else {
                let execution = api.execution(&execution_plan_id, &token).await?;
                if !out.json(&execution)? {
                    print_execution(&execution);
                }
            }
        }
    }
    Ok(())
}

/// Polls the execution until it is terminal (one JSON line per change with `--json`).
pub async fn wait_for(
    api: &impl SwapApi,
    out: &Out,
    execution_plan_id: &str,
    token: &str,
    timeout: Duration,
) -> anyhow::Result<ExecutionView> {
    let bar = if out.json {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    bar.enable_steady_tick(Duration::from_millis(120));
    let started = std::time::Instant::now();
    let mut last = None;
    loop {
        let execution = api.execution(execution_plan_id, token).await?;
        let now = (execution.status, execution.substatus.clone());
        if last.as_ref() != Some(&now) {
            if out.json {
                out.line(&execution)?;
            }
            bar.set_message(format!(
                "{execution_plan_id}: {} / {}",
                execution.status.as_str(),
                or_dash(execution.substatus.as_deref())
            ));
            last = Some(now);
        }
        if execution.terminal {
            bar.finish_and_clear();
            return Ok(execution);
        }
        anyhow::ensure!(
            started.elapsed() < timeout,
            "{execution_plan_id} is still {} after {}s",
            execution.status.as_str(),
            timeout.as_secs()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn print_plan(plan: &ExecutionPlanView) {
    println!(
        "{} via {}: {} {} → {} {} (at least {}, slippage {} bps), expires {}",
        plan.execution_plan_id,
        plan.execution_provider,
        plan.from_amount,
        plan.from_ccy,
        plan.expected_output_amount,
        plan.to_ccy,
        plan.min_output_amount,
        plan.slippage_bps,
        relative(plan.expires_at)
    );
    for step in &plan.steps {
        println!(
            "  step {} ({}, {}): {}",
            step.step_id, step.kind, step.chain, step.description
        );
        match &step.transaction {
            Some(PlanTransaction::Evm {
                to, value, data, ..
            }) => {
                println!(
                    "    send to {to}, value {value}, data {} bytes",
                    data.len().saturating_sub(2) / 2
                )
            }
            Some(PlanTransaction::Solana { .. }) => {
                println!("    sign and send the serialized transaction")
            }
            None => {}
        }
        if let Some(signature) = &step.signature {
            println!(
                "    sign typed data {} ({})",
                signature.signature_id, signature.purpose
            );
        }
    }
    println!("access token {}", plan.execution_access_token);
    println!(
        "next: swapctl onchain report {} --token {} --wallet {} --tx-hash …",
        plan.execution_plan_id, plan.execution_access_token, plan.wallet_address
    );
}

fn print_execution(execution: &ExecutionView) {
    println!(
        "{} via {}: {} / {}{}",
        execution.execution_plan_id,
        execution.execution_provider,
        execution.status.as_str(),
        or_dash(execution.substatus.as_deref()),
        execution
            .outcome
            .map(|o| format!(" ({o:?})").to_lowercase())
            .unwrap_or_default()
    );
    for tx in &execution.tx_hashes {
        println!("  {} on {}: {}", tx.role, tx.chain, tx.tx_hash);
    }
    if let Some(amount) = &execution.received_amount {
        println!(
            "  received {amount} {}",
            or_dash(execution.received_token.as_deref())
        );
    }
}
