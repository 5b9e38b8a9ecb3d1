//! Sign-In-With-X challenge nonces that carry their own expiry under swapd's MAC, so that
//! answering a challenge writes nothing (docs/x402.md): only a proof that uses one is recorded.
//! A nonce is 64 lowercase hex digits (EIP-4361 wants alphanumerics): the expiry in Unix
//! milliseconds (8 bytes), 8 random bytes, and the first 16 bytes of HMAC-SHA256 over both.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

const MAC_LEN: usize = 16;

/// Issues and checks challenge nonces with one key (derived from the master key).
#[derive(Clone)]
pub struct Challenges {
    key: [u8; 32],
}

impl Challenges {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// A fresh nonce valid until `expires_at_ms`.
    pub fn issue(&self, expires_at_ms: i64) -> String {
        let mut body = [0u8; 16];
        body[..8].copy_from_slice(&expires_at_ms.to_be_bytes());
        rand::rng().fill_bytes(&mut body[8..]);
        let mac = self.mac(&body).finalize().into_bytes();
        format!("{}{}", hex::encode(body), hex::encode(&mac[..MAC_LEN]))
    }

    /// When a nonce this key issued expires, if it did issue it and it is still valid at
    /// `now_ms`. A forged, altered or expired nonce is `None`.
    pub fn valid_until(&self, nonce: &str, now_ms: i64) -> Option<i64> {
        if nonce.len() != 64
            || !nonce
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return None;
        }
        let bytes = hex::decode(nonce).ok()?;
        let (body, tag) = bytes.split_at(16);
        self.mac(body).verify_truncated_left(tag).ok()?;
        let expires_at_ms = i64::from_be_bytes(body[..8].try_into().expect("eight bytes"));
        (expires_at_ms > now_ms).then_some(expires_at_ms)
    }

    fn mac(&self, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key");
        mac.update(b"swapd siwx challenge\n");
        mac.update(body);
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_valid_until_its_expiry_and_only_from_its_key() {
        let challenges = Challenges::new([7; 32]);
        let now = 1_700_000_000_000;
        let nonce = challenges.issue(now + 300_000);
        assert_eq!(nonce.len(), 64);
        assert!(nonce.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(challenges.valid_until(&nonce, now), Some(now + 300_000));
        assert_eq!(
            challenges.valid_until(&nonce, now + 300_000),
            None,
            "expired"
        );
        assert_ne!(challenges.issue(now + 300_000), nonce, "random part");
        assert_eq!(Challenges::new([8; 32]).valid_until(&nonce, now), None);
    }

    #[test]
    fn altered_or_malformed_nonces_are_refused() {
        let challenges = Challenges::new([7; 32]);
        let now = 1_700_000_000_000;
        let nonce = challenges.issue(now + 300_000);
        // A later expiry written into the nonce breaks its MAC.
        let mut stretched = nonce.clone().into_bytes();
        stretched[9] = if stretched[9] == b'f' { b'e' } else { b'f' };
        let stretched = String::from_utf8(stretched).unwrap();
        assert_eq!(challenges.valid_until(&stretched, now), None);
        for bad in [
            "",
            "a1b2c3d4e5f67890a1b2c3d4e5f67890",
            &nonce.to_uppercase(),
            &format!("{nonce}00"),
            &nonce[..63],
            &format!("{}g", &nonce[..63]),
        ] {
            assert_eq!(challenges.valid_until(bad, now), None, "{bad}");
        }
    }
}
