//! Catalog, tokens, quotes, routes.

use swapd_client::RoutesQuery;
use swapd_client::SwapApi;
use swapd_client::market::{Direction, Observed, QuoteInput, RateType, RouteSort, Token};

use crate::cli::{DirectionArg, PairArgs, RateArg, RoutesArgs, SortArg, TokensCommand};
use crate::output::{Out, or_dash, relative};

impl From<DirectionArg> for Direction {
    fn from(arg: DirectionArg) -> Self {
        match arg {
            DirectionArg::From => Direction::From,
            DirectionArg::To => Direction::To,
        }
    }
}

impl From<SortArg> for RouteSort {
    fn from(arg: SortArg) -> Self {
        match arg {
            SortArg::Best => RouteSort::Best,
            SortArg::Output => RouteSort::Output,
            SortArg::Fastest => RouteSort::Fastest,
            SortArg::Reliable => RouteSort::Reliable,
        }
    }
}

impl From<RateArg> for RateType {
    fn from(arg: RateArg) -> Self {
        match arg {
            RateArg::Fixed => RateType::Fixed,
            RateArg::Float => RateType::Float,
        }
    }
}

pub async fn currencies(api: &impl SwapApi, out: &Out) -> anyhow::Result<()> {
    let catalog = api.currencies().await?;
    if out.json(&catalog)? {
        return Ok(());
    }
    println!(
        "{:<10} {:<26} {:<9} {:>14} {:>14}  send/receive",
        "code", "name", "network", "min", "max"
    );
    for c in &catalog.currencies {
        println!(
            "{:<10} {:<26} {:<9} {:>14} {:>14}  {}/{}",
            c.code,
            c.name,
            c.network,
            c.min.as_deref().unwrap_or("per pair"),
            c.max.as_deref().unwrap_or("per pair"),
            if c.send { "yes" } else { "no" },
            if c.receive { "yes" } else { "no" }
        );
    }
    println!(
        "{} currencies{}",
        catalog.count,
        if catalog.degraded {
            " (degraded: some providers did not answer)"
        } else {
            ""
        }
    );
    Ok(())
}

pub async fn tokens(api: &impl SwapApi, out: &Out, command: TokensCommand) -> anyhow::Result<()> {
    let list = match command {
        TokensCommand::Popular { chain } => api.popular_tokens(chain.as_deref()).await?,
        TokensCommand::Search {
            query,
            chain,
            limit,
        } => api.search_tokens(&query, chain.as_deref(), limit).await?,
        TokensCommand::ByAddress(token) => {
            let token = api.token_by_address(&token.chain, &token.address).await?;
            if !out.json(&token)? {
                print_token(&token);
            }
            return Ok(());
        }
        TokensCommand::Logo(token) => {
            let logo = api.token_logo(&token.chain, &token.address).await?;
            if !out.json(&logo)? {
                let kind = if logo.generated {
                    "generated placeholder"
                } else {
                    "logo"
                };
                println!(
                    "{} on {} ({}): {kind}",
                    logo.symbol, logo.chain, logo.address
                );
                println!("{}", logo.image);
            }
            return Ok(());
        }
    };
    if !out.json(&list)? {
        list.tokens.iter().for_each(print_token);
        println!("{} tokens", list.count);
    }
    Ok(())
}

fn print_token(token: &Token) {
    println!(
        "{:<8} {:<24} {:<9} {} (decimals {}, currency {})",
        token.symbol,
        token.name,
        token.chain,
        token.address,
        token.decimals,
        or_dash(token.currency_code.as_deref())
    );
}

pub async fn quote(api: &impl SwapApi, out: &Out, pair: PairArgs) -> anyhow::Result<()> {
    let quote = api
        .quote(&QuoteInput {
            from_ccy: pair.from,
            to_ccy: pair.to,
            amount: pair.amount,
            direction: pair.direction.map(Into::into),
            rate_type: pair.rate.map(Into::into),
            refund_address: None,
            route_constraints: None,
            affiliate_code: None,
        })
        .await?;
    if out.json(&quote)? {
        return Ok(());
    }
    println!(
        "{} {} → {} {}  (rate {}, {:?}, via {})",
        quote.from_amount,
        quote.from_ccy,
        quote.to_amount,
        quote.to_ccy,
        quote.rate,
        quote.rate_type,
        quote.provider
    );
    println!(
        "network fee {}  limits {} – {}  expires {}",
        quote.network_fee,
        quote.min,
        quote.max.as_deref().unwrap_or("no maximum"),
        relative(quote.expires_at)
    );
    Ok(())
}

pub async fn routes(api: &impl SwapApi, out: &Out, args: RoutesArgs) -> anyhow::Result<()> {
    let query = RoutesQuery {
        from_ccy: args.pair.from,
        to_ccy: args.pair.to,
        amount: args.pair.amount,
        direction: args.pair.direction.map(Into::into),
        rate_type: args.pair.rate.map(Into::into),
        wallet_address: args.wallet,
        wallet_chain_namespace: args.wallet_namespace,
        recipient_address: args.recipient,
        provider: args.provider,
        sort: args.sort.map(Into::into),
    };
    let routes = api.routes(&query).await?;
    if out.json(&routes)? {
        return Ok(());
    }
    for card in &routes.routes {
        let kind = format!("{:?}", card.execution_type).to_lowercase();
        if card.is_available {
            println!(
                "{:<38} {:<8} {:<10} {} {} → {} {}  (min {}, ~{}s){}",
                or_dash(card.route_quote_id.as_deref()),
                kind,
                card.execution_provider,
                or_dash(card.from_amount.as_deref()),
                card.from_ccy,
                or_dash(card.expected_output_amount.as_deref()),
                card.to_ccy,
                or_dash(card.min_output_amount.as_deref()),
                card.estimated_duration_seconds.unwrap_or_default(),
                card.observed
                    .as_ref()
                    .map_or_else(String::new, |o| format!("  observed: {}", observed(o)))
            );
        } else {
            println!(
                "{:<38} {:<8} {:<10} unavailable: {}",
                "-",
                kind,
                card.execution_provider,
                or_dash(
                    card.unavailable_detail
                        .as_deref()
                        .or(card.unavailable_reason.as_deref())
                )
            );
        }
    }
    println!(
        "{} by {}; lock an offchain one with `swapctl resolve rqq_…`, plan an onchain one with `swapctl onchain resolve rqq_… --wallet …`",
        crate::output::count(routes.count, "route", "routes"),
        routes.sort.as_str()
    );
    Ok(())
}

/// Observed figures in a few words: `success 0.95 of 40, p50 120s, p90 600s, delivered -150
/// bps vs quoted`.
pub fn observed(figures: &Observed) -> String {
    let seconds = |s: Option<u32>| s.map_or_else(|| "-".into(), |s| format!("{s}s"));
    format!(
        "success {} of {}, p50 {}, p90 {}, delivered {} bps vs quoted",
        figures.success_rate,
        figures.sample_size,
        seconds(figures.p50_seconds),
        seconds(figures.p90_seconds),
        figures
            .delivered_vs_quoted_bps
            .map_or_else(|| "-".into(), |bps| format!("{bps:+}"))
    )
}

pub async fn providers(api: &impl SwapApi, out: &Out) -> anyhow::Result<()> {
    let cards = api.providers().await?;
    if out.json(&cards)? {
        return Ok(());
    }
    for card in &cards.providers {
        println!(
            "{:<10} {:<8} {:<9} {}",
            card.provider,
            format!("{:?}", card.execution_type).to_lowercase(),
            card.availability,
            card.observed
                .as_ref()
                .map_or_else(|| "too few outcomes yet".into(), observed)
        );
        for pair in &card.pairs {
            println!(
                "    {} → {}: {}",
                pair.from_ccy,
                pair.to_ccy,
                observed(&pair.observed)
            );
        }
    }
    println!(
        "figures over the last {} days, from {} outcomes a provider (or pair) on",
        cards.window_days, cards.min_samples
    );
    Ok(())
}

pub async fn resolve(api: &impl SwapApi, out: &Out, route_quote_id: &str) -> anyhow::Result<()> {
    let resolved = api.resolve_route(route_quote_id).await?;
    if out.json(&resolved)? {
        return Ok(());
    }
    println!(
        "createToken {}  (single use, expires {})",
        resolved.create_token,
        relative(resolved.expires_at)
    );
    println!(
        "{} {} → {} {} at {} via {}",
        resolved.from_amount,
        resolved.from_ccy,
        resolved.to_amount,
        resolved.to_ccy,
        resolved.rate,
        resolved.provider
    );
    println!(
        "next: swapctl order create --token {} --to-address …",
        resolved.create_token
    );
    Ok(())
}
