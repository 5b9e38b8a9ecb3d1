//! `swapd keys ...`: issuing, listing, showing and revoking Business API keys.

use anyhow::{Context, bail};
use serde_json::{Value, json};
use swapd_core::api_keys::{ApiKey, ApiKeyPolicy, RateLimits};

use crate::app::Runtime;
use crate::cli::{CreateKeyArgs, KeysCommand};

pub async fn run(runtime: &Runtime, command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Create(args) => create(runtime, args).await,
        KeysCommand::List { json } => {
            let keys = runtime.store.list_api_keys().await?;
            if json {
                let all: Vec<Value> = keys.iter().map(describe).collect();
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else if keys.is_empty() {
                println!(
                    "No API keys yet. Create one with: swapd keys create --name NAME --permissions prices:read"
                );
            } else {
                println!("{:<38} {:<8} {:<24} PERMISSIONS", "ID", "STATUS", "NAME");
                for key in &keys {
                    println!(
                        "{:<38} {:<8} {:<24} {}",
                        key.id,
                        key.status,
                        key.policy.name(),
                        permissions(key).join(",")
                    );
                }
            }
            Ok(())
        }
        KeysCommand::Show { id, json } => {
            let key = find(runtime, &id).await?;
            print_key(&key, json)
        }
        KeysCommand::Revoke { id, json } => {
            let now = runtime.clock.now_ms();
            let sharing = runtime.sharing().await?;
            let revoked =
                swapd_api::keys::revoke(runtime.store.as_ref(), &sharing, &id, now).await?;
            let Some(key) = revoked else {
                bail!("no API key `{id}` (list them with `swapd keys list`)");
            };
            print_key(&key, json)
        }
    }
}

async fn create(runtime: &Runtime, args: CreateKeyArgs) -> anyhow::Result<()> {
    let defaults = RateLimits::default();
    let limits = RateLimits {
        per_minute: args.per_minute.unwrap_or(defaults.per_minute),
        per_hour: args.per_hour.unwrap_or(defaults.per_hour),
        weight_per_hour: args.weight_per_hour.unwrap_or(defaults.weight_per_hour),
    };
    let policy = ApiKeyPolicy::new(
        &args.name,
        args.permissions,
        &args.ip_allow,
        &args.origins,
        limits,
    )
    .context("invalid key policy")?
    .with_markup_bps(args.markup_bps);
    let policy = match &args.markup_recipient {
        Some(address) => policy
            .with_markup_recipient(address)
            .context("--markup-recipient")?,
        None => policy,
    };
    let issued = swapd_api::keys::issue(
        runtime.store.as_ref(),
        &runtime.master_key,
        policy,
        runtime.config.fees.max_markup_bps,
        runtime.clock.now_ms(),
    )
    .await?;
    let mut record = describe(&issued.key);
    record["apiSecret"] = Value::String(issued.secret.clone());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else {
        println!("Created API key \"{}\"", issued.key.policy.name());
        println!();
        println!("  apiKey:    {}", issued.key.id);
        println!("  apiSecret: {}", issued.secret);
        println!();
        println!("The secret is shown only now; store it safely. It signs requests as X-API-SIGN");
        println!("(HMAC-SHA256, see docs/authentication.md).");
        println!("Permissions: {}", permissions(&issued.key).join(", "));
    }
    Ok(())
}

async fn find(runtime: &Runtime, id: &str) -> anyhow::Result<ApiKey> {
    runtime
        .store
        .api_key(id)
        .await?
        .with_context(|| format!("no API key `{id}` (list them with `swapd keys list`)"))
}

fn print_key(key: &ApiKey, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(&describe(key))?);
        return Ok(());
    }
    let limits = key.policy.limits();
    let or_any = |items: Vec<String>| {
        if items.is_empty() {
            "any".to_owned()
        } else {
            items.join(", ")
        }
    };
    println!("apiKey:       {}", key.id);
    println!("name:         {}", key.policy.name());
    println!("status:       {}", key.status);
    println!("permissions:  {}", permissions(key).join(", "));
    println!(
        "ipAllow:      {}",
        or_any(
            key.policy
                .ip_allow()
                .iter()
                .map(ToString::to_string)
                .collect()
        )
    );
    println!("origins:      {}", or_any(key.policy.origins().to_vec()));
    println!(
        "rateLimits:   {}/min, {}/hour, {} weight/hour",
        limits.per_minute, limits.per_hour, limits.weight_per_hour
    );
    println!("markupBps:    {}", key.policy.markup_bps());
    if let Some(recipient) = key.policy.markup().recipient {
        println!("markupTo:     {recipient}");
    }
    println!("createdAt:    {}", key.created_at_ms / 1000);
    if let Some(revoked) = key.revoked_at_ms {
        println!("revokedAt:    {}", revoked / 1000);
    }
    Ok(())
}

fn permissions(key: &ApiKey) -> Vec<&'static str> {
    key.policy
        .permissions()
        .iter()
        .map(|p| p.as_str())
        .collect()
}

/// The public description of a key: everything but the secret. Times in epoch seconds.
fn describe(key: &ApiKey) -> Value {
    let limits = key.policy.limits();
    json!({
        "apiKey": key.id,
        "name": key.policy.name(),
        "status": key.status.as_str(),
        "permissions": permissions(key),
        "ipAllow": key.policy.ip_allow().iter().map(ToString::to_string).collect::<Vec<_>>(),
        "origins": key.policy.origins(),
        "rateLimits": {
            "perMinute": limits.per_minute,
            "perHour": limits.per_hour,
            "weightPerHour": limits.weight_per_hour,
        },
        "markupBps": key.policy.markup_bps(),
        "markupRecipient": key.policy.markup().recipient.map(|address| address.to_checksum(None)),
        "createdAt": key.created_at_ms / 1000,
        "revokedAt": key.revoked_at_ms.map(|ms| ms / 1000),
    })
}
