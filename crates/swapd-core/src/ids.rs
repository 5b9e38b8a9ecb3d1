//! Unguessable prefixed identifiers: a prefix followed by 32 lowercase hex digits of random bits.

use rand::RngCore;
pub use swapd_types::ids::is_valid_id;

/// `prefix` + 32 lowercase hex characters (128 random bits from the OS-seeded CSPRNG).
pub fn new_id(prefix: &str) -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

/// A transaction id in the common 64-hex-digit form (256 random bits), for the sandbox chain.
pub fn new_tx_id() -> String {
    format!("{}{}", new_id(""), new_id(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_prefix_and_32_hex_digits_and_differ() {
        let a = new_id("ord_");
        let b = new_id("ord_");
        assert!(is_valid_id(&a, "ord_"), "{a}");
        assert_ne!(a, b);
        assert!(!is_valid_id(&a, "whk_"));
        assert!(!is_valid_id("ord_ABCDEF", "ord_"));
        assert!(!is_valid_id(&a.to_uppercase(), "ord_"));
    }
}
