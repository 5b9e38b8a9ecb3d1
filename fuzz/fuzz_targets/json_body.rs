//! Request bodies: the strict JSON reader (unique keys, bounded nesting, whole floats as
//! integers) either refuses with a stable code or reads a document that it reads again the same
//! once written back; the API's input types are read from any bytes without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use swapd_api::parse_json;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(value) = parse_json::<Value>(bytes) {
        let written = serde_json::to_vec(&value).expect("a value writes");
        let again = parse_json::<Value>(&written).expect("what was read reads again");
        assert_eq!(again, value);
    }
    let _ = parse_json::<swapd_types::orders::OrderInput>(bytes);
    let _ = parse_json::<swapd_types::orders::EmergencyInput>(bytes);
    let _ = parse_json::<swapd_types::orders::RefundInput>(bytes);
    let _ = parse_json::<swapd_types::market_intel::JobInput>(bytes);
});
