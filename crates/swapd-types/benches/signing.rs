//! The cost of verifying one Business API signature: canonicalizing the query, building the
//! string to sign, and the constant-time HMAC-SHA256 check.
//!
//! cargo bench -p swapd-types --bench signing

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use swapd_types::signing::{canonical_query, sign, string_to_sign, verify};

const SECRET: &[u8] = b"sec_9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn message(query: &str, body: &[u8]) -> Vec<u8> {
    let canonical = canonical_query(query).unwrap();
    string_to_sign(
        "POST",
        "/api/v3/orders",
        &canonical,
        "1767225600",
        "7f3c9a2e-4b1d-4e8a-9c2f-1a2b3c4d5e6f",
        body,
    )
}

fn verify_request(query: &str, body: &[u8], signature: &str) -> bool {
    verify(SECRET, &message(query, body), signature)
}

fn benches(c: &mut Criterion) {
    let query =
        "toCcy=ETH&fromCcy=BTC&amount=0.1&direction=from&type=fixed&walletChainNamespace=eip155";
    c.bench_function("canonical_query (6 params)", |b| {
        b.iter(|| canonical_query(black_box(query)))
    });

    for (name, body) in [
        ("verify, empty body", Vec::new()),
        ("verify POST, 1 KiB body", vec![b'a'; 1024]),
        ("verify POST, 64 KiB body", vec![b'a'; 64 * 1024]),
    ] {
        let signature = sign(SECRET, &message(query, &body));
        assert!(verify_request(query, &body, &signature));
        c.bench_function(name, |b| {
            b.iter(|| verify_request(black_box(query), black_box(&body), black_box(&signature)))
        });
    }
}

criterion_group!(signing, benches);
criterion_main!(signing);
