//! Secrets at rest: sealed with XChaCha20-Poly1305 under the operator's master key.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngCore;

const NONCE_LEN: usize = 24;
const SEALED_VERSION: &str = "v1";

/// The 32-byte key that seals every secret stored by swapd. Written as 64 hex digits.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretError {
    #[error("the master key must be 64 hexadecimal characters (32 bytes)")]
    MasterKeyFormat,
    #[error("a stored secret is malformed")]
    Malformed,
    #[error("a stored secret cannot be opened with this master key (wrong key or tampered data)")]
    Undecryptable,
}

impl MasterKey {
    pub fn generate() -> Self {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        Self(key)
    }

    pub fn from_hex(text: &str) -> Result<Self, SecretError> {
        let mut key = [0u8; 32];
        hex::decode_to_slice(text.trim(), &mut key).map_err(|_| SecretError::MasterKeyFormat)?;
        Ok(Self(key))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// A 32-byte key for `purpose` derived from the master key (HMAC-SHA256), so one operator
    /// secret keys several uses without any of them revealing it or each other.
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        use hmac::{Hmac, Mac};
        let mut mac =
            <Hmac<sha2::Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes any key");
        mac.update(b"swapd key derivation\n");
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// Seals `plaintext`, binding it to `context` (e.g. the owning row's id) so a sealed value
    /// copied to another row does not open.
    pub fn seal(&self, plaintext: &[u8], context: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let ciphertext = self
            .cipher()
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: context.as_bytes(),
                },
            )
            .expect("XChaCha20-Poly1305 encryption cannot fail for in-memory buffers");
        let mut blob = nonce.to_vec();
        blob.extend_from_slice(&ciphertext);
        format!("{SEALED_VERSION}.{}", STANDARD_NO_PAD.encode(blob))
    }

    pub fn open(&self, sealed: &str, context: &str) -> Result<Vec<u8>, SecretError> {
        let encoded = sealed
            .strip_prefix(SEALED_VERSION)
            .and_then(|rest| rest.strip_prefix('.'))
            .ok_or(SecretError::Malformed)?;
        let blob = STANDARD_NO_PAD
            .decode(encoded)
            .map_err(|_| SecretError::Malformed)?;
        if blob.len() <= NONCE_LEN {
            return Err(SecretError::Malformed);
        }
        let (nonce, ciphertext) = blob.split_at(NONCE_LEN);
        self.cipher()
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: context.as_bytes(),
                },
            )
            .map_err(|_| SecretError::Undecryptable)
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new((&self.0).into())
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_the_same_key_and_context() {
        let key = MasterKey::generate();
        let sealed = key.seal(b"sec_abc", "key_1");
        assert!(!sealed.contains("sec_abc"));
        assert_eq!(key.open(&sealed, "key_1").unwrap(), b"sec_abc");
        assert_eq!(key.open(&sealed, "key_2"), Err(SecretError::Undecryptable));
        assert_eq!(
            MasterKey::generate().open(&sealed, "key_1"),
            Err(SecretError::Undecryptable)
        );
        assert_eq!(key.open("v1.!!", "key_1"), Err(SecretError::Malformed));
        assert_eq!(key.open("garbage", "key_1"), Err(SecretError::Malformed));
    }

    #[test]
    fn sealing_twice_gives_different_ciphertexts() {
        let key = MasterKey::generate();
        assert_ne!(key.seal(b"x", "c"), key.seal(b"x", "c"));
    }

    #[test]
    fn master_key_hex_round_trips_and_rejects_bad_input() {
        let key = MasterKey::generate();
        let again = MasterKey::from_hex(&key.to_hex()).unwrap();
        assert_eq!(again.to_hex(), key.to_hex());
        assert_eq!(
            MasterKey::from_hex("abcd").unwrap_err(),
            SecretError::MasterKeyFormat
        );
        assert!(!format!("{key:?}").contains(&key.to_hex()));
    }
}
