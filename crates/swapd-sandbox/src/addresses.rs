//! Sandbox deposit addresses: well-formed addresses of each network derived from a hash, so the
//! same exchange reference always gets the same address (and tag), and no two references share
//! one. They pass every network's address checks; nobody holds their keys.

use sha2::{Digest, Sha256};
use swapd_core::address::Network;

/// The deposit address (and destination tag, on networks that use one) for `reference`.
pub fn deposit_address(
    provider: &str,
    network: Network,
    reference: &str,
) -> (String, Option<String>) {
    let digest = Sha256::digest(format!("sandbox-deposit:{provider}:{reference}"));
    let hash20: [u8; 20] = digest[..20].try_into().expect("20 bytes");
    let address = match network {
        Network::Bitcoin => segwit("bc", &hash20),
        Network::Litecoin => segwit("ltc", &hash20),
        Network::Ethereum
        | Network::BnbChain
        | Network::Polygon
        | Network::Base
        | Network::Arbitrum => alloy_primitives::Address::from(hash20).to_checksum(None),
        Network::Solana => bs58::encode(&digest[..]).into_string(),
        Network::Tron => bs58::encode([&[0x41], &hash20[..]].concat())
            .with_check()
            .into_string(),
        Network::Xrp => bs58::encode([&[0x00], &hash20[..]].concat())
            .with_alphabet(bs58::Alphabet::RIPPLE)
            .with_check()
            .into_string(),
    };
    let tag = network.tag_name().map(|_| {
        let value = u32::from_be_bytes(digest[20..24].try_into().expect("4 bytes"));
        // Keep tags readable and non-zero.
        (value % 1_000_000_000 + 1).to_string()
    });
    (address, tag)
}

fn segwit(hrp: &str, program: &[u8; 20]) -> String {
    let hrp = bech32::Hrp::parse(hrp).expect("valid hrp");
    bech32::segwit::encode_v0(hrp, program).expect("20-byte v0 program")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_valid_deterministic_and_distinct() {
        for network in Network::ALL {
            let (a, tag) = deposit_address("atlas", network, "ord_1");
            network
                .validate_address(&a)
                .unwrap_or_else(|e| panic!("{network}: {e}"));
            network.validate_tag(tag.as_deref()).unwrap();
            assert_eq!(tag.is_some(), network.tag_name().is_some());
            assert_eq!(deposit_address("atlas", network, "ord_1").0, a);
            assert_ne!(deposit_address("atlas", network, "ord_2").0, a);
            assert_ne!(deposit_address("borealis", network, "ord_1").0, a);
        }
    }
}
