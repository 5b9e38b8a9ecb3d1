//! Where swapctl's settings come from: flags and the environment (through clap), then a
//! profile file, then defaults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;
use swapd_client::x402::{PrivateKeySigner, SolanaKey, Wallet, X402Client};
use swapd_client::{BusinessClient, Credentials};

use crate::cli::{GlobalArgs, WalletKind};

pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// One table of the profile file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Profile {
    url: Option<String>,
    api_key: Option<String>,
    api_secret: Option<String>,
    evm_key: Option<String>,
    solana_key: Option<String>,
}

/// The effective settings.
pub struct Settings {
    pub url: String,
    api_key: Option<String>,
    api_secret: Option<String>,
    pub evm_key: Option<PrivateKeySigner>,
    pub solana_key: Option<SolanaKey>,
    wallet: WalletKind,
    max_payment: u64,
}

impl Settings {
    pub fn load(global: &GlobalArgs) -> anyhow::Result<Self> {
        let profile = read_profile(global.profiles.as_deref(), &global.profile)?;
        let pick = |flag: &Option<String>, file: Option<String>| {
            flag.clone().or(file).filter(|v| !v.is_empty())
        };
        let evm_key = pick(&global.evm_key, profile.evm_key)
            .map(|text| parse_evm_key(&text))
            .transpose()?;
        let solana_key = pick(&global.solana_key, profile.solana_key)
            .map(|text| parse_solana_key(&text))
            .transpose()?;
        Ok(Self {
            url: pick(&global.server, profile.url).unwrap_or_else(|| DEFAULT_URL.to_owned()),
            api_key: pick(&global.api_key, profile.api_key),
            api_secret: pick(&global.api_secret, profile.api_secret),
            evm_key,
            solana_key,
            wallet: global.sign_in,
            max_payment: global.max_payment,
        })
    }

    /// Uses this key pair instead of the configured one (the demo's fresh key).
    pub fn with_credentials(mut self, api_key: String, api_secret: String) -> Self {
        self.api_key = Some(api_key);
        self.api_secret = Some(api_secret);
        self
    }

    pub fn has_credentials(&self) -> bool {
        self.api_key.is_some() && self.api_secret.is_some()
    }

    pub fn business(&self) -> anyhow::Result<BusinessClient> {
        let (Some(key), Some(secret)) = (&self.api_key, &self.api_secret) else {
            bail!(
                "no API key: set SWAPD_API_KEY and SWAPD_API_SECRET (or --api-key/--api-secret, \
                 or a profile); create one with `swapd keys create`"
            );
        };
        Ok(BusinessClient::new(
            &self.url,
            Credentials::new(key, secret),
        )?)
    }

    /// A client of the x402 API paying with the EVM key and signing in as the chosen wallet.
    pub fn x402(&self) -> anyhow::Result<X402Client> {
        let mut client = X402Client::new(&self.url)?
            .with_max_amount(swapd_client::x402::U256::from(self.max_payment));
        if let Some(payer) = &self.evm_key {
            client = client.paying_with(payer.clone());
        }
        match (self.wallet, &self.evm_key, &self.solana_key) {
            (WalletKind::Evm, Some(key), _) => {
                client = client.signed_in_as(Wallet::Evm(key.clone()));
            }
            (WalletKind::Solana, _, Some(key)) => {
                client = client.signed_in_as(Wallet::Solana(key.clone()));
            }
            (WalletKind::Solana, _, None) => {
                bail!("--sign-in solana needs a Solana key: set SWAPD_SOLANA_KEY or --solana-key")
            }
            (WalletKind::Evm, None, _) => {}
        }
        Ok(client)
    }
}

fn default_profiles_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")))?;
    Some(base.join("swapctl").join("profiles.toml"))
}

fn read_profile(path: Option<&Path>, name: &str) -> anyhow::Result<Profile> {
    let explicit = path.is_some();
    let Some(path) = path.map(Path::to_path_buf).or_else(default_profiles_path) else {
        return Ok(Profile::default());
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            if name != "default" {
                bail!(
                    "profile `{name}` asked for, but {} does not exist",
                    path.display()
                );
            }
            return Ok(Profile::default());
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut profiles: BTreeMap<String, Profile> = toml::from_str(&text)
        .with_context(|| format!("{} is not a profile file", path.display()))?;
    match profiles.remove(name) {
        Some(profile) => Ok(profile),
        None if name == "default" => Ok(Profile::default()),
        None => bail!(
            "no profile `{name}` in {} (it has: {})",
            path.display(),
            profiles.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    }
}

pub fn parse_evm_key(text: &str) -> anyhow::Result<PrivateKeySigner> {
    text.trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("the EVM key is not a 32-byte hex private key"))
}

/// A Solana key as wallets export it: base58 or hex, the 32-byte seed or the 64-byte keypair
/// (seed then public key).
pub fn parse_solana_key(text: &str) -> anyhow::Result<SolanaKey> {
    let text = text.trim();
    let bytes = hex::decode(text.trim_start_matches("0x"))
        .ok()
        .filter(|b| b.len() == 32 || b.len() == 64)
        .or_else(|| bs58::decode(text).into_vec().ok())
        .context("the Solana key is neither hex nor base58")?;
    let seed: [u8; 32] = bytes
        .get(..32)
        .filter(|_| bytes.len() == 32 || bytes.len() == 64)
        .and_then(|s| s.try_into().ok())
        .context("the Solana key must be 32 bytes (seed) or 64 bytes (keypair)")?;
    let key = SolanaKey::from_bytes(&seed);
    if bytes.len() == 64 && bytes[32..] != key.verifying_key().to_bytes() {
        bail!("the Solana keypair's public half does not match its seed");
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solana_keys_are_read_as_seeds_or_keypairs_in_either_encoding() {
        let key = SolanaKey::from_bytes(&[7; 32]);
        let mut pair = key.to_bytes().to_vec();
        pair.extend(key.verifying_key().to_bytes());
        for text in [
            hex::encode(key.to_bytes()),
            bs58::encode(key.to_bytes()).into_string(),
            bs58::encode(&pair).into_string(),
        ] {
            assert_eq!(parse_solana_key(&text).unwrap().to_bytes(), key.to_bytes());
        }
        pair[40] ^= 1;
        assert!(parse_solana_key(&bs58::encode(&pair).into_string()).is_err());
        assert!(parse_solana_key("not a key").is_err());
    }

    #[test]
    fn profiles_are_tables_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profiles.toml");
        std::fs::write(
            &path,
            "[default]\nurl = \"http://a\"\n[staging]\nurl = \"http://b\"\napi_key = \"key_b\"\n",
        )
        .unwrap();
        assert_eq!(
            read_profile(Some(&path), "default").unwrap().url.unwrap(),
            "http://a"
        );
        let staging = read_profile(Some(&path), "staging").unwrap();
        assert_eq!(staging.api_key.unwrap(), "key_b");
        let missing = read_profile(Some(&path), "prod").unwrap_err().to_string();
        assert!(missing.contains("default, staging"), "{missing}");
        std::fs::write(&path, "[default]\nsecret = \"typo\"\n").unwrap();
        assert!(read_profile(Some(&path), "default").is_err());
    }
}
