//! The signed request's headers: key id, timestamp, nonce and signature are each accepted only
//! in their exact shape, and a signature verifies exactly when it is the HMAC of the text to
//! sign (built from any header values without failing).
#![no_main]

use libfuzzer_sys::fuzz_target;
use swapd_types::signing::{
    is_key_id, is_nonce, is_signature, parse_timestamp, sign, string_to_sign, verify,
};

fuzz_target!(|input: (&str, &str, &str, &str, &[u8])| {
    let (key, timestamp, nonce, signature, body) = input;
    if is_key_id(key) {
        assert!(key.len() == 36 && key.starts_with("key_"));
    }
    if let Some(seconds) = parse_timestamp(timestamp) {
        let digits = timestamp.trim_start_matches('0');
        let printed = if seconds == 0 {
            String::new()
        } else {
            seconds.to_string()
        };
        assert_eq!(digits, printed);
    }
    if is_nonce(nonce) {
        assert!((8..=200).contains(&nonce.len()));
    }
    if is_signature(signature) {
        assert_eq!(signature.len(), 64);
    }
    let message = string_to_sign("POST", "/api/v3/orders", "", timestamp, nonce, body);
    let expected = sign(b"secret", &message);
    assert!(verify(b"secret", &message, &expected));
    assert_eq!(
        verify(b"secret", &message, signature),
        signature == expected
    );
});
