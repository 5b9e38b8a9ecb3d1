//! `[console]`: the operator console at `/console` (docs/operations.md, "The console").

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::value::{self, REDACTED, Secret, through_text};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsoleConfig {
    /// The operator password's argon2 hash (PHC string, from `swapd console hash-password`).
    /// Unset: the console is off and `/console` answers 404.
    #[serde(default, with = "value::optional")]
    pub password_hash: Option<PasswordHash>,
}

/// An argon2 password hash in PHC form; not shown.
#[derive(Debug, Clone)]
pub struct PasswordHash(Secret);

impl PasswordHash {
    pub fn expose(&self) -> &str {
        self.0.expose()
    }
}

impl FromStr for PasswordHash {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        swapd_api::console::Console::check_hash(text)?;
        text.parse().map(Self)
    }
}

impl fmt::Display for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

through_text!(PasswordHash);
