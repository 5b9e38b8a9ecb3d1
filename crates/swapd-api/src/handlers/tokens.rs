//! The token list: popular tokens, search, lookup by address, logos.

use base64::Engine;
use sha2::{Digest, Sha256};
use swapd_core::address::Network;
use swapd_core::market::tokens::{self, TokenDef};
use swapd_types::market::{Token, TokenList, TokenLogo};
use swapd_types::{ErrorCode, Success};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

use super::input::{invalid, only_parameters, required};
use crate::json::Json;
use crate::{ApiError, AppState, SignedQuery};

const MAX_SEARCH_RESULTS: usize = 100;
const DEFAULT_SEARCH_RESULTS: usize = 20;
const MAX_QUERY_TEXT: usize = 64;

/// The schema of a `chain` parameter: every spelling [`tokens::parse_chain`] reads.
pub(crate) struct ChainParam;

impl utoipa::PartialSchema for ChainParam {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(tokens::chain_spellings()))
            .into()
    }
}

impl utoipa::ToSchema for ChainParam {}

/// Popular tokens.
#[utoipa::path(get, path = "/api/v3/tokens/popular", tag = "business",
    security(("hmac" = [])),
    description = "Optional `chain`: a network code (`BASE`), an EVM chain id \
        (`8453`), a CAIP-2 id (`eip155:8453`) or `solana`.",
    params(("chain" = inline(Option<ChainParam>), Query, description = "Only this chain")),
    responses((status = 200, description = "Tokens", body = inline(Success<TokenList>))))]
pub(crate) async fn tokens_popular(
    query: SignedQuery,
) -> Result<Json<Success<TokenList>>, ApiError> {
    let chain = popular_query(&query)?;
    Ok(token_list(tokens::popular(chain).collect()))
}

/// Token search by symbol or name.
#[utoipa::path(get, path = "/api/v3/tokens/search", tag = "business",
    security(("hmac" = [])),
    description = "Case-insensitive match of `q` in symbols and names: exact \
        symbols first, then symbol prefixes, then the rest.",
    params(
        ("q" = String, Query, example = "usdc", min_length = 1, max_length = 64, pattern = "\\S",
            description = "1 to 64 characters, not only white space"),
        ("chain" = inline(Option<ChainParam>), Query, description = "Only this chain"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "1 to 100, default 20"),
    ),
    responses((status = 200, description = "Tokens", body = inline(Success<TokenList>))))]
pub(crate) async fn tokens_search(
    query: SignedQuery,
) -> Result<Json<Success<TokenList>>, ApiError> {
    let (q, chain, limit) = search_query(&query)?;
    Ok(token_list(tokens::search(q, chain, limit)))
}

/// A token by its contract address or mint.
#[utoipa::path(get, path = "/api/v3/tokens/by-address", tag = "business",
    security(("hmac" = [])),
    description = "EVM addresses match in any letter case; Solana mints exactly.",
    params(
        ("chain" = inline(ChainParam), Query, example = "ETH", description = "Chain of the token"),
        ("address" = String, Query, example = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
            description = "Contract address or mint"),
    ),
    responses(
        (status = 200, description = "The token", body = inline(Success<Token>)),
        (status = 400, description = "`address_invalid`", body = swapd_types::ErrorEnvelope),
        (status = 404, description = "`not_found`: no such token in the list", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn tokens_by_address(
    query: SignedQuery,
) -> Result<Json<Success<Token>>, ApiError> {
    let (chain, address) = token_query(&query)?;
    tokens::by_address(chain, address)
        .map(|token| Json(Success::new(token_dto(token))))
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotFound,
                format!("no token with address `{address}` on {chain} is listed"),
            )
        })
}

/// A token's logo as a data URI.
#[utoipa::path(get, path = "/api/v3/tokens/logo", tag = "business",
    security(("hmac" = [])),
    description = "No logos are shipped: the image is generated \
        deterministically from the chain and address (`generated: true`), for listed and unlisted tokens alike.",
    params(
        ("chain" = inline(ChainParam), Query, example = "ETH", description = "Chain of the token"),
        ("address" = String, Query, example = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
            description = "Contract address or mint"),
    ),
    responses(
        (status = 200, description = "The logo", body = inline(Success<TokenLogo>)),
        (status = 400, description = "`address_invalid`", body = swapd_types::ErrorEnvelope),
    ))]
pub(crate) async fn tokens_logo(query: SignedQuery) -> Result<Json<Success<TokenLogo>>, ApiError> {
    let (chain, address) = token_query(&query)?;
    let token = tokens::by_address(chain, address);
    let address = token.map_or(address, |t| t.address);
    let symbol = token.map_or_else(
        || address.trim_start_matches("0x").chars().take(4).collect(),
        |t| t.symbol.to_owned(),
    );
    let image = generated_logo(chain, address, &symbol);
    Ok(Json(Success::new(TokenLogo {
        chain: chain.code().into(),
        address: address.into(),
        symbol,
        image,
        generated: true,
    })))
}

/// A round badge in a colour derived from the address, with the symbol on it.
fn generated_logo(chain: Network, address: &str, symbol: &str) -> String {
    let key = if chain.evm_chain_id().is_some() {
        address.to_ascii_lowercase()
    } else {
        address.to_owned()
    };
    let digest = Sha256::digest(format!("{}:{key}", chain.code()));
    let hue = u16::from_be_bytes([digest[0], digest[1]]) % 360;
    let label: String = symbol
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(5)
        .collect();
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"64\" height=\"64\" viewBox=\"0 0 64 64\">\
         <circle cx=\"32\" cy=\"32\" r=\"32\" fill=\"hsl({hue},55%,45%)\"/>\
         <text x=\"32\" y=\"38\" font-family=\"sans-serif\" font-size=\"15\" font-weight=\"bold\" \
         fill=\"#fff\" text-anchor=\"middle\">{label}</text></svg>"
    );
    format!(
        "data:image/svg+xml;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(svg)
    )
}

fn token_list(list: Vec<&'static TokenDef>) -> Json<Success<TokenList>> {
    let tokens: Vec<Token> = list.into_iter().map(token_dto).collect();
    Json(Success::new(TokenList {
        count: tokens.len(),
        tokens,
    }))
}

fn token_dto(token: &TokenDef) -> Token {
    Token {
        symbol: token.symbol.into(),
        name: token.name.into(),
        chain: token.chain.code().into(),
        chain_namespace: token.chain.chain_namespace().into(),
        chain_id: token.chain.evm_chain_id(),
        address: token.address.into(),
        decimals: token.decimals,
        native: token.is_native(),
        currency_code: token.currency.map(Into::into),
    }
}

fn optional_chain(query: &SignedQuery) -> Result<Option<Network>, ApiError> {
    query.scalar("chain")?.map(parse_chain).transpose()
}

fn parse_chain(text: &str) -> Result<Network, ApiError> {
    tokens::parse_chain(text).ok_or_else(|| {
        invalid(
            "chain",
            "unknown chain: use ETH, BASE, ARBITRUM, BSC, POLYGON or SOL (or an EVM chain id, eip155:<id>, solana)",
        )
    })
}

fn chain_and_address(query: &SignedQuery) -> Result<(Network, &str), ApiError> {
    let chain = parse_chain(required(query, "chain")?)?;
    let address = required(query, "address")?;
    // Lookups ignore EVM letter case, so a wrong checksum is not an error here.
    let checked = if chain.evm_chain_id().is_some() {
        address.to_ascii_lowercase()
    } else {
        address.to_owned()
    };
    chain
        .validate_address(&checked)
        .map_err(|e| ApiError::new(ErrorCode::AddressInvalid, e.to_string()))?;
    Ok((chain, address))
}

fn popular_query(query: &SignedQuery) -> Result<Option<Network>, ApiError> {
    only_parameters(query, &["chain"])?;
    optional_chain(query)
}

fn search_query(query: &SignedQuery) -> Result<(&str, Option<Network>, usize), ApiError> {
    only_parameters(query, &["q", "chain", "limit"])?;
    let q = required(query, "q")?;
    if q.trim().is_empty() || q.chars().count() > MAX_QUERY_TEXT {
        return Err(invalid("q", "must be 1 to 64 characters"));
    }
    let chain = optional_chain(query)?;
    let limit = match query.scalar("limit")? {
        None => DEFAULT_SEARCH_RESULTS,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_SEARCH_RESULTS).contains(n))
            .ok_or_else(|| invalid("limit", "must be an integer from 1 to 100"))?,
    };
    Ok((q, chain, limit))
}

/// `chain` and `address` (token lookups and logos).
fn token_query(query: &SignedQuery) -> Result<(Network, &str), ApiError> {
    only_parameters(query, &["chain", "address"])?;
    chain_and_address(query)
}

pub(crate) fn check_popular_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    popular_query(query).map(drop)
}

pub(crate) fn check_search_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    search_query(query).map(drop)
}

pub(crate) fn check_token_query(_: &AppState, query: &SignedQuery) -> Result<(), ApiError> {
    token_query(query).map(drop)
}
