//! Route quotes: what `GET /routes` hands out (one per usable card), what `POST /routes/resolve`
//! turns into a createToken, and how candidate routes are ranked.

use sha2::{Digest, Sha256};

use crate::amount::Amount;
use crate::fees::OnchainFee;
use crate::fees::entry::Fee;
use crate::ids::RouteQuoteId;
use crate::market::currencies::CurrencyDef;
use crate::market::observed::{Expectation, Figures, Observed, RouteSort};
use crate::market::provider::{ProviderError, ProviderInfo, ProviderQuote};
use crate::market::{Direction, ExecutionType, RateType};
use crate::owner::Owner;

/// Lifetime of a createToken (docs/market.md).
pub const CREATE_TOKEN_TTL_MS: i64 = 10 * 60 * 1000;
/// A createToken on the wire: this prefix and 64 lowercase hex digits.
pub const CREATE_TOKEN_PREFIX: &str = "ctk_";

/// A usable route card as kept for its recipient: the terms it promised, to whom, until when.
/// Amounts are in their currency (the input's: `from_amount`, `min`, `max`; the output's:
/// `to_amount`, `min_output`; `rate` is output per input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteQuote {
    pub id: RouteQuoteId,
    /// Who received it: only they may resolve it.
    pub owner: Owner,
    pub provider: String,
    pub execution_type: ExecutionType,
    pub rate_type: RateType,
    pub direction: Direction,
    pub from: &'static CurrencyDef,
    pub to: &'static CurrencyDef,
    pub from_amount: Amount,
    pub to_amount: Amount,
    pub min_output: Amount,
    pub rate: Amount,
    /// The provider's input limits.
    pub min: Amount,
    /// `None`: no maximum.
    pub max: Option<Amount>,
    pub fees: Vec<Fee>,
    pub estimated_duration_secs: u32,
    pub wallet_address: Option<String>,
    pub wallet_namespace: Option<String>,
    pub recipient: Option<String>,
    pub gasless: bool,
    /// The desk's handle on the quoted fixed rate, for opening the exchange: never shown.
    pub rate_lock: Option<String>,
    /// The fees an onchain router collects, locked with the quote.
    pub onchain_fees: Vec<OnchainFee>,
    /// The affiliate whose code the quote was made with; its order takes the code.
    pub affiliate_code: Option<String>,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
}

impl RouteQuote {
    pub fn is_expired(&self, now_ms: i64) -> bool {
        now_ms >= self.expires_at_ms
    }
}

/// A createToken as stored: only its hash, so a database reader cannot place orders with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTokenRecord {
    pub token_hash: String,
    pub owner: Owner,
    /// The route it locks, copied when resolved.
    pub route: RouteQuote,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    pub used_at_ms: Option<i64>,
}

/// Why a route quote cannot be resolved into a createToken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("this is an onchain route: resolve it with POST /onchain/routes/resolve")]
    Onchain,
    #[error("this route quote expired; call GET /routes again")]
    Expired,
}

/// Resolves `owner`'s offchain route quote at `now_ms`: a new createToken (returned once, only
/// its hash is kept) that locks the route's terms for [`CREATE_TOKEN_TTL_MS`].
pub fn resolve(
    route: RouteQuote,
    now_ms: i64,
) -> Result<(String, CreateTokenRecord), ResolveError> {
    if route.execution_type == ExecutionType::Onchain {
        return Err(ResolveError::Onchain);
    }
    if route.is_expired(now_ms) {
        return Err(ResolveError::Expired);
    }
    let token = new_create_token();
    let record = CreateTokenRecord {
        token_hash: hash_create_token(&token),
        owner: route.owner.clone(),
        route,
        created_at_ms: now_ms,
        expires_at_ms: now_ms + CREATE_TOKEN_TTL_MS,
        used_at_ms: None,
    };
    Ok((token, record))
}

/// Why a createToken cannot be redeemed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedeemError {
    /// Unknown, malformed, or issued to another principal: indistinguishable on purpose.
    #[error("createToken not found")]
    NotFound,
    #[error("createToken expired; resolve the route again")]
    Expired,
    #[error("createToken was already used")]
    Used,
}

/// The stored form of a createToken: hex SHA-256 of the token string.
pub fn hash_create_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `token` has the createToken form (so malformed input never reaches the store).
pub fn is_create_token(token: &str) -> bool {
    token.strip_prefix(CREATE_TOKEN_PREFIX).is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A new createToken (256 random bits).
pub fn new_create_token() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{CREATE_TOKEN_PREFIX}{}", hex::encode(bytes))
}

/// One provider's answer to a route request, before it becomes a card.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub provider: ProviderInfo,
    pub outcome: Result<ProviderQuote, ProviderError>,
}

/// How candidates are ranked: the order asked for, and the figures behind it.
#[derive(Debug, Clone, Copy)]
pub struct Ranking<'a> {
    pub direction: Direction,
    pub sort: RouteSort,
    pub observed: &'a Observed,
    /// The pair asked for (currency codes), whose figures a provider is judged by.
    pub from: &'static str,
    pub to: &'static str,
}

impl Ranking<'_> {
    /// By quotes alone (`output`), for callers that need no figures.
    pub fn by_quote(direction: Direction) -> Ranking<'static> {
        static NONE: std::sync::LazyLock<Observed> = std::sync::LazyLock::new(Observed::default);
        Ranking {
            direction,
            sort: RouteSort::Output,
            observed: &NONE,
            from: "",
            to: "",
        }
    }

    /// The figures `provider`'s route is judged by.
    pub fn figures(&self, provider: &str) -> Option<&Figures> {
        self.observed.route(provider, self.from, self.to)
    }
}

/// How long a route is expected to take: the observed median when the provider has enough
/// outcomes, its own estimate otherwise.
pub fn expected_duration_secs(quote: &ProviderQuote, figures: Option<&Figures>) -> u32 {
    figures
        .and_then(|f| f.p50_secs)
        .unwrap_or(quote.estimated_duration_secs)
}

/// Orders candidates best first (docs/market.md, "Ranking"): usable routes before unusable
/// ones; among usable routes, by `ranking.sort`; then by provider id so equal routes keep a
/// stable order.
pub fn rank(candidates: &mut [Candidate], ranking: &Ranking<'_>) {
    use std::cmp::Ordering;
    // Of what the quote promises, what is expected: its output (or, for reverse quotes, the
    // input it costs), with `expected` the share expected to arrive.
    let value = |quote: &ProviderQuote, expected: Expectation| match ranking.direction {
        Direction::From => RankValue::Output(std::cmp::Reverse(expected.of(quote.to_amount))),
        Direction::To => expected
            .cost_of(quote.from_amount)
            .map_or(RankValue::Never, RankValue::Cost),
    };
    candidates.sort_by(|a, b| match (&a.outcome, &b.outcome) {
        (Ok(x), Ok(y)) => {
            let (fx, fy) = (
                ranking.figures(a.provider.id),
                ranking.figures(b.provider.id),
            );
            let expected = |f: Option<&Figures>| f.map_or(Expectation::FULL, Figures::expectation);
            let best = value(x, expected(fx)).cmp(&value(y, expected(fy)));
            let output = value(x, Expectation::FULL).cmp(&value(y, Expectation::FULL));
            let time = expected_duration_secs(x, fx).cmp(&expected_duration_secs(y, fy));
            let order = match ranking.sort {
                RouteSort::Output => {
                    output.then(x.estimated_duration_secs.cmp(&y.estimated_duration_secs))
                }
                RouteSort::Best => best.then(time),
                RouteSort::Fastest => time.then(best),
                // Known rates first, highest first.
                RouteSort::Reliable => {
                    let rate = |f: Option<&Figures>| f.map(|f| f.success_bps);
                    rate(fy).cmp(&rate(fx)).then(best).then(time)
                }
            };
            order.then(a.provider.id.cmp(b.provider.id))
        }
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => a.provider.id.cmp(b.provider.id),
    });
}

/// What a route's amounts are compared by, better first: an output (more is better) or a
/// cost (less is better; one that buys nothing expected is the worst).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum RankValue {
    Output(std::cmp::Reverse<Amount>),
    Cost(Amount),
    Never,
}

/// Rounded-down `amount · (10 000 − bps) / 10 000`: a minimum output after slippage.
pub fn less_bps(amount: Amount, bps: u32) -> Amount {
    use alloy_primitives::U256;
    amount.mul_div(
        U256::from(super::pricing::BPS - bps.min(super::pricing::BPS)),
        U256::from(super::pricing::BPS),
        crate::amount::Rounding::Down,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::provider::ProviderError;

    fn quote(to: &str, from: &str, secs: u32) -> ProviderQuote {
        let a = |s: &str| Amount::parse(s, 6).unwrap();
        ProviderQuote {
            from_amount: a(from),
            to_amount: a(to),
            min_output: a(to),
            rate_type: RateType::Fixed,
            network_fee: a("0"),
            fees: vec![],
            min: a("1"),
            max: Some(a("100")),
            estimated_duration_secs: secs,
            valid_for_secs: 60,
            gasless: false,
            rate_lock: None,
            onchain_fees: Vec::new(),
        }
    }

    fn candidate(id: &'static str, outcome: Result<ProviderQuote, ProviderError>) -> Candidate {
        Candidate {
            provider: ProviderInfo {
                id,
                execution_type: ExecutionType::Offchain,
            },
            outcome,
        }
    }

    #[test]
    fn best_output_first_failures_last() {
        let mut list = vec![
            candidate("down", Err(ProviderError::Unavailable("timeout".into()))),
            candidate("low", Ok(quote("9", "10", 60))),
            candidate("high", Ok(quote("9.5", "10", 600))),
            candidate("high-fast", Ok(quote("9.5", "10", 60))),
        ];
        rank(&mut list, &Ranking::by_quote(Direction::From));
        let ids: Vec<_> = list.iter().map(|c| c.provider.id).collect();
        assert_eq!(ids, ["high-fast", "high", "low", "down"]);

        rank(&mut list, &Ranking::by_quote(Direction::To));
        assert_eq!(list[3].provider.id, "down");
    }

    #[test]
    fn create_tokens_have_one_form() {
        let token = new_create_token();
        assert!(is_create_token(&token));
        assert!(!is_create_token(&token.to_uppercase()));
        assert!(!is_create_token("ctk_12"));
        assert_eq!(hash_create_token(&token).len(), 64);
        assert_ne!(
            hash_create_token(&token),
            hash_create_token(&new_create_token())
        );
    }

    #[test]
    fn slippage_rounds_down() {
        let a = Amount::parse("100", 6).unwrap();
        assert_eq!(less_bps(a, 50).to_string(), "99.5");
        assert_eq!(
            less_bps(Amount::parse("0.000001", 6).unwrap(), 50).to_string(),
            "0"
        );
    }
}
