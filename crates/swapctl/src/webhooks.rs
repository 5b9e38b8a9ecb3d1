//! Webhook subscriptions, and `listen`: a local receiver that verifies deliveries.

use std::net::SocketAddr;
use std::sync::Arc;
use strum::VariantArray;

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use swapd_client::webhooks::{
    DeliveryLog, EventType, ReplayInput, ReplayQueued, RotateInput, TestCallbackInput,
    TestCallbackResult, Verifier, Webhook, WebhookEvent, WebhookInput, WebhookPatch,
};
use tokio::sync::mpsc;

use swapd_client::BusinessClient;

use crate::cli::WebhooksCommand;
use crate::config::Settings;
use crate::output::{Out, or_dash, relative};

pub async fn run(settings: &Settings, out: &Out, command: WebhooksCommand) -> anyhow::Result<()> {
    // Every command but `listen` needs the API key.
    let client = settings.business();
    match command {
        WebhooksCommand::Create {
            url,
            events,
            description,
        } => {
            let input = WebhookInput {
                url,
                events: expand(events),
                description,
            };
            create(&client?, out, &input).await
        }
        WebhooksCommand::List => list(&client?, out).await,
        WebhooksCommand::Update {
            webhook_id,
            url,
            events,
            description,
            clear_description,
            enable,
            disable,
        } => {
            let description = if clear_description {
                Some(None)
            } else {
                description.map(Some)
            };
            let patch = WebhookPatch {
                url,
                description,
                events: events.map(expand),
                status: status_change(enable, disable),
            };
            update(&client?, out, &webhook_id, &patch).await
        }
        WebhooksCommand::Rotate {
            webhook_id,
            grace,
            force,
        } => {
            let input = RotateInput {
                previous_secret_expires_in: grace,
                force: force.then_some(true),
            };
            rotate(&client?, out, &webhook_id, &input).await
        }
        WebhooksCommand::Replay {
            webhook_id,
            event,
            since,
            until,
            limit,
        } => {
            let input = ReplayInput {
                event_id: event,
                since,
                until,
                limit,
            };
            replay(&client?, out, &webhook_id, &input).await
        }
        WebhooksCommand::Test {
            webhook_id,
            event_type,
        } => test(&client?, out, webhook_id, event_type).await,
        WebhooksCommand::Deliveries { webhook_id, limit } => {
            deliveries(&client?, out, &webhook_id, limit).await
        }
        WebhooksCommand::Listen {
            listen: addr,
            secret,
            count,
        } => listen(out, addr, &secret, count).await,
    }
}

async fn create(client: &BusinessClient, out: &Out, input: &WebhookInput) -> anyhow::Result<()> {
    let created = client.create_webhook(input).await?;
    if !out.json(&created)? {
        print_webhook(&created.webhook);
        println!(
            "secret {}  (shown only now; verify deliveries with it)",
            created.secret
        );
        println!(
            "try it: swapctl webhooks listen --secret {} & swapctl webhooks test {}",
            created.secret, created.webhook.webhook_id
        );
    }
    Ok(())
}

async fn list(client: &BusinessClient, out: &Out) -> anyhow::Result<()> {
    let list = client.webhooks().await?;
    if !out.json(&list)? {
        list.webhooks.iter().for_each(print_webhook);
        println!(
            "{}",
            crate::output::count(list.count, "subscription", "subscriptions")
        );
    }
    Ok(())
}

async fn update(
    client: &BusinessClient,
    out: &Out,
    webhook_id: &str,
    patch: &WebhookPatch,
) -> anyhow::Result<()> {
    let webhook = client.update_webhook(webhook_id, patch).await?;
    if !out.json(&webhook)? {
        print_webhook(&webhook);
    }
    Ok(())
}

async fn replay(
    client: &BusinessClient,
    out: &Out,
    webhook_id: &str,
    input: &ReplayInput,
) -> anyhow::Result<()> {
    let queued = client.replay_webhook(webhook_id, input).await?;
    if !out.json(&queued)? {
        print_queued(&queued);
    }
    Ok(())
}

async fn deliveries(
    client: &BusinessClient,
    out: &Out,
    webhook_id: &str,
    limit: Option<u32>,
) -> anyhow::Result<()> {
    let log = client.webhook_deliveries(webhook_id, limit).await?;
    if !out.json(&log)? {
        print_deliveries(&log);
    }
    Ok(())
}

async fn rotate(
    client: &BusinessClient,
    out: &Out,
    webhook_id: &str,
    input: &RotateInput,
) -> anyhow::Result<()> {
    let rotated = client.rotate_webhook_secret(webhook_id, input).await?;
    if !out.json(&rotated)? {
        println!("new secret {}  (shown only now)", rotated.secret);
        match rotated.previous_secret_expires_at {
            Some(at) => println!("the previous secret also signs until {}", relative(at)),
            None => println!("the previous secret no longer signs"),
        }
    }
    Ok(())
}

/// Sends a test event; fails when the receiver did not accept it.
async fn test(
    client: &BusinessClient,
    out: &Out,
    webhook_id: String,
    event_type: Option<String>,
) -> anyhow::Result<()> {
    let input = TestCallbackInput {
        webhook_id,
        event_type,
    };
    let result = client.test_callback(&input).await?;
    if !out.json(&result)? {
        print_test_result(&result);
    }
    anyhow::ensure!(result.delivered, "the test delivery was not accepted");
    Ok(())
}

/// `--enable` / `--disable` as the status a patch sets.
fn status_change(enable: bool, disable: bool) -> Option<String> {
    match (enable, disable) {
        (true, _) => Some("active".to_owned()),
        (_, true) => Some("disabled".to_owned()),
        _ => None,
    }
}

fn print_queued(queued: &ReplayQueued) {
    for delivery in &queued.deliveries {
        println!(
            "{} {} → {}",
            delivery.event_id, delivery.event_type, delivery.delivery_id
        );
    }
    println!(
        "{} queued",
        crate::output::count(queued.queued, "delivery", "deliveries")
    );
}

fn print_test_result(result: &TestCallbackResult) {
    match result.status_code {
        Some(code) => println!(
            "{}: answered {code} in {} ms{}",
            result.event_id,
            result.latency_ms,
            if result.delivered {
                ""
            } else {
                " (not delivered)"
            }
        ),
        None => println!(
            "{}: not delivered ({}) after {} ms",
            result.event_id,
            or_dash(result.failure.as_deref()),
            result.latency_ms
        ),
    }
}

fn print_deliveries(log: &DeliveryLog) {
    for d in &log.deliveries {
        println!(
            "{} {} {:<9} {:<9} attempts {} last {} {}",
            d.delivery_id,
            d.event_id,
            d.kind,
            d.status,
            d.attempts,
            d.last_status_code.map_or("-".to_owned(), |c| c.to_string()),
            or_dash(d.last_error.as_deref())
        );
    }
    println!(
        "{}",
        crate::output::count(log.count, "delivery", "deliveries")
    );
}

/// `all` stands for every event type.
fn expand(events: Vec<String>) -> Vec<String> {
    if events.iter().any(|e| e == "all") {
        EventType::VARIANTS
            .iter()
            .map(|e| e.as_str().to_owned())
            .collect()
    } else {
        events
    }
}

fn print_webhook(webhook: &Webhook) {
    println!(
        "{}  {}  {}  [{}]{}",
        webhook.webhook_id,
        webhook.status,
        webhook.url,
        webhook.events.join(","),
        webhook
            .disabled_reason
            .as_deref()
            .map(|r| format!("  disabled: {r}"))
            .unwrap_or_default()
    );
}

struct Receiver {
    verifier: Verifier,
    verified: mpsc::UnboundedSender<WebhookEvent>,
}

async fn receive(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    match receiver.verifier.verify(&headers, &body) {
        Ok(event) => {
            let _ = receiver.verified.send(event);
            StatusCode::NO_CONTENT
        }
        Err(error) => {
            eprintln!("refused a delivery: {error}");
            StatusCode::UNAUTHORIZED
        }
    }
}

async fn listen(
    out: &Out,
    addr: SocketAddr,
    secrets: &[String],
    count: Option<u64>,
) -> anyhow::Result<()> {
    let mut verifier = Verifier::new(&secrets[0])?;
    for secret in &secrets[1..] {
        verifier = verifier.and_secret(secret)?;
    }
    let (verified, mut events) = mpsc::unbounded_channel();
    let app = Router::new()
        .fallback(receive)
        .with_state(Arc::new(Receiver { verifier, verified }));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr()?;
    eprintln!("listening on http://{addr}/ (Ctrl-C to stop); subscribe it with:");
    eprintln!("  swapctl webhooks create --url http://{addr}/ --events all");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let mut seen = 0u64;
    loop {
        let event = tokio::select! {
            event = events.recv() => event.context("the receiver stopped")?,
            _ = tokio::signal::ctrl_c() => break,
        };
        if out.json {
            out.line(&event)?;
        } else {
            let order = event.data.order.as_ref().map_or_else(
                || "(test delivery)".to_owned(),
                |o| format!("{} {}", o.order_id, o.status),
            );
            println!(
                "verified {} {} #{} {order}",
                event.id, event.event_type, event.sequence
            );
        }
        seen += 1;
        if count.is_some_and(|count| seen >= count) {
            break;
        }
    }
    server.abort();
    Ok(())
}
