//! swapctl: the swapd API from the terminal. Thin over `swapd-client`: parse, call, print.

mod cli;
mod config;
mod demo;
mod market;
mod mcp;
mod onchain;
mod orders;
mod output;
mod paid;
mod webhooks;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::cli::{Cli, Command, OrderCommand, SwapCommand};
use crate::config::Settings;
use crate::output::Out;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            if let Some(hint) = hint(&error) {
                eprintln!("hint: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let out = Out {
        json: cli.global.json,
    };
    // Completions need no settings; every other command loads them once.
    let settings = || Settings::load(&cli.global);
    match cli.command {
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "swapctl", &mut std::io::stdout());
            Ok(())
        }
        Command::Swap(command) if cli.global.x402 => {
            swap(&paid::Receipted(settings()?.x402()?), &out, command).await
        }
        Command::Swap(SwapCommand::Order(OrderCommand::Deposit {
            order_id,
            amount,
            confirmations,
        })) => {
            orders::deposit(
                &settings()?.business()?,
                &out,
                &order_id,
                amount,
                confirmations,
            )
            .await
        }
        Command::Swap(command) => swap(&settings()?.business()?, &out, command).await,
        Command::Readiness => readiness(&settings()?, &out, cli.global.x402).await,
        Command::Webhooks(command) => webhooks::run(&settings()?, &out, command).await,
        Command::Earnings { since, until } => {
            earnings(&settings()?.business()?, &out, since, until).await
        }
        Command::X402(args) => paid::call(&settings()?.x402()?, &out, args).await,
        Command::MarketIntel(command) => {
            paid::market_intel(&settings()?.x402()?, &out, command).await
        }
        Command::Demo(args) => demo::run(settings()?, args).await,
        Command::Mcp(args) => mcp::run(&settings()?, args, cli.global.x402).await,
    }
}

async fn earnings(
    client: &swapd_client::BusinessClient,
    out: &Out,
    since: Option<i64>,
    until: Option<i64>,
) -> anyhow::Result<()> {
    let earned = client.earnings(since, until).await?;
    if out.json(&earned)? {
        return Ok(());
    }
    println!(
        "Earnings from {} to {} (epoch seconds)",
        earned.since, earned.until
    );
    if earned.totals.is_empty() {
        println!("nothing yet: orders made with this key and a markup earn it");
        return Ok(());
    }
    println!("{:<12} {:>24} {:>24}", "CURRENCY", "EXPECTED", "REALIZED");
    for total in &earned.totals {
        println!(
            "{:<12} {:>24} {:>24}",
            total.currency, total.expected, total.realized
        );
    }
    if earned.truncated {
        eprintln!("more rows than one answer holds: narrow the window (--since, --until)");
    }
    Ok(())
}

async fn readiness(settings: &Settings, out: &Out, x402: bool) -> anyhow::Result<()> {
    if x402 {
        let document = settings.x402()?.readiness().await?;
        if !out.json(&document)? {
            println!(
                "{} x402 v{} in {} mode: {} USD per paid call, facilitator {}",
                settings.url,
                document.x402_version,
                document.mode,
                document.price_usd,
                document.facilitator
            );
            for route in &document.routes {
                let state = if route.enabled { "" } else { " (disabled)" };
                println!(
                    "  {:<5} {:<48} {:?}{state}",
                    route.method, route.path, route.access
                );
            }
        }
        return Ok(());
    }
    let document = settings.business()?.readiness().await?;
    if !out.json(&document)? {
        println!(
            "{} Business API v{} in {} mode; key {} may use: {}",
            settings.url,
            document.version,
            document.mode,
            document.api_key,
            document
                .permissions
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for route in &document.routes {
            let needs = route.permission.map_or("any key", |p| p.as_str());
            println!("  {:<5} {:<48} {needs}", route.method, route.path);
        }
    }
    Ok(())
}

/// What to do about an error the user can fix.
fn hint(error: &anyhow::Error) -> Option<&'static str> {
    use swapd_client::{Error, ErrorCode};
    match error.downcast_ref::<Error>()? {
        Error::Unexpected { status: 402, .. } => {
            Some("x402 calls are paid: set SWAPD_EVM_KEY (or --evm-key) to a funded EVM key")
        }
        Error::Api { code, .. } => match code {
            ErrorCode::ApiKeyInvalid | ErrorCode::ApiKeyRevoked | ErrorCode::SignatureInvalid => {
                Some(
                    "check SWAPD_API_KEY and SWAPD_API_SECRET (or the profile) against `swapd keys list`",
                )
            }
            ErrorCode::PermissionDenied => Some(
                "the API key lacks the permission this call needs: create one with it (`swapd keys create --permissions …`)",
            ),
            _ => None,
        },
        Error::Transport(_) => {
            Some("is swapd running at SWAPD_URL (default http://127.0.0.1:8080)?")
        }
        _ => None,
    }
}

/// The commands both surfaces serve.
async fn swap<S: swapd_client::SwapApi>(
    api: &S,
    out: &Out,
    command: SwapCommand,
) -> anyhow::Result<()> {
    match command {
        SwapCommand::Currencies => market::currencies(api, out).await,
        SwapCommand::Providers => market::providers(api, out).await,
        SwapCommand::Tokens(command) => market::tokens(api, out, command).await,
        SwapCommand::Quote(pair) => market::quote(api, out, pair).await,
        SwapCommand::Routes(args) => market::routes(api, out, args).await,
        SwapCommand::Resolve { route_quote_id } => market::resolve(api, out, &route_quote_id).await,
        SwapCommand::Order(command) => orders::run(api, out, command).await,
        SwapCommand::Onchain(command) => onchain::run(api, out, command).await,
    }
}
