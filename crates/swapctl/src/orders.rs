//! Orders: create, show, watch, emergency, refund, e-mail, QR, sandbox deposits.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use qrcode::QrCode;
use qrcode::render::unicode::Dense1x2;
use swapd_client::orders::{EmergencyChoice, EmergencyInput, OrderInput, OrderView, RefundInput};
use swapd_client::sandbox::DepositInput;
use swapd_client::{BusinessClient, SwapApi};

use crate::cli::{ChoiceArg, CreateOrderArgs, OrderCommand};
use crate::output::{Out, or_dash, relative};

pub async fn run(api: &impl SwapApi, out: &Out, command: OrderCommand) -> anyhow::Result<()> {
    let order = match command {
        OrderCommand::Create(args) => api.create_order(&order_input(args)).await?,
        OrderCommand::Show { order_id } => api.order(&order_id).await?,
        OrderCommand::Watch {
            order_id,
            interval_ms,
            timeout,
        } => {
            let order = follow(
                api,
                out,
                &order_id,
                Duration::from_millis(interval_ms),
                Duration::from_secs(timeout),
            )
            .await?;
            if !out.json {
                print_order(&order);
            }
            return Ok(());
        }
        OrderCommand::Emergency {
            order_id,
            choice,
            refund_address,
            refund_tag,
        } => {
            let input = EmergencyInput {
                choice: match choice {
                    ChoiceArg::Exchange => EmergencyChoice::Exchange,
                    ChoiceArg::Refund => EmergencyChoice::Refund,
                },
                refund_address,
                refund_tag,
            };
            api.emergency(&order_id, &input).await?
        }
        OrderCommand::Refund {
            order_id,
            refund_address,
            refund_tag,
        } => {
            let input = RefundInput {
                refund_address,
                refund_tag,
            };
            api.refund(&order_id, &input).await?
        }
        OrderCommand::Email { order_id, email } => api.notify_email(&order_id, &email).await?,
        OrderCommand::Qr {
            order_id,
            address_only,
        } => return qr(api, out, &order_id, address_only).await,
        OrderCommand::Deposit { .. } => {
            bail!("sandbox deposits are a Business API call: drop --x402")
        }
    };
    if !out.json(&order)? {
        print_order(&order);
    }
    Ok(())
}

fn order_input(args: CreateOrderArgs) -> OrderInput {
    OrderInput {
        create_token: args.token,
        from_ccy: args.from,
        to_ccy: args.to,
        amount: args.amount,
        direction: args.direction.map(Into::into),
        rate_type: args.rate.map(Into::into),
        to_address: args.to_address,
        tag: args.tag,
        refund_address: args.refund_address,
        refund_tag: args.refund_tag,
        affiliate_code: None,
        email: args.email,
    }
}

pub fn print_order(order: &OrderView) {
    println!(
        "{}  {}  ({:?} rate {}, via {})",
        order.order_id, order.status, order.rate_type, order.rate, order.provider
    );
    let tag = order
        .from
        .deposit_tag
        .as_deref()
        .map(|t| format!(" tag {t}"))
        .unwrap_or_default();
    println!(
        "  send     {} {} to {}{tag}",
        order.from.amount, order.from.code, order.from.deposit_address
    );
    println!(
        "  receive  {} {} at {}{}",
        order.to.amount,
        order.to.code,
        order.to.address,
        order
            .to
            .tx_id
            .as_deref()
            .map(|tx| format!(" (paid in {tx})"))
            .unwrap_or_default()
    );
    for deposit in &order.from.received {
        println!(
            "  deposit  {} in {} ({}/{} confirmations)",
            deposit.amount, deposit.tx_id, deposit.confirmations, deposit.required_confirmations
        );
    }
    if let Some(tx) = &order.refund.tx_id {
        println!(
            "  refund   {} to {} in {tx}",
            or_dash(order.refund.amount.as_deref()),
            or_dash(order.refund.address.as_deref())
        );
    }
    if let Some(emergency) = &order.emergency {
        println!(
            "  emergency {}: choose {} before {} (swapctl order emergency {} --choice …)",
            emergency.reasons.join("+"),
            emergency.allowed_choices.join(" or "),
            relative(emergency.deadline),
            order.order_id
        );
    }
    if let Some(reason) = &order.failure_reason {
        println!("  failed: {reason}");
    }
    if order.status == "awaiting_deposit" {
        println!("  expires {}", relative(order.expires_at));
    }
}

/// Where a status stands on the way to a payout (or a refund), for the progress bar.
fn stage(status: &str) -> u64 {
    match status {
        "new" | "awaiting_deposit" => 0,
        "confirming" => 1,
        "exchanging" | "emergency" | "refunding" => 2,
        "withdrawing" => 3,
        _ => 4,
    }
}

/// True when the order will not move without someone: it ended, or waits for a choice.
pub fn settled(status: &str) -> bool {
    matches!(
        status,
        "completed" | "refunded" | "failed" | "expired" | "emergency"
    )
}

/// Polls the order until it settles, drawing its progress (or, with `--json`, printing one
/// line per change).
pub async fn follow(
    api: &impl SwapApi,
    out: &Out,
    order_id: &str,
    interval: Duration,
    timeout: Duration,
) -> anyhow::Result<OrderView> {
    let bar = if out.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(4)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} [{bar:20}] {msg} ({elapsed})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(order_id.to_owned());
    bar.enable_steady_tick(Duration::from_millis(120));
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let order = api.order(order_id).await?;
        let confirmations = order.from.received.first().map(|d| {
            format!(
                " {}/{} confirmations",
                d.confirmations, d.required_confirmations
            )
        });
        let summary = format!("{}{}", order.status, confirmations.unwrap_or_default());
        if summary != last {
            if out.json {
                out.line(&order)?;
            }
            bar.set_position(stage(&order.status));
            bar.set_message(summary.clone());
            last = summary;
        }
        if settled(&order.status) {
            bar.finish_with_message(order.status.clone());
            return Ok(order);
        }
        if started.elapsed() > timeout {
            bar.abandon();
            bail!(
                "{order_id} is still {} after {}s",
                order.status,
                timeout.as_secs()
            );
        }
        tokio::time::sleep(interval).await;
    }
}

async fn qr(
    api: &impl SwapApi,
    out: &Out,
    order_id: &str,
    address_only: bool,
) -> anyhow::Result<()> {
    let codes = api.deposit_qr(order_id).await?;
    if out.json(&codes)? {
        return Ok(());
    }
    let wanted = if address_only { "address" } else { "amount" };
    let code = codes
        .qr
        .iter()
        .find(|c| c.kind == wanted)
        .or_else(|| codes.qr.first())
        .context("the order has no deposit QR code")?;
    let drawn = QrCode::new(code.payload.as_bytes())
        .context("the payload does not fit a QR code")?
        .render::<Dense1x2>()
        .quiet_zone(true)
        .build();
    println!("{drawn}");
    println!("{}: {}", code.title, code.payload);
    Ok(())
}

pub async fn deposit(
    client: &BusinessClient,
    out: &Out,
    order_id: &str,
    amount: String,
    confirmations: Option<u32>,
) -> anyhow::Result<()> {
    let recorded = client
        .sandbox_deposit(
            order_id,
            &DepositInput {
                amount,
                confirmations,
            },
        )
        .await?;
    if !out.json(&recorded)? {
        println!(
            "sandbox deposit {} of {} to {} ({} confirmations); follow it with `swapctl order watch {order_id}`",
            recorded.tx_id, recorded.amount, recorded.address, recorded.confirmations
        );
    }
    Ok(())
}
