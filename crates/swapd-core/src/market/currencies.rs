//! The currency registry: every asset+network swapd knows, under one normalized code. Provider
//! adapters map their own codes onto these; the catalog says which of them are offered now.

use crate::address::Network;

/// One asset on one network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CurrencyDef {
    /// Unique per asset+network, e.g. `USDTTRC`, `USDCSOL`.
    pub code: &'static str,
    /// The asset's ticker, shared across networks (`USDT`).
    pub symbol: &'static str,
    pub name: &'static str,
    pub network: Network,
    /// Base-unit decimals on its chain.
    pub decimals: u8,
    /// Fraction digits accepted and shown in amounts (≤ `decimals`).
    pub precision: u8,
    /// Token contract or mint; `None` for the network's native asset.
    pub contract: Option<&'static str>,
    /// Symbol of the price-feed asset this currency is valued as.
    pub price_symbol: &'static str,
}

impl CurrencyDef {
    /// Whether a payout to this currency needs a destination tag or memo.
    pub fn tag_required(&self) -> bool {
        self.network.tag_name().is_some()
    }

    /// Whether the currency can be moved by a wallet signature on an EVM chain or Solana, so
    /// DEX and bridge routes can use it.
    pub fn onchain_namespace(&self) -> Option<&'static str> {
        match self.network.chain_namespace() {
            ns @ ("eip155" | "solana") => Some(ns),
            _ => None,
        }
    }
}

const fn native(
    code: &'static str,
    name: &'static str,
    network: Network,
    decimals: u8,
    precision: u8,
) -> CurrencyDef {
    CurrencyDef {
        code,
        symbol: code,
        name,
        network,
        decimals,
        precision,
        contract: None,
        price_symbol: code,
    }
}

const fn token(
    code: &'static str,
    symbol: &'static str,
    name: &'static str,
    network: Network,
    decimals: u8,
    contract: &'static str,
) -> CurrencyDef {
    CurrencyDef {
        code,
        symbol,
        name,
        network,
        decimals,
        precision: if decimals < 6 { decimals } else { 6 },
        contract: Some(contract),
        price_symbol: symbol,
    }
}

/// Every currency swapd knows. Contract addresses and mints are the real public ones.
pub static CURRENCIES: &[CurrencyDef] = &[
    native("BTC", "Bitcoin", Network::Bitcoin, 8, 8),
    native("LTC", "Litecoin", Network::Litecoin, 8, 8),
    native("ETH", "Ethereum", Network::Ethereum, 18, 8),
    CurrencyDef {
        code: "ETHBASE",
        symbol: "ETH",
        name: "Ethereum (Base)",
        price_symbol: "ETH",
        ..native("ETH", "", Network::Base, 18, 8)
    },
    CurrencyDef {
        code: "ETHARB",
        symbol: "ETH",
        name: "Ethereum (Arbitrum)",
        price_symbol: "ETH",
        ..native("ETH", "", Network::Arbitrum, 18, 8)
    },
    native("BNB", "BNB", Network::BnbChain, 18, 8),
    native("POL", "Polygon", Network::Polygon, 18, 6),
    native("SOL", "Solana", Network::Solana, 9, 6),
    native("TRX", "TRON", Network::Tron, 6, 6),
    native("XRP", "XRP", Network::Xrp, 6, 6),
    token(
        "USDTETH",
        "USDT",
        "Tether USD (ERC-20)",
        Network::Ethereum,
        6,
        "0xdAC17F958D2ee523a2206206994597C13D831ec7",
    ),
    token(
        "USDTTRC",
        "USDT",
        "Tether USD (TRC-20)",
        Network::Tron,
        6,
        "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    ),
    token(
        "USDTBSC",
        "USDT",
        "Tether USD (BEP-20)",
        Network::BnbChain,
        18,
        "0x55d398326f99059fF775485246999027B3197955",
    ),
    token(
        "USDTSOL",
        "USDT",
        "Tether USD (Solana)",
        Network::Solana,
        6,
        "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB",
    ),
    token(
        "USDTPOL",
        "USDT",
        "Tether USD (Polygon)",
        Network::Polygon,
        6,
        "0xc2132D05D31c914a87C6611C10748AEb04B58e8F",
    ),
    token(
        "USDTARB",
        "USDT",
        "Tether USD (Arbitrum)",
        Network::Arbitrum,
        6,
        "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9",
    ),
    token(
        "USDCETH",
        "USDC",
        "USD Coin (ERC-20)",
        Network::Ethereum,
        6,
        "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
    ),
    token(
        "USDCSOL",
        "USDC",
        "USD Coin (Solana)",
        Network::Solana,
        6,
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    ),
    token(
        "USDCBASE",
        "USDC",
        "USD Coin (Base)",
        Network::Base,
        6,
        "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    ),
    token(
        "USDCARB",
        "USDC",
        "USD Coin (Arbitrum)",
        Network::Arbitrum,
        6,
        "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
    ),
    token(
        "USDCPOL",
        "USDC",
        "USD Coin (Polygon)",
        Network::Polygon,
        6,
        "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
    ),
    token(
        "USDCBSC",
        "USDC",
        "USD Coin (BEP-20)",
        Network::BnbChain,
        18,
        "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d",
    ),
    token(
        "DAIETH",
        "DAI",
        "Dai Stablecoin (ERC-20)",
        Network::Ethereum,
        18,
        "0x6B175474E89094C44Da98b954EedeAC495271d0F",
    ),
    // Onchain-only assets: no offchain desk lists them, DEX and bridge routes do.
    token(
        "JUPSOL",
        "JUP",
        "Jupiter (Solana)",
        Network::Solana,
        6,
        "JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN",
    ),
    token(
        "ARBARB",
        "ARB",
        "Arbitrum (Arbitrum)",
        Network::Arbitrum,
        18,
        "0x912CE59144191C1204E64559FE8253a0e49E6548",
    ),
];

/// The registered currency named `code` (case-insensitive).
pub fn currency(code: &str) -> Option<&'static CurrencyDef> {
    CURRENCIES
        .iter()
        .find(|c| c.code.eq_ignore_ascii_case(code))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn codes_are_unique_and_contracts_valid_for_their_network() {
        let mut codes = HashSet::new();
        for def in CURRENCIES {
            assert!(codes.insert(def.code), "duplicate code {}", def.code);
            assert!(def.precision <= def.decimals, "{}", def.code);
            if let Some(contract) = def.contract {
                def.network
                    .validate_address(contract)
                    .unwrap_or_else(|e| panic!("{}: {e}", def.code));
            }
        }
        assert!(CURRENCIES.len() >= 20);
    }

    #[test]
    fn lookup_ignores_case_and_xrp_needs_a_tag() {
        assert_eq!(currency("usdttrc").unwrap().code, "USDTTRC");
        assert!(currency("XRP").unwrap().tag_required());
        assert!(!currency("BTC").unwrap().tag_required());
        assert_eq!(
            currency("USDCBASE").unwrap().onchain_namespace(),
            Some("eip155")
        );
        assert_eq!(currency("BTC").unwrap().onchain_namespace(), None);
        assert!(currency("NOPE").is_none());
    }
}
