//! Webhook URLs through the SSRF policy: a URL the live policy takes is `https` on 443 without
//! credentials, and a literal address it takes is a public one; a URL is kept as written and
//! checked again as written before each delivery, which gives the same destination, and so
//! does its escaped form while within the length limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use swapd_core::webhooks::url_policy::{MAX_URL_LEN, UrlPolicy, address_allowed, check_url};

fuzz_target!(|text: &str| {
    for policy in [UrlPolicy::Live, UrlPolicy::Sandbox] {
        let Ok(destination) = check_url(text, policy) else {
            continue;
        };
        if let Some(ip) = destination.literal {
            assert!(address_allowed(ip, policy), "{ip} under {policy:?}");
        }
        if policy == UrlPolicy::Live {
            assert_eq!(destination.url.scheme(), "https");
            assert_eq!(destination.port, 443);
            assert!(destination.url.username().is_empty() && destination.url.password().is_none());
        }
        assert_eq!(check_url(text, policy), Ok(destination.clone()));
        if destination.url.as_str().len() <= MAX_URL_LEN {
            assert_eq!(check_url(destination.url.as_str(), policy), Ok(destination));
        }
    }
});
