//! Amounts and currency codes: an amount that parses prints back to text that parses to the
//! same amount, and is refused past its precision; any code and address are checked without
//! panicking, and an address a network accepts keeps its text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swapd_core::amount::{Amount, MAX_DECIMALS};
use swapd_core::market::currencies::currency;

fuzz_target!(|input: (u8, &str, &str, &str)| {
    let (precision, text, code, address) = input;
    let precision = precision % (MAX_DECIMALS + 1);
    if let Ok(amount) = Amount::parse(text, precision) {
        let printed = amount.to_string();
        assert_eq!(Amount::parse(&printed, precision), Ok(amount));
        assert_eq!(amount.decimals(), precision);
    }
    if let Some(currency) = currency(code) {
        assert!(currency.code.eq_ignore_ascii_case(code));
        if let Ok(parsed) = currency.network.parse_address(address) {
            assert_eq!(parsed.as_str(), address);
        }
    }
});
