//! The x402 API's own calls: any route, paid and signed in as needed, and market-intel jobs.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use swapd_client::market_intel::{JobInput, JobStatus, JobView};
use swapd_client::x402::{SettleResponse, X402Client};
use swapd_client::{Answer, Call, Surface};

use crate::cli::{HttpMethod, MarketIntelCommand, X402Args};
use crate::output::Out;

/// The x402 client for the commands both surfaces serve: each payment is reported on stderr,
/// so stdout stays the answer (with `--json` too).
pub struct Receipted(pub X402Client);

impl Surface for Receipted {
    fn prefix(&self) -> &'static str {
        self.0.prefix()
    }

    async fn call(&self, call: Call) -> Result<Answer, swapd_client::Error> {
        let paid = self.0.call_paid(call).await?;
        if let Some(settlement) = &paid.settlement {
            eprintln!("{}", receipt(settlement));
        }
        Ok(paid.answer)
    }
}

fn receipt(settlement: &SettleResponse) -> String {
    format!(
        "paid by {} on {} (transaction {})",
        settlement.payer.as_deref().unwrap_or("-"),
        settlement.network,
        settlement.transaction
    )
}

pub async fn call(client: &X402Client, out: &Out, args: X402Args) -> anyhow::Result<()> {
    let query: Vec<(String, String)> = args
        .query
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .with_context(|| format!("--query {pair}: expected NAME=VALUE"))
        })
        .collect::<anyhow::Result<_>>()?;
    let query: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let paid = match args.method {
        HttpMethod::Get => {
            if args.body.is_some() {
                bail!("a GET has no body");
            }
            client.get(&args.path, &query).await?
        }
        HttpMethod::Post => {
            let body: Value = serde_json::from_str(args.body.as_deref().unwrap_or("{}"))
                .context("--body is not JSON")?;
            let key = swapd_client::new_idempotency_key();
            client
                .send(
                    swapd_client::Method::POST,
                    &args.path,
                    &query,
                    Some(&body),
                    Some(&key),
                )
                .await?
        }
    };
    if out.json {
        return out.line(&json!({
            "status": paid.answer.status,
            "settlement": paid.settlement,
            "data": paid.answer.data,
        }));
    }
    match &paid.settlement {
        Some(settlement) => eprintln!("{} {}", paid.answer.status, receipt(settlement)),
        None => eprintln!("{} (not charged)", paid.answer.status),
    }
    println!("{}", serde_json::to_string_pretty(&paid.answer.data)?);
    Ok(())
}

pub async fn market_intel(
    client: &X402Client,
    out: &Out,
    command: MarketIntelCommand,
) -> anyhow::Result<()> {
    let (job, wait) = match command {
        MarketIntelCommand::Create {
            kind,
            from,
            to,
            amount,
            direction,
            steps,
            window_secs,
            buckets,
            wait,
        } => {
            let input = JobInput {
                kind: kind.wire().to_owned(),
                from_ccy: from,
                to_ccy: to,
                amount,
                direction: direction.map(Into::into),
                steps,
                window_secs,
                buckets,
            };
            (client.create_market_job(&input).await?, wait)
        }
        MarketIntelCommand::Show { job_id, wait } => (client.market_job(&job_id).await?, wait),
    };
    let job = if wait {
        finished(client, job).await?
    } else {
        job
    };
    if out.json(&job)? {
        return Ok(());
    }
    println!("{} {} {:?}", job.job_id, job.kind, job.status);
    if let Some(result) = &job.result {
        println!("{}", serde_json::to_string_pretty(result)?);
    }
    if let Some(error) = &job.error {
        println!("failed: {} ({})", error.message, error.code);
    }
    if matches!(job.status, JobStatus::Queued | JobStatus::Running) {
        println!(
            "follow it with: swapctl market-intel show {} --wait",
            job.job_id
        );
    }
    Ok(())
}

/// Polls a job until it has succeeded or failed (at most 5 minutes).
async fn finished(client: &X402Client, mut job: JobView) -> anyhow::Result<JobView> {
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(Duration::from_millis(120));
    let started = Instant::now();
    while matches!(job.status, JobStatus::Queued | JobStatus::Running) {
        spinner.set_message(format!("{} {:?}", job.job_id, job.status));
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(300),
            "{} has not finished after 5 minutes",
            job.job_id
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        job = client.market_job(&job.job_id).await?;
    }
    spinner.finish_and_clear();
    Ok(job)
}
