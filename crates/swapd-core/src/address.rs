//! The networks swapd can send to and receive from, and the validation of their addresses and
//! destination tags. Validation only checks form and checksum: whether an address exists or is
//! controlled by anyone cannot be known offline.

use std::fmt;
use std::str::FromStr;

/// A blockchain network, as named in the catalog (`network` of a currency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Network {
    Bitcoin,
    Litecoin,
    Ethereum,
    BnbChain,
    Polygon,
    Base,
    Arbitrum,
    Solana,
    Tron,
    Xrp,
}

/// CAIP-2 id of Solana mainnet (its genesis hash, truncated).
pub const SOLANA_MAINNET_CAIP2: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";

/// How a network's addresses are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// Base58Check P2PKH/P2SH with these version bytes, or segwit with this human-readable part.
    Utxo {
        p2pkh: u8,
        p2sh: &'static [u8],
        hrp: &'static str,
    },
    /// `0x` + 40 hex digits, EIP-55 checksummed when mixed case.
    Evm,
    /// Base58 of a 32-byte ed25519 public key.
    Solana,
    /// Base58Check, 21 bytes starting with 0x41 (`T...`).
    Tron,
    /// Base58Check in the Ripple alphabet, version 0x00 (`r...`).
    Xrp,
}

/// An address that is well formed for its network (checksum included): made only by
/// [`Network::parse_address`], so whatever holds one need not check it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    network: Network,
    text: String,
}

impl Address {
    pub fn network(&self) -> Network {
        self.network
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn into_string(self) -> String {
        self.text
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("`{address}` is not a valid {network} address")]
    Invalid { network: Network, address: String },
    #[error(
        "`{address}` is a valid {network} address except for its EIP-55 checksum (check the letter case, or send it all lowercase)"
    )]
    Checksum { network: Network, address: String },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    #[error("{network} does not use a {kind}; leave `tag` out")]
    NotUsed {
        network: Network,
        kind: &'static str,
    },
    #[error("`{tag}` is not a valid {kind}: {rule}")]
    Invalid {
        tag: String,
        kind: &'static str,
        rule: &'static str,
    },
}

impl Network {
    pub const ALL: [Network; 10] = [
        Network::Bitcoin,
        Network::Litecoin,
        Network::Ethereum,
        Network::BnbChain,
        Network::Polygon,
        Network::Base,
        Network::Arbitrum,
        Network::Solana,
        Network::Tron,
        Network::Xrp,
    ];

    /// The catalog's name for the network.
    pub fn code(self) -> &'static str {
        match self {
            Network::Bitcoin => "BTC",
            Network::Litecoin => "LTC",
            Network::Ethereum => "ETH",
            Network::BnbChain => "BSC",
            Network::Polygon => "POLYGON",
            Network::Base => "BASE",
            Network::Arbitrum => "ARBITRUM",
            Network::Solana => "SOL",
            Network::Tron => "TRX",
            Network::Xrp => "XRP",
        }
    }

    /// The CAIP-2 namespace: `bip122`, `eip155`, `solana`, `tron` or `xrpl`.
    pub fn chain_namespace(self) -> &'static str {
        match self.format() {
            Format::Utxo { .. } => "bip122",
            Format::Evm => "eip155",
            Format::Solana => "solana",
            Format::Tron => "tron",
            Format::Xrp => "xrpl",
        }
    }

    /// The EIP-155 chain id of EVM networks.
    pub fn evm_chain_id(self) -> Option<u64> {
        match self {
            Network::Ethereum => Some(1),
            Network::BnbChain => Some(56),
            Network::Polygon => Some(137),
            Network::Base => Some(8453),
            Network::Arbitrum => Some(42161),
            _ => None,
        }
    }

    /// The CAIP-2 id of an EVM chain or Solana (`eip155:8453`,
    /// `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp`); `None` for other networks.
    pub fn caip2(self) -> Option<String> {
        match (self.evm_chain_id(), self) {
            (Some(id), _) => Some(format!("eip155:{id}")),
            (None, Network::Solana) => Some(SOLANA_MAINNET_CAIP2.to_owned()),
            _ => None,
        }
    }

    /// What the network calls a destination tag, when it has one (`"destination tag"` on XRP).
    pub fn tag_name(self) -> Option<&'static str> {
        match self {
            Network::Xrp => Some("destination tag"),
            _ => None,
        }
    }

    fn format(self) -> Format {
        match self {
            Network::Bitcoin => Format::Utxo {
                p2pkh: 0x00,
                p2sh: &[0x05],
                hrp: "bc",
            },
            // Litecoin P2SH addresses exist with the new (0x32, `M...`) and legacy (0x05) version.
            Network::Litecoin => Format::Utxo {
                p2pkh: 0x30,
                p2sh: &[0x32, 0x05],
                hrp: "ltc",
            },
            Network::Ethereum
            | Network::BnbChain
            | Network::Polygon
            | Network::Base
            | Network::Arbitrum => Format::Evm,
            Network::Solana => Format::Solana,
            Network::Tron => Format::Tron,
            Network::Xrp => Format::Xrp,
        }
    }

    /// `address` as an [`Address`] of this network, when it is well formed for it.
    pub fn parse_address(self, address: &str) -> Result<Address, AddressError> {
        self.validate_address(address)?;
        Ok(Address {
            network: self,
            text: address.to_owned(),
        })
    }

    /// Checks that `address` is well formed for this network, checksum included.
    pub fn validate_address(self, address: &str) -> Result<(), AddressError> {
        let invalid = || AddressError::Invalid {
            network: self,
            address: address.to_owned(),
        };
        if address.is_empty() || address.len() > 128 || address.trim() != address {
            return Err(invalid());
        }
        let valid =
            match self.format() {
                Format::Utxo { p2pkh, p2sh, hrp } => is_utxo_address(address, p2pkh, p2sh, hrp),
                Format::Evm => return validate_evm(self, address),
                Format::Solana => bs58::decode(address)
                    .into_vec()
                    .is_ok_and(|bytes| bytes.len() == 32),
                Format::Tron => base58check(address, bs58::Alphabet::BITCOIN, 0x41)
                    .is_some_and(|b| b.len() == 21),
                Format::Xrp => base58check(address, bs58::Alphabet::RIPPLE, 0x00)
                    .is_some_and(|b| b.len() == 21),
            };
        if valid { Ok(()) } else { Err(invalid()) }
    }

    /// Checks a destination tag's form. `None` is always well formed; whether a tag is
    /// *required* is a property of the currency in the catalog.
    pub fn validate_tag(self, tag: Option<&str>) -> Result<(), TagError> {
        let Some(tag) = tag else { return Ok(()) };
        match self {
            Network::Xrp => {
                let ok = !tag.is_empty()
                    && tag.len() <= 10
                    && tag.bytes().all(|b| b.is_ascii_digit())
                    && tag.parse::<u32>().is_ok();
                if ok {
                    Ok(())
                } else {
                    Err(TagError::Invalid {
                        tag: tag.to_owned(),
                        kind: "destination tag",
                        rule: "digits only, 0 to 4294967295",
                    })
                }
            }
            other => Err(TagError::NotUsed {
                network: other,
                kind: "destination tag or memo",
            }),
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.code())
    }
}

impl FromStr for Network {
    type Err = String;

    fn from_str(code: &str) -> Result<Self, Self::Err> {
        Network::ALL
            .into_iter()
            .find(|n| n.code().eq_ignore_ascii_case(code))
            .ok_or_else(|| format!("unknown network `{code}`"))
    }
}

/// Decodes Base58Check with the given alphabet and leading version byte.
fn base58check(address: &str, alphabet: &'static bs58::Alphabet, version: u8) -> Option<Vec<u8>> {
    bs58::decode(address)
        .with_alphabet(alphabet)
        .with_check(Some(version))
        .into_vec()
        .ok()
}

fn is_utxo_address(address: &str, p2pkh: u8, p2sh: &[u8], hrp: &str) -> bool {
    let legacy = |version: u8| {
        base58check(address, bs58::Alphabet::BITCOIN, version).is_some_and(|b| b.len() == 21)
    };
    if legacy(p2pkh) || p2sh.iter().any(|&v| legacy(v)) {
        return true;
    }
    // Segwit v0 (bech32) and v1+ (bech32m), with witness version and program length checked.
    bech32::segwit::decode(address)
        .is_ok_and(|(decoded_hrp, _, _)| decoded_hrp.as_str().eq_ignore_ascii_case(hrp))
}

fn validate_evm(network: Network, address: &str) -> Result<(), AddressError> {
    let Some(hex) = address.strip_prefix("0x") else {
        return Err(AddressError::Invalid {
            network,
            address: address.to_owned(),
        });
    };
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AddressError::Invalid {
            network,
            address: address.to_owned(),
        });
    }
    let mixed_case =
        hex.bytes().any(|b| b.is_ascii_lowercase()) && hex.bytes().any(|b| b.is_ascii_uppercase());
    if mixed_case && alloy_primitives::Address::parse_checksummed(address, None).is_err() {
        return Err(AddressError::Checksum {
            network,
            address: address.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(network: Network, address: &str) {
        assert_eq!(
            network.validate_address(address),
            Ok(()),
            "{network} {address}"
        );
    }

    fn bad(network: Network, address: &str) {
        assert!(
            network.validate_address(address).is_err(),
            "{network} {address} should be refused"
        );
    }

    #[test]
    fn bitcoin_legacy_and_segwit() {
        ok(Network::Bitcoin, "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2");
        ok(Network::Bitcoin, "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy");
        // BIP-173 / BIP-350 valid vectors (v0 bech32, upper case; v1 bech32m).
        ok(
            Network::Bitcoin,
            "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4",
        );
        ok(
            Network::Bitcoin,
            "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
        );
        bad(Network::Bitcoin, "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3"); // checksum
        bad(
            Network::Bitcoin,
            "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5",
        ); // checksum
        bad(
            Network::Bitcoin,
            "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx",
        ); // testnet
        // BIP-350 invalid: v1 program with a bech32 (not bech32m) checksum.
        bad(
            Network::Bitcoin,
            "bc1p38j9r5y49hruaue7wxjce0updqjuyyx0kh56v8s25huc6995vvpql3jow4",
        );
        bad(Network::Bitcoin, "LVg2kJoFNg45Nbpy53h7Fe1wKyeXVRhMH9"); // Litecoin
        bad(Network::Bitcoin, " 1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2");
    }

    #[test]
    fn litecoin_versions_and_hrp() {
        let payload = [7u8; 20];
        let encode = |version: u8| {
            bs58::encode(payload)
                .with_check_version(version)
                .into_string()
        };
        ok(Network::Litecoin, &encode(0x30));
        ok(Network::Litecoin, &encode(0x32));
        ok(Network::Litecoin, &encode(0x05));
        bad(Network::Litecoin, &encode(0x00));
        let hrp = bech32::Hrp::parse("ltc").unwrap();
        ok(
            Network::Litecoin,
            &bech32::segwit::encode_v0(hrp, &payload).unwrap(),
        );
        bad(
            Network::Litecoin,
            "BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4",
        );
    }

    #[test]
    fn evm_addresses_follow_eip55() {
        // The EIP-55 test vectors.
        for address in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            for network in [
                Network::Ethereum,
                Network::Base,
                Network::BnbChain,
                Network::Polygon,
                Network::Arbitrum,
            ] {
                ok(network, address);
            }
            ok(Network::Ethereum, &address.to_lowercase());
            ok(
                Network::Ethereum,
                &format!("0x{}", address[2..].to_uppercase()),
            );
        }
        assert!(matches!(
            Network::Ethereum.validate_address("0x5aaeb6053F3E94C9b9A09f33669435E7Ef1BeAed"),
            Err(AddressError::Checksum { .. })
        ));
        for address in [
            "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeA",
            "0xZZAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        ] {
            bad(Network::Ethereum, address);
        }
    }

    #[test]
    fn solana_tron_and_xrp() {
        ok(
            Network::Solana,
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        ); // USDC mint
        ok(
            Network::Solana,
            "So11111111111111111111111111111111111111112",
        ); // wrapped SOL mint
        bad(
            Network::Solana,
            "So1111111111111111111111111111111111111111",
        ); // 31 bytes
        bad(
            Network::Solana,
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        );
        bad(
            Network::Solana,
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1O",
        ); // O is not base58

        ok(Network::Tron, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"); // USDT (TRC-20) contract
        bad(Network::Tron, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u");
        bad(Network::Tron, "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2");

        ok(Network::Xrp, "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh"); // the genesis account
        bad(Network::Xrp, "rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTj");
        bad(Network::Xrp, "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2");
    }

    #[test]
    fn destination_tags() {
        assert_eq!(Network::Xrp.validate_tag(None), Ok(()));
        assert_eq!(Network::Xrp.validate_tag(Some("0")), Ok(()));
        assert_eq!(Network::Xrp.validate_tag(Some("4294967295")), Ok(()));
        for bad in ["", "-1", "4294967296", "12a", " 1", "00000000001"] {
            assert!(Network::Xrp.validate_tag(Some(bad)).is_err(), "{bad:?}");
        }
        assert!(matches!(
            Network::Ethereum.validate_tag(Some("1")),
            Err(TagError::NotUsed { .. })
        ));
        assert_eq!(Network::Xrp.tag_name(), Some("destination tag"));
    }

    #[test]
    fn networks_have_codes_namespaces_and_chain_ids() {
        for network in Network::ALL {
            assert_eq!(network.code().parse::<Network>().unwrap(), network);
            assert_eq!(
                network.evm_chain_id().is_some(),
                network.chain_namespace() == "eip155"
            );
        }
        assert_eq!(Network::Base.evm_chain_id(), Some(8453));
        assert_eq!(Network::Bitcoin.chain_namespace(), "bip122");
    }
}
