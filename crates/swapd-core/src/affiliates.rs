//! Affiliates (docs/fees.md, "Affiliates"): whoever brings users with a code takes a share of
//! the operator's service fee on their swaps, carved out of it, so a user pays the same with
//! or without a code.

use serde::{Deserialize, Serialize};

use crate::market::pricing::BPS;

/// An affiliate as the operator registered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Affiliate {
    /// What users quote and order with (`affiliateCode`).
    pub code: String,
    pub name: String,
    /// Its share of the service fee, in bps of that fee (10 000 = all of it).
    pub share_bps: u32,
    /// Where the operator pays it (an address or an account, the operator's to use).
    pub payout: String,
    /// A disabled affiliate's code is refused on new quotes and orders.
    pub active: bool,
    pub created_at_ms: i64,
}

/// Why an affiliate cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AffiliateError {
    #[error("the code must be 1 to 64 letters, digits, `_` or `-`")]
    Code,
    #[error("the name must be 1 to 100 printable characters")]
    Name,
    #[error("the share must be 1 to 10000 bps of the service fee (1 to 100 %)")]
    Share,
    #[error("the payout address or account must be 1 to 200 printable characters")]
    Payout,
}

/// Whether `code` is a well-formed affiliate code (the form `affiliateCode` takes on orders).
pub fn is_code(code: &str) -> bool {
    (1..=64).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Affiliate {
    /// A new, active affiliate, checked.
    pub fn new(
        code: &str,
        name: &str,
        share_bps: u32,
        payout: &str,
        created_at_ms: i64,
    ) -> Result<Self, AffiliateError> {
        let printable = |text: &str, max: usize| {
            !text.trim().is_empty()
                && text.chars().count() <= max
                && !text.chars().any(char::is_control)
        };
        if !is_code(code) {
            return Err(AffiliateError::Code);
        }
        if !printable(name, 100) {
            return Err(AffiliateError::Name);
        }
        if share_bps == 0 || share_bps > BPS {
            return Err(AffiliateError::Share);
        }
        if !printable(payout, 200) {
            return Err(AffiliateError::Payout);
        }
        Ok(Self {
            code: code.to_owned(),
            name: name.trim().to_owned(),
            share_bps,
            payout: payout.trim().to_owned(),
            active: true,
            created_at_ms,
        })
    }
}

/// A share given as bps (`2500`) or as a percent (`25%`, `12.5%`), in bps.
pub fn parse_share(text: &str) -> Option<u32> {
    match text.strip_suffix('%') {
        Some(percent) => {
            let (whole, fraction) = percent.split_once('.').unwrap_or((percent, ""));
            if whole.is_empty()
                || fraction.len() > 2
                || !whole
                    .bytes()
                    .chain(fraction.bytes())
                    .all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let hundredths: u32 = format!("{whole}{fraction:0<2}").parse().ok()?;
            Some(hundredths)
        }
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_bps_or_percent() {
        assert_eq!(parse_share("2500"), Some(2_500));
        assert_eq!(parse_share("25%"), Some(2_500));
        assert_eq!(parse_share("12.5%"), Some(1_250));
        assert_eq!(parse_share("0.01%"), Some(1));
        for bad in ["", "%", "1.234%", "-5", "x%", ".5%"] {
            assert_eq!(parse_share(bad), None, "{bad}");
        }
    }

    #[test]
    fn an_affiliate_is_checked() {
        assert!(Affiliate::new("shop-1", "Shop", 2_500, "0xabc", 0).is_ok());
        assert_eq!(
            Affiliate::new("bad code", "Shop", 2_500, "0xabc", 0),
            Err(AffiliateError::Code)
        );
        assert_eq!(
            Affiliate::new("ok", "Shop", 10_001, "0xabc", 0),
            Err(AffiliateError::Share)
        );
        assert_eq!(
            Affiliate::new("ok", " ", 1, "0xabc", 0),
            Err(AffiliateError::Name)
        );
        assert_eq!(
            Affiliate::new("ok", "Shop", 1, "", 0),
            Err(AffiliateError::Payout)
        );
    }
}
