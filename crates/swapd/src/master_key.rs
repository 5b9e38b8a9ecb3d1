//! Where the master key comes from: the configuration (required in live mode), or in sandbox a
//! file generated into the data dir on first start, readable by its owner only.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, bail};
use swapd_core::Mode;
use swapd_core::secrets::MasterKey;

use crate::config::Config;

pub const MASTER_KEY_FILE: &str = "master.key";

pub fn load_or_create(config: &Config) -> anyhow::Result<MasterKey> {
    if let Some(setting) = &config.master_key {
        return Ok(setting.0.clone());
    }
    if config.mode == Mode::Live {
        bail!(
            "live mode needs `master_key` (env SWAPD_MASTER_KEY): 64 hex digits, e.g. from `openssl rand -hex 32`"
        );
    }
    let path = config.data_path(MASTER_KEY_FILE);
    std::fs::create_dir_all(config.data_dir())
        .with_context(|| format!("cannot create the data dir {}", config.data_dir().display()))?;
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut file) => {
            let key = MasterKey::generate();
            writeln!(file, "{}", key.to_hex())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("cannot write {}", path.display()))?;
            tracing::info!(path = %path.display(), "generated a sandbox master key");
            Ok(key)
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => read_key_file(&path),
        Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
    }
}

fn read_key_file(path: &Path) -> anyhow::Result<MasterKey> {
    let mode = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        bail!(
            "{} is readable by other users (mode {:o}); run `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        );
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    MasterKey::from_hex(&text).with_context(|| format!("{} is not a master key", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(dir: &Path) -> Config {
        Config {
            data_dir: dir.to_path_buf(),
            ..Config::default()
        }
    }

    #[test]
    fn sandbox_key_is_generated_once_with_owner_only_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let config = sandbox(&dir.path().join("fresh"));
        let first = load_or_create(&config).unwrap();
        let path = config.data_path(MASTER_KEY_FILE);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let second = load_or_create(&config).unwrap();
        assert_eq!(first.to_hex(), second.to_hex());
    }

    #[test]
    fn a_world_readable_key_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let config = sandbox(dir.path());
        load_or_create(&config).unwrap();
        let path = config.data_path(MASTER_KEY_FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create(&config).unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
    }

    #[test]
    fn a_configured_key_wins_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::generate();
        let config = Config {
            master_key: Some(crate::config::MasterKeySetting(key.clone())),
            ..sandbox(dir.path())
        };
        assert_eq!(load_or_create(&config).unwrap().to_hex(), key.to_hex());
        assert!(!config.data_path(MASTER_KEY_FILE).exists());
    }
}
