use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use swapd_types::Permission;

use crate::config::{LogFormat, Overrides};

/// swapd: a swap service. Runs the server and manages it.
#[derive(Debug, Parser)]
#[command(name = "swapd", version, about, long_about = None)]
#[command(after_help = "Examples:
  swapd serve                                   # sandbox on http://127.0.0.1:8080, SQLite in ./data
  swapd keys create --name demo --permissions prices:read,orders:create,orders:read
  swapd serve --database-url postgres://postgres@127.0.0.1:5432/swapd
  swapd config show

Configuration layers: built-in defaults < swapd.toml (or --config) < SWAPD_* env < flags.")]
pub struct Cli {
    /// Configuration file (default: ./swapd.toml when it exists).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Data directory for the embedded database and sandbox files [default: ./data].
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// sqlite://PATH or postgres://USER@HOST/DB [default: sqlite://<data-dir>/swapd.db].
    #[arg(long, global = true, value_name = "URL")]
    pub database_url: Option<String>,
    /// Log format.
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormat>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API and the background worker (both unless --api or --worker is given).
    #[command(after_help = "Examples:
  swapd serve
  swapd serve --listen 0.0.0.0:8080 --api
  swapd serve --worker --database-url postgres://postgres@127.0.0.1:5432/swapd")]
    Serve(ServeArgs),
    /// Exit 0 when this node's `/readyz` answers ready: the container image's health check,
    /// which needs no shell (docs/deploy.md).
    #[command(after_help = "Examples:
  swapd healthcheck
  swapd healthcheck --url http://127.0.0.1:8081")]
    Healthcheck {
        /// A node's base URL (its `/readyz` is asked) or its readiness URL [default: /readyz at
        /// the configured listen address, on loopback].
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Apply pending database migrations and exit.
    #[command(
        after_help = "Example:\n  swapd migrate --database-url postgres://postgres@127.0.0.1:5432/swapd"
    )]
    Migrate,
    /// Manage Business API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Manage affiliates: codes that take a share of the service fee (docs/fees.md).
    #[command(subcommand)]
    Affiliates(AffiliatesCommand),
    /// Inspect the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// The operator console (`/console`).
    #[command(subcommand)]
    Console(ConsoleCommand),
    /// Write the OpenAPI documents of both surfaces (or check the committed ones).
    #[command(
        after_help = "Examples:\n  swapd openapi --out openapi\n  swapd openapi --out openapi --check"
    )]
    Openapi {
        /// Directory to write v3.json and x402.json into.
        #[arg(long, default_value = "openapi")]
        out: PathBuf,
        /// Do not write; fail when the files differ from what the code generates.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConsoleCommand {
    /// Read the operator password from standard input (one line) and print its argon2 hash for
    /// `console.password_hash` (env SWAPD_CONSOLE__PASSWORD_HASH).
    #[command(after_help = "Example:\n  printf '%s' \"$PASSWORD\" | swapd console hash-password")]
    HashPassword,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Run the HTTP API role.
    #[arg(long)]
    pub api: bool,
    /// Run the background worker role.
    #[arg(long)]
    pub worker: bool,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key; its secret is printed once and never again.
    #[command(after_help = "Examples:
  swapd keys create --name shop --permissions prices:read,orders:create,orders:read
  swapd keys create --name backend --permissions prices:read --ip-allow 203.0.113.0/24 --per-minute 60 --json")]
    Create(CreateKeyArgs),
    /// List keys (never their secrets).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one key (never its secret).
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: its requests are refused from now on.
    Revoke {
        id: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AffiliatesCommand {
    /// Register an affiliate; its code is accepted on quotes, routes and orders from now on.
    #[command(after_help = "Examples:
  swapd affiliates create --code wallet-app --name \"Wallet App\" --share 25% --payout 0x52908400098527886E0F7030069857D2E4169EE7
  swapd affiliates create --code blog --name Blog --share 1000 --payout bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq --json")]
    Create {
        /// What users quote and order with (`affiliateCode`): letters, digits, `_`, `-`.
        #[arg(long)]
        code: String,
        #[arg(long)]
        name: String,
        /// Its share of the service fee: bps of the fee (`2500`) or a percent (`25%`).
        #[arg(long)]
        share: String,
        /// Where you pay it: an address or an account.
        #[arg(long)]
        payout: String,
        #[arg(long)]
        json: bool,
    },
    /// List affiliates.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show one affiliate.
    Show {
        code: String,
        #[arg(long)]
        json: bool,
    },
    /// Disable a code: new quotes and orders refuse it; existing orders keep their fees.
    Disable { code: String },
    /// What an affiliate's code earned: totals per currency, expected and realized.
    #[command(
        after_help = "Example:\n  swapd affiliates earnings wallet-app --since 1795000000 --json"
    )]
    Earnings {
        code: String,
        /// Start (Unix epoch seconds) [default: 30 days before --until].
        #[arg(long)]
        since: Option<i64>,
        /// End, excluded (Unix epoch seconds) [default: the second after now].
        #[arg(long)]
        until: Option<i64>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct CreateKeyArgs {
    /// A name to recognize the key by.
    #[arg(long)]
    pub name: String,
    /// Comma-separated permissions.
    #[arg(long, value_delimiter = ',', required = true, value_parser = parse_permission)]
    pub permissions: Vec<Permission>,
    /// Comma-separated IP addresses or CIDR blocks allowed to use the key (default: any).
    #[arg(long, value_delimiter = ',', value_name = "CIDR")]
    pub ip_allow: Vec<String>,
    /// Comma-separated browser origins allowed to use the key (default: any).
    #[arg(long, value_delimiter = ',', value_name = "ORIGIN")]
    pub origins: Vec<String>,
    /// Requests per minute [default: 120].
    #[arg(long)]
    pub per_minute: Option<u32>,
    /// The partner's markup on its quotes, in basis points of the output, at most
    /// `fees.max_markup_bps` (docs/fees.md) [default: 0].
    #[arg(long, default_value_t = 0, value_name = "BPS")]
    pub markup_bps: u32,
    /// The EVM address the onchain routers that pay fees to addresses (0x, Relay) pay the
    /// markup to; without one they leave the markup out (docs/fees.md).
    #[arg(long, value_name = "ADDRESS")]
    pub markup_recipient: Option<String>,
    /// Requests per hour [default: 3600].
    #[arg(long)]
    pub per_hour: Option<u32>,
    /// Weighted request units per hour [default: 10000].
    #[arg(long)]
    pub weight_per_hour: Option<u32>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration (secrets redacted).
    Show,
}

fn parse_permission(text: &str) -> Result<Permission, String> {
    Permission::parse(text.trim()).map_err(|e| e.to_string())
}

impl Cli {
    pub fn overrides(&self) -> Overrides {
        let listen = match &self.command {
            Command::Serve(args) => args.listen,
            _ => None,
        };
        Overrides {
            config_file: self.config.clone(),
            data_dir: self.data_dir.clone(),
            database_url: self.database_url.clone(),
            listen,
            log_format: self.log_format,
        }
    }
}
