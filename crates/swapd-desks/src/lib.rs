//! swapd's live offchain exchange desks. Each desk's module holds its wire format (`wire`), the
//! pure functions that map it onto `swapd_core::offchain::desk`, and its client over the shared HTTP
//! transport (`swapd-http`); each desk sits behind the desk port (`swapd_core::offchain::desk::Desk`).

pub mod changenow;
pub mod fixedfloat;
mod quoting;

use serde::de::DeserializeOwned;
use swapd_core::market::currencies::CurrencyDef;
use swapd_core::offchain::desk::DeskError;

/// A desk's currencies as swapd knows them.
#[derive(Debug, Default)]
pub struct Catalog {
    pub currencies: Vec<Listed>,
    /// Currencies (or networks) the desk lists that swapd does not: left out, counted for the
    /// log.
    pub unknown: usize,
}

impl Catalog {
    fn add(
        &mut self,
        currency: &'static CurrencyDef,
        desk_code: &str,
        send: bool,
        receive: bool,
        fixed: bool,
    ) {
        self.currencies.push(Listed {
            currency,
            desk_code: desk_code.to_owned(),
            send,
            receive,
            fixed_rate: fixed,
        });
    }
}

/// A currency a desk trades.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub currency: &'static CurrencyDef,
    /// What the desk calls it in requests (ChangeNOW's ticker, beside its network code;
    /// FixedFloat's code).
    pub desk_code: String,
    /// Users can deposit it.
    pub send: bool,
    /// The desk pays out in it.
    pub receive: bool,
    /// The desk locks fixed rates for it.
    pub fixed_rate: bool,
}

/// A value in a desk's answer that swapd has no mapping for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown(pub String);

impl From<Unknown> for DeskError {
    fn from(unknown: Unknown) -> Self {
        DeskError::Unavailable {
            detail: format!("the desk answered an unknown {}", unknown.0),
        }
    }
}

/// A desk's JSON answer, or `Unavailable` when it is not the shape documented.
fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, DeskError> {
    use serde_json::error::Category;
    serde_json::from_slice(body).map_err(|error| {
        let what = match error.classify() {
            Category::Syntax | Category::Io => "not JSON",
            Category::Eof => "cut short",
            Category::Data => "unexpected fields or types",
        };
        DeskError::Unavailable {
            detail: format!("the desk answered malformed JSON ({what})"),
        }
    })
}
