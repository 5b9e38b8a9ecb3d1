//! Wallet payment URIs for deposit QR codes: BIP-21 (Bitcoin, Litecoin), EIP-681 (EVM native
//! assets and ERC-20 transfers), Solana Pay, and the `tron:` and `xrpl:` forms wallets read,
//! with the amount and the destination tag where they apply.

use crate::address::Network;
use crate::amount::{Amount, Rounding};
use crate::market::currencies::CurrencyDef;

/// The URI a wallet opens to pay `amount` (if given) of `currency` to `address`/`tag`.
pub fn wallet_uri(
    currency: &CurrencyDef,
    address: &str,
    tag: Option<&str>,
    amount: Option<Amount>,
) -> String {
    let display = amount.map(|a| a.to_string());
    let base_units = amount.map(|a| {
        a.rescale(currency.decimals, Rounding::Up)
            .units()
            .to_string()
    });
    let mut query: Vec<(&str, String)> = Vec::new();
    let head = match currency.network {
        Network::Bitcoin | Network::Litecoin => {
            let scheme = if currency.network == Network::Bitcoin {
                "bitcoin"
            } else {
                "litecoin"
            };
            query.extend(display.map(|a| ("amount", a)));
            format!("{scheme}:{address}")
        }
        Network::Ethereum
        | Network::BnbChain
        | Network::Polygon
        | Network::Base
        | Network::Arbitrum => {
            let chain_id = currency
                .network
                .evm_chain_id()
                .expect("EVM networks have chain ids");
            match currency.contract {
                None => {
                    query.extend(base_units.map(|v| ("value", v)));
                    format!("ethereum:{address}@{chain_id}")
                }
                Some(token) => {
                    query.push(("address", address.to_owned()));
                    query.extend(base_units.map(|v| ("uint256", v)));
                    format!("ethereum:{token}@{chain_id}/transfer")
                }
            }
        }
        Network::Solana => {
            query.extend(display.map(|a| ("amount", a)));
            query.extend(currency.contract.map(|mint| ("spl-token", mint.to_owned())));
            format!("solana:{address}")
        }
        Network::Tron => {
            query.extend(display.map(|a| ("amount", a)));
            query.extend(currency.contract.map(|token| ("token", token.to_owned())));
            format!("tron:{address}")
        }
        Network::Xrp => {
            query.extend(tag.map(|t| ("dt", t.to_owned())));
            query.extend(display.map(|a| ("amount", a)));
            format!("xrpl:{address}")
        }
    };
    if query.is_empty() {
        return head;
    }
    let query: Vec<String> = query.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{head}?{}", query.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::currencies::currency;

    fn uri(code: &str, address: &str, tag: Option<&str>, amount: Option<&str>) -> String {
        let def = currency(code).unwrap();
        wallet_uri(
            def,
            address,
            tag,
            amount.map(|a| Amount::parse(a, def.precision).unwrap()),
        )
    }

    #[test]
    fn every_network_gets_its_wallet_uri() {
        assert_eq!(
            uri("BTC", "bc1qx", None, Some("0.05")),
            "bitcoin:bc1qx?amount=0.05"
        );
        assert_eq!(uri("BTC", "bc1qx", None, None), "bitcoin:bc1qx");
        assert_eq!(
            uri("LTC", "ltc1qx", None, Some("2")),
            "litecoin:ltc1qx?amount=2"
        );
        assert_eq!(
            uri("ETH", "0xAb", None, Some("1.5")),
            "ethereum:0xAb@1?value=1500000000000000000"
        );
        assert_eq!(uri("ETHBASE", "0xAb", None, None), "ethereum:0xAb@8453");
        assert_eq!(
            uri("USDCBASE", "0xAb", None, Some("25")),
            "ethereum:0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913@8453/transfer?address=0xAb&uint256=25000000"
        );
        assert_eq!(
            uri("USDCSOL", "Recip", None, Some("10.5")),
            "solana:Recip?amount=10.5&spl-token=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
        );
        assert_eq!(
            uri("SOL", "Recip", None, Some("1")),
            "solana:Recip?amount=1"
        );
        assert_eq!(
            uri("USDTTRC", "TAddr", None, Some("100")),
            "tron:TAddr?amount=100&token=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
        );
        assert_eq!(
            uri("XRP", "rAddr", Some("42"), Some("20")),
            "xrpl:rAddr?dt=42&amount=20"
        );
        assert_eq!(uri("XRP", "rAddr", Some("42"), None), "xrpl:rAddr?dt=42");
    }
}
