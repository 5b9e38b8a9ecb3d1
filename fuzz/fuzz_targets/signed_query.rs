//! The HMAC canonical query: any query string either fails with a stable error or has a
//! canonical form that is its own canonical form, and the pairs handlers read canonicalize to
//! the same text (they see exactly what was signed).
#![no_main]

use libfuzzer_sys::fuzz_target;
use swapd_types::signing::{canonical_query, encode_component, query_pairs};

fuzz_target!(|raw: &str| {
    let Ok(canonical) = canonical_query(raw) else {
        assert!(query_pairs(raw).is_err());
        return;
    };
    assert_eq!(
        canonical_query(&canonical).as_deref(),
        Ok(canonical.as_str())
    );
    let mut pairs: Vec<(String, String)> = query_pairs(raw)
        .expect("canonicalized, so readable")
        .iter()
        .map(|(name, value)| (encode_component(name), encode_component(value)))
        .collect();
    pairs.sort();
    let joined: Vec<String> = pairs.iter().map(|(n, v)| format!("{n}={v}")).collect();
    assert_eq!(joined.join("&"), canonical);
});
