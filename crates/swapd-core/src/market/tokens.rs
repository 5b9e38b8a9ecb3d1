//! The shipped token list: well-known onchain assets on the chains DEX and bridge routes use,
//! with their real public contract addresses and mints.

use crate::address::Network;

/// EIP-7528's address for a chain's native asset.
pub const EVM_NATIVE: &str = "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenDef {
    pub chain: Network,
    pub symbol: &'static str,
    pub name: &'static str,
    /// Contract (EVM), mint (Solana), or [`EVM_NATIVE`] for an EVM chain's native asset.
    pub address: &'static str,
    pub decimals: u8,
    /// Listed by `tokens/popular`.
    pub popular: bool,
    /// The catalog currency this token is, when it is one.
    pub currency: Option<&'static str>,
}

impl TokenDef {
    pub fn is_native(&self) -> bool {
        self.address == EVM_NATIVE || self.address == SOL_MINT
    }
}

/// The wrapped-SOL mint, which Solana programs use for native SOL.
pub const SOL_MINT: &str = "So11111111111111111111111111111111111111112";

const fn t(
    chain: Network,
    symbol: &'static str,
    name: &'static str,
    address: &'static str,
    decimals: u8,
    popular: bool,
    currency: Option<&'static str>,
) -> TokenDef {
    TokenDef {
        chain,
        symbol,
        name,
        address,
        decimals,
        popular,
        currency,
    }
}

use Network::{Arbitrum, Base, BnbChain, Ethereum, Polygon, Solana};

pub static TOKENS: &[TokenDef] = &[
    t(Ethereum, "ETH", "Ether", EVM_NATIVE, 18, true, Some("ETH")),
    t(
        Ethereum,
        "USDC",
        "USD Coin",
        "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        6,
        true,
        Some("USDCETH"),
    ),
    t(
        Ethereum,
        "USDT",
        "Tether USD",
        "0xdAC17F958D2ee523a2206206994597C13D831ec7",
        6,
        true,
        Some("USDTETH"),
    ),
    t(
        Ethereum,
        "DAI",
        "Dai Stablecoin",
        "0x6B175474E89094C44Da98b954EedeAC495271d0F",
        18,
        true,
        Some("DAIETH"),
    ),
    t(
        Ethereum,
        "WETH",
        "Wrapped Ether",
        "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2",
        18,
        true,
        None,
    ),
    t(
        Ethereum,
        "WBTC",
        "Wrapped BTC",
        "0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599",
        8,
        true,
        None,
    ),
    t(
        Ethereum,
        "LINK",
        "ChainLink Token",
        "0x514910771AF9Ca656af840dff83E8264EcF986CA",
        18,
        false,
        None,
    ),
    t(
        Ethereum,
        "UNI",
        "Uniswap",
        "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984",
        18,
        false,
        None,
    ),
    t(Base, "ETH", "Ether", EVM_NATIVE, 18, true, Some("ETHBASE")),
    t(
        Base,
        "USDC",
        "USD Coin",
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        6,
        true,
        Some("USDCBASE"),
    ),
    t(
        Base,
        "WETH",
        "Wrapped Ether",
        "0x4200000000000000000000000000000000000006",
        18,
        true,
        None,
    ),
    t(
        Base,
        "cbBTC",
        "Coinbase Wrapped BTC",
        "0xcbB7C0000aB88B473b1f5aFd9ef808440eed33Bf",
        8,
        true,
        None,
    ),
    t(
        Base,
        "DAI",
        "Dai Stablecoin",
        "0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb",
        18,
        false,
        None,
    ),
    t(
        Arbitrum,
        "ETH",
        "Ether",
        EVM_NATIVE,
        18,
        true,
        Some("ETHARB"),
    ),
    t(
        Arbitrum,
        "USDC",
        "USD Coin",
        "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
        6,
        true,
        Some("USDCARB"),
    ),
    t(
        Arbitrum,
        "USDT",
        "Tether USD",
        "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9",
        6,
        true,
        Some("USDTARB"),
    ),
    t(
        Arbitrum,
        "WETH",
        "Wrapped Ether",
        "0x82aF49447D8a07e3bd95BD0d56f35241523fBab1",
        18,
        false,
        None,
    ),
    t(
        Arbitrum,
        "ARB",
        "Arbitrum",
        "0x912CE59144191C1204E64559FE8253a0e49E6548",
        18,
        true,
        Some("ARBARB"),
    ),
    t(BnbChain, "BNB", "BNB", EVM_NATIVE, 18, true, Some("BNB")),
    t(
        BnbChain,
        "USDT",
        "Tether USD",
        "0x55d398326f99059fF775485246999027B3197955",
        18,
        true,
        Some("USDTBSC"),
    ),
    t(
        BnbChain,
        "USDC",
        "USD Coin",
        "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d",
        18,
        true,
        Some("USDCBSC"),
    ),
    t(
        BnbChain,
        "WBNB",
        "Wrapped BNB",
        "0xbb4CdB9CBd36B01bD1cBaEBF2De08d9173bc095c",
        18,
        false,
        None,
    ),
    t(
        BnbChain,
        "ETH",
        "Binance-Peg Ethereum",
        "0x2170Ed0880ac9A755fd29B2688956BD959F933F8",
        18,
        false,
        None,
    ),
    t(
        Polygon,
        "POL",
        "Polygon Ecosystem Token",
        EVM_NATIVE,
        18,
        true,
        Some("POL"),
    ),
    t(
        Polygon,
        "USDC",
        "USD Coin",
        "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
        6,
        true,
        Some("USDCPOL"),
    ),
    t(
        Polygon,
        "USDT",
        "Tether USD",
        "0xc2132D05D31c914a87C6611C10748AEb04B58e8F",
        6,
        true,
        Some("USDTPOL"),
    ),
    t(
        Polygon,
        "WETH",
        "Wrapped Ether",
        "0x7ceB23fD6bC0adD59E62ac25578270cFf1b9f619",
        18,
        false,
        None,
    ),
    t(
        Polygon,
        "WPOL",
        "Wrapped POL",
        "0x0d500B1d8E8eF31E21C99d1Db9A6444d3ADf1270",
        18,
        false,
        None,
    ),
    t(Solana, "SOL", "Solana", SOL_MINT, 9, true, Some("SOL")),
    t(
        Solana,
        "USDC",
        "USD Coin",
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        6,
        true,
        Some("USDCSOL"),
    ),
    t(
        Solana,
        "USDT",
        "Tether USD",
        "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB",
        6,
        true,
        Some("USDTSOL"),
    ),
    t(
        Solana,
        "JUP",
        "Jupiter",
        "JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN",
        6,
        true,
        Some("JUPSOL"),
    ),
    t(
        Solana,
        "BONK",
        "Bonk",
        "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263",
        5,
        false,
        None,
    ),
];

/// The chains the token endpoints serve.
pub const TOKEN_CHAINS: [Network; 6] = [Ethereum, Base, Arbitrum, BnbChain, Polygon, Solana];

/// Every spelling of a token chain that [`parse_chain`] reads (besides letter case and
/// `solana:<reference>`): for the API documents.
pub fn chain_spellings() -> Vec<String> {
    let mut spellings = Vec::new();
    for chain in TOKEN_CHAINS {
        spellings.push(chain.code().to_owned());
        if let Some(id) = chain.evm_chain_id() {
            spellings.extend([id.to_string(), format!("eip155:{id}")]);
        }
    }
    spellings.push("solana".into());
    spellings
}

/// Reads a `chain` parameter: a network code (`BASE`), an EVM chain id (`8453`), a CAIP-2 id
/// (`eip155:8453`) or `solana`.
pub fn parse_chain(text: &str) -> Option<Network> {
    let text = text.trim();
    let by_id = |id: &str| {
        id.parse::<u64>().ok().and_then(|id| {
            TOKEN_CHAINS
                .into_iter()
                .find(|n| n.evm_chain_id() == Some(id))
        })
    };
    if let Some(id) = text.strip_prefix("eip155:") {
        return by_id(id);
    }
    if text.eq_ignore_ascii_case("solana") || text.starts_with("solana:") {
        return Some(Solana);
    }
    by_id(text).or_else(|| {
        TOKEN_CHAINS
            .into_iter()
            .find(|n| n.code().eq_ignore_ascii_case(text))
    })
}

/// `tokens/popular`, optionally on one chain.
pub fn popular(chain: Option<Network>) -> impl Iterator<Item = &'static TokenDef> {
    TOKENS
        .iter()
        .filter(move |t| t.popular && chain.is_none_or(|c| t.chain == c))
}

/// `tokens/search`: case-insensitive match of `query` in the symbol or name, exact symbol
/// matches first, then symbol prefixes, then the rest; at most `limit` results.
pub fn search(query: &str, chain: Option<Network>, limit: usize) -> Vec<&'static TokenDef> {
    let needle = query.trim().to_lowercase();
    let mut hits: Vec<(u8, &TokenDef)> = TOKENS
        .iter()
        .filter(|t| chain.is_none_or(|c| t.chain == c))
        .filter_map(|t| {
            let symbol = t.symbol.to_lowercase();
            let rank = if symbol == needle {
                0
            } else if symbol.starts_with(&needle) {
                1
            } else if symbol.contains(&needle) || t.name.to_lowercase().contains(&needle) {
                2
            } else {
                return None;
            };
            Some((rank, t))
        })
        .collect();
    hits.sort_by_key(|(rank, _)| *rank);
    hits.into_iter().take(limit).map(|(_, t)| t).collect()
}

/// `tokens/by-address`: EVM addresses compare without regard to case (checksums are letter
/// case), Solana mints exactly (base58 is case-sensitive).
pub fn by_address(chain: Network, address: &str) -> Option<&'static TokenDef> {
    TOKENS.iter().find(|t| {
        t.chain == chain
            && if chain.evm_chain_id().is_some() {
                t.address.eq_ignore_ascii_case(address)
            } else {
                t.address == address
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_chain_spelling_is_read() {
        for spelling in chain_spellings() {
            assert!(parse_chain(&spelling).is_some(), "{spelling}");
        }
    }
    use crate::market::currencies::currency;

    #[test]
    fn every_address_is_valid_for_its_chain_and_currencies_agree() {
        for token in TOKENS {
            token
                .chain
                .validate_address(token.address)
                .unwrap_or_else(|e| panic!("{} on {}: {e}", token.symbol, token.chain));
            if let Some(code) = token.currency {
                let def = currency(code).unwrap_or_else(|| panic!("unknown currency {code}"));
                assert_eq!(def.network, token.chain, "{code}");
                assert_eq!(def.decimals, token.decimals, "{code}");
                if let Some(contract) = def.contract {
                    assert_eq!(contract, token.address, "{code}");
                }
            }
        }
    }

    #[test]
    fn chains_parse_in_every_spelling() {
        assert_eq!(parse_chain("BASE"), Some(Base));
        assert_eq!(parse_chain("base"), Some(Base));
        assert_eq!(parse_chain("8453"), Some(Base));
        assert_eq!(parse_chain("eip155:42161"), Some(Arbitrum));
        assert_eq!(parse_chain("solana"), Some(Solana));
        assert_eq!(parse_chain("BTC"), None);
        assert_eq!(parse_chain("eip155:5"), None);
    }

    #[test]
    fn lookups() {
        let usdc = by_address(Ethereum, "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48").unwrap();
        assert_eq!(usdc.symbol, "USDC");
        assert!(by_address(Solana, "epjfwdd5aufqssqem2qn1xzybapc8g4wggkzwytdt1v").is_none());
        assert!(by_address(Solana, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v").is_some());
        assert_eq!(search("usd", Some(Base), 10)[0].symbol, "USDC");
        assert_eq!(search("wrapped", None, 50).len(), 8);
        assert!(popular(Some(Solana)).all(|t| t.chain == Solana));
    }
}
