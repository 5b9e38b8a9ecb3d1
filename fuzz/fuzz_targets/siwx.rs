//! Sign-in-with-X proofs (EVM and Solana): any payload is checked without panicking, and one
//! that verifies proves the wallet it names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swapd_x402::siwx::{Audience, SiwxPayload, message, verify, verify_signature};
use swapd_x402::wire::decode_header;

fuzz_target!(|text: &str| {
    let Ok(payload) = decode_header::<SiwxPayload>(text) else {
        return;
    };
    let _ = message(&payload);
    if let Ok(wallet) = verify_signature(&payload) {
        assert!(wallet.address().eq_ignore_ascii_case(&payload.address));
    }
    let chains = [
        "eip155:8453".to_owned(),
        "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".to_owned(),
    ];
    let audience = Audience {
        origin: "https://api.example.com",
        chains: &chains,
    };
    let _ = verify(&payload, &audience, 1_900_000_000_000);
});
