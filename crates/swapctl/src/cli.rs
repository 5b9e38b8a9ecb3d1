//! The command line: every command with its `--help` examples.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// swapctl: swapd from the terminal.
///
/// Partner calls go to the Business API (`/api/v3`), signed with your API key; with `--x402`
/// the same commands go to the pay-per-call API (`/api/x402`), paid with your EVM key and signed
/// in with your wallet.
#[derive(Debug, Parser)]
#[command(name = "swapctl", version, about, long_about)]
#[command(
    after_help = "Configuration: flags > environment > profile file > defaults.
  SWAPD_URL, SWAPD_API_KEY, SWAPD_API_SECRET, SWAPD_EVM_KEY, SWAPD_SOLANA_KEY;
  profile file: ~/.config/swapctl/profiles.toml (or --profiles FILE / SWAPCTL_PROFILES),
  one [NAME] table per profile with url, api_key, api_secret, evm_key, solana_key.

Examples:
  swapctl demo --data-dir ./data                 # the whole journey against a sandbox swapd
  swapctl routes --from BTC --to USDTTRC --amount 0.05
  swapctl routes --from BTC --to USDTTRC --amount 0.05 --sort reliable
  swapctl order create --from BTC --to USDTTRC --amount 0.05 --to-address TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t
  swapctl order watch ord_…
  swapctl --x402 currencies                      # paid per call with SWAPD_EVM_KEY
  swapctl completions bash > /etc/bash_completion.d/swapctl"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The swapd server [default: http://127.0.0.1:8080].
    #[arg(long, global = true, env = "SWAPD_URL", value_name = "URL")]
    pub server: Option<String>,
    /// Business API key (`key_…`).
    #[arg(long, global = true, env = "SWAPD_API_KEY", value_name = "KEY")]
    pub api_key: Option<String>,
    /// Its secret (`sec_…`). Prefer the environment or a profile to a flag.
    #[arg(
        long,
        global = true,
        env = "SWAPD_API_SECRET",
        value_name = "SECRET",
        hide_env_values = true
    )]
    pub api_secret: Option<String>,
    /// EVM private key (hex): pays x402 calls and signs in as an EVM wallet.
    #[arg(
        long,
        global = true,
        env = "SWAPD_EVM_KEY",
        value_name = "HEX",
        hide_env_values = true
    )]
    pub evm_key: Option<String>,
    /// Solana key (base58 or hex; the 32-byte seed or the 64-byte keypair): signs in as a
    /// Solana wallet.
    #[arg(
        long,
        global = true,
        env = "SWAPD_SOLANA_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub solana_key: Option<String>,
    /// Profile to read from the profile file.
    #[arg(
        long,
        global = true,
        env = "SWAPCTL_PROFILE",
        default_value = "default"
    )]
    pub profile: String,
    /// Profile file [default: ~/.config/swapctl/profiles.toml].
    #[arg(long, global = true, env = "SWAPCTL_PROFILES", value_name = "FILE")]
    pub profiles: Option<PathBuf>,
    /// Use the pay-per-call API (`/api/x402`): pay with the EVM key, sign in as `--sign-in`.
    #[arg(long, global = true)]
    pub x402: bool,
    /// Which wallet signs in on the x402 API (default: the EVM key's).
    #[arg(long, global = true, value_enum, default_value_t = WalletKind::Evm)]
    pub sign_in: WalletKind,
    /// The most one x402 call may cost, in USDC atomic units (1000000 = 1 USDC).
    #[arg(long, global = true, default_value_t = 1_000_000, value_name = "UNITS")]
    pub max_payment: u64,
    /// Machine-readable output: the API's `data` as JSON (one object per line for streams).
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WalletKind {
    Evm,
    Solana,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    #[command(flatten)]
    Swap(SwapCommand),
    /// The server's readiness document: mode, time, your key's permissions and every route
    /// (with `--x402`: prices, how to pay, the SIWX chains).
    #[command(after_help = "Examples:\n  swapctl readiness\n  swapctl --x402 readiness --json")]
    Readiness,
    /// Webhook subscriptions, deliveries, and a local verifying receiver.
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// What your key's markups earned (docs/fees.md): totals per currency, expected and realized.
    #[command(
        after_help = "Examples:\n  swapctl earnings\n  swapctl earnings --since 1795000000 --json"
    )]
    Earnings {
        /// Start of the window (Unix epoch seconds) [default: 30 days before --until].
        #[arg(long)]
        since: Option<i64>,
        /// End of the window (Unix epoch seconds) [default: now].
        #[arg(long)]
        until: Option<i64>,
    },
    /// Any x402 route, paid and signed in as needed (prints the settlement).
    #[command(after_help = "Examples:
  swapctl x402 get /api/x402
  swapctl x402 get /api/x402/routes -q fromCcy=BTC -q toCcy=ETH -q amount=0.1
  swapctl x402 post /api/x402/orders --body '{\"fromCcy\":\"BTC\",\"toCcy\":\"USDTTRC\",\"amount\":\"0.05\",\"toAddress\":\"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t\"}'
  swapctl --sign-in solana x402 get /api/x402/orders/ord_…")]
    X402(X402Args),
    /// Market-intel jobs on the x402 API: pair depth, route scans, rate history.
    #[command(subcommand, name = "market-intel")]
    MarketIntel(MarketIntelCommand),
    /// The whole journey against a sandbox swapd: an order from quote to payout, an emergency,
    /// an onchain bridge, a paid x402 order with a wallet sign-in.
    #[command(after_help = "Examples:
  swapd serve &                                  # sandbox mode, data in ./data
  swapctl demo --data-dir ./data                 # creates its own API key there
  SWAPD_API_KEY=key_… SWAPD_API_SECRET=sec_… swapctl demo

Exits non-zero when any step does not end as expected.")]
    Demo(DemoArgs),
    /// A stdio MCP server for an agent host (Claude Desktop, an IDE): swapd's tools, called
    /// with the API key, or with `--x402` (or only a wallet key) paid from SWAPD_EVM_KEY.
    #[command(after_help = "Examples:
  SWAPD_URL=https://swap.example SWAPD_API_KEY=key_… SWAPD_API_SECRET=sec_… swapctl mcp
  SWAPD_URL=https://swap.example SWAPD_EVM_KEY=0x… swapctl --x402 mcp --max-spend-usd 0.50

An agent host runs it as a command; docs/mcp.md has its configuration.")]
    Mcp(McpArgs),
    /// Shell completions.
    #[command(after_help = "Examples:
  swapctl completions bash > ~/.local/share/bash-completion/completions/swapctl
  swapctl completions zsh > ~/.zfunc/_swapctl
  swapctl completions fish > ~/.config/fish/completions/swapctl.fish")]
    Completions { shell: clap_complete::Shell },
}

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// What paid calls may cost in all, for this session, in USD (each call is also capped
    /// by --max-payment).
    #[arg(long, default_value = "1", value_name = "USD")]
    pub max_spend_usd: String,
}

/// The commands both surfaces serve (the Business API, or the x402 API with `--x402`).
#[derive(Debug, Subcommand)]
pub enum SwapCommand {
    /// The currency catalog: codes, networks, limits.
    #[command(
        after_help = "Examples:\n  swapctl currencies\n  swapctl currencies --json | jq '.currencies[].code'"
    )]
    Currencies,
    /// Token lists and lookups.
    #[command(subcommand)]
    Tokens(TokensCommand),
    /// Each provider's availability and what its finished swaps showed: success rate, time,
    /// delivered against quoted.
    #[command(
        after_help = "Examples:\n  swapctl providers\n  swapctl providers --json | jq '.providers[] | {provider, observed}'"
    )]
    Providers,
    /// The best offchain quote for a pair (legacy; `routes` compares every route).
    #[command(
        after_help = "Examples:\n  swapctl quote --from BTC --to ETH --amount 0.1\n  swapctl quote --from BTC --to ETH --amount 2 --direction to --type float"
    )]
    Quote(PairArgs),
    /// Every route for a pair and amount, offchain and onchain, best first.
    #[command(after_help = "Examples:
  swapctl routes --from BTC --to USDTTRC --amount 0.05
  swapctl routes --from ETHBASE --to USDCSOL --amount 1 --wallet 0x52908400098527886E0F7030069857D2E4169EE7 \\
      --recipient 7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV")]
    Routes(RoutesArgs),
    /// Lock an offchain route card's terms into a `createToken` for `order create --token`.
    #[command(after_help = "Example:\n  swapctl resolve rqq_0123456789abcdef0123456789abcdef")]
    Resolve {
        /// `rqq_…` from `routes`.
        route_quote_id: String,
    },
    /// Orders: create, show, watch, emergency, refund, email, qr, sandbox deposit.
    #[command(subcommand)]
    Order(OrderCommand),
    /// Onchain execution: a route card's plan, the wallet's report, its status.
    #[command(subcommand)]
    Onchain(OnchainCommand),
}

#[derive(Debug, Subcommand)]
pub enum TokensCommand {
    /// Popular tokens, optionally on one chain.
    #[command(
        after_help = "Examples:\n  swapctl tokens popular\n  swapctl tokens popular --chain base"
    )]
    Popular {
        #[arg(long)]
        chain: Option<String>,
    },
    /// Tokens whose symbol or name matches.
    #[command(after_help = "Example:\n  swapctl tokens search usdc --chain solana --limit 5")]
    Search {
        query: String,
        #[arg(long)]
        chain: Option<String>,
        #[arg(long)]
        limit: Option<u32>,
    },
    /// One token by its contract address.
    #[command(
        name = "by-address",
        after_help = "Example:\n  swapctl tokens by-address --chain base --address 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    )]
    ByAddress(TokenRef),
    /// A token's logo.
    #[command(
        after_help = "Example:\n  swapctl tokens logo --chain base --address 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    )]
    Logo(TokenRef),
}

#[derive(Debug, Args)]
pub struct TokenRef {
    #[arg(long)]
    pub chain: String,
    #[arg(long)]
    pub address: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DirectionArg {
    From,
    To,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RateArg {
    Fixed,
    Float,
}

/// How `routes` orders usable cards (docs/market.md, "Ranking").
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SortArg {
    /// The output you can expect from what each provider delivered (the default).
    Best,
    /// The quoted output.
    Output,
    /// The expected time (observed when known).
    Fastest,
    /// The observed success rate.
    Reliable,
}

#[derive(Debug, Args)]
pub struct PairArgs {
    /// Currency sent (`BTC`, `USDTTRC`, …: see `currencies`).
    #[arg(long)]
    pub from: String,
    /// Currency received.
    #[arg(long)]
    pub to: String,
    /// Decimal amount, of `--from` (or of `--to` with `--direction to`).
    #[arg(long)]
    pub amount: String,
    #[arg(long, value_enum)]
    pub direction: Option<DirectionArg>,
    /// Fixed (locked) or float rate.
    #[arg(long = "type", value_enum)]
    pub rate: Option<RateArg>,
}

#[derive(Debug, Args)]
pub struct RoutesArgs {
    #[command(flatten)]
    pub pair: PairArgs,
    /// The wallet that would execute onchain routes.
    #[arg(long)]
    pub wallet: Option<String>,
    /// `eip155` or `solana` (inferred from the wallet when left out).
    #[arg(long)]
    pub wallet_namespace: Option<String>,
    /// Where a cross-chain route pays.
    #[arg(long)]
    pub recipient: Option<String>,
    /// Only this provider's cards.
    #[arg(long)]
    pub provider: Option<String>,
    /// How usable cards are ordered [default: best].
    #[arg(long, value_enum)]
    pub sort: Option<SortArg>,
}

#[derive(Debug, Subcommand)]
pub enum OrderCommand {
    /// Create an order from a `createToken` (see `resolve`) or from a pair and amount.
    #[command(after_help = "Examples:
  swapctl order create --token ctk_… --to-address TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t
  swapctl order create --from BTC --to USDTTRC --amount 0.05 --type fixed \\
      --to-address TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t --refund-address bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")]
    Create(CreateOrderArgs),
    /// The order as it stands.
    #[command(after_help = "Example:\n  swapctl order show ord_…")]
    Show { order_id: String },
    /// Follow the order live until it ends (completed, refunded, failed, expired, or an
    /// emergency that waits for a choice).
    #[command(
        after_help = "Examples:\n  swapctl order watch ord_…\n  swapctl order watch ord_… --timeout 600 --json   # one line per change"
    )]
    Watch {
        order_id: String,
        /// Poll interval in milliseconds.
        #[arg(long, default_value_t = 1000)]
        interval_ms: u64,
        /// Give up (exit 1) after this many seconds.
        #[arg(long, default_value_t = 3600)]
        timeout: u64,
    },
    /// Choose EXCHANGE or REFUND for an order in an emergency.
    #[command(after_help = "Examples:
  swapctl order emergency ord_… --choice exchange
  swapctl order emergency ord_… --choice refund --refund-address bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq")]
    Emergency {
        order_id: String,
        #[arg(long, value_enum)]
        choice: ChoiceArg,
        #[arg(long)]
        refund_address: Option<String>,
        #[arg(long)]
        refund_tag: Option<String>,
    },
    /// Ask for the deposit back while it has not been exchanged.
    #[command(
        after_help = "Example:\n  swapctl order refund ord_… --refund-address bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
    )]
    Refund {
        order_id: String,
        #[arg(long)]
        refund_address: Option<String>,
        #[arg(long)]
        refund_tag: Option<String>,
    },
    /// Send the order's status e-mails to an address.
    #[command(after_help = "Example:\n  swapctl order email ord_… alice@example.com")]
    Email { order_id: String, email: String },
    /// The deposit QR code, drawn in the terminal.
    #[command(
        after_help = "Examples:\n  swapctl order qr ord_…\n  swapctl order qr ord_… --address-only"
    )]
    Qr {
        order_id: String,
        /// The address-only code instead of the one with the amount.
        #[arg(long)]
        address_only: bool,
    },
    /// Sandbox only: simulate a deposit to the order's address.
    #[command(
        after_help = "Examples:\n  swapctl order deposit ord_… 0.05\n  swapctl order deposit ord_… 0.05 --confirmations 3"
    )]
    Deposit {
        order_id: String,
        amount: String,
        #[arg(long)]
        confirmations: Option<u32>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ChoiceArg {
    Exchange,
    Refund,
}

#[derive(Debug, Args)]
pub struct CreateOrderArgs {
    /// A `createToken` from `resolve` (locks the route's terms).
    #[arg(long, conflicts_with_all = ["from", "to", "amount"])]
    pub token: Option<String>,
    #[arg(long, requires_all = ["to", "amount"])]
    pub from: Option<String>,
    #[arg(long)]
    pub to: Option<String>,
    #[arg(long)]
    pub amount: Option<String>,
    #[arg(long, value_enum)]
    pub direction: Option<DirectionArg>,
    #[arg(long = "type", value_enum)]
    pub rate: Option<RateArg>,
    /// Where the output is paid.
    #[arg(long)]
    pub to_address: String,
    /// Destination tag or memo, on networks that use one.
    #[arg(long)]
    pub tag: Option<String>,
    #[arg(long)]
    pub refund_address: Option<String>,
    #[arg(long)]
    pub refund_tag: Option<String>,
    /// Status e-mails go here.
    #[arg(long)]
    pub email: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// Subscribe a URL to order events; prints the signing secret once.
    #[command(after_help = "Examples:
  swapctl webhooks create --url https://shop.example/hooks/swapd --events order.completed,order.failed
  swapctl webhooks create --url http://127.0.0.1:8787/ --events all   # sandbox, with `webhooks listen`")]
    Create {
        #[arg(long)]
        url: String,
        /// Comma-separated event types, or `all`.
        #[arg(long, value_delimiter = ',', required = true)]
        events: Vec<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// Your subscriptions.
    #[command(after_help = "Example:\n  swapctl webhooks list")]
    List,
    /// Change a subscription (only what is given).
    #[command(after_help = "Examples:
  swapctl webhooks update whk_… --events order.completed
  swapctl webhooks update whk_… --disable
  swapctl webhooks update whk_… --clear-description")]
    Update {
        webhook_id: String,
        #[arg(long)]
        url: Option<String>,
        #[arg(long, value_delimiter = ',')]
        events: Option<Vec<String>>,
        #[arg(long, conflicts_with = "clear_description")]
        description: Option<String>,
        #[arg(long)]
        clear_description: bool,
        #[arg(long, conflicts_with = "disable")]
        enable: bool,
        #[arg(long)]
        disable: bool,
    },
    /// A new signing secret; the old one keeps signing for the grace period.
    #[command(after_help = "Examples:
  swapctl webhooks rotate whk_…                  # old secret valid 24 h more
  swapctl webhooks rotate whk_… --grace 0        # leaked: retire it now")]
    Rotate {
        webhook_id: String,
        /// Seconds the old secret keeps signing (0 to 604800).
        #[arg(long)]
        grace: Option<i64>,
        /// Rotate although the previous rotation's grace is still running.
        #[arg(long)]
        force: bool,
    },
    /// Send events again: one by id, or every event of a window.
    #[command(after_help = "Examples:
  swapctl webhooks replay whk_… --event evt_…
  swapctl webhooks replay whk_… --since 1800000000 --limit 50")]
    Replay {
        webhook_id: String,
        #[arg(long, conflicts_with_all = ["since", "until"])]
        event: Option<String>,
        /// Unix seconds.
        #[arg(long)]
        since: Option<i64>,
        #[arg(long)]
        until: Option<i64>,
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Send a signed test delivery now; prints its status code and latency.
    #[command(after_help = "Example:\n  swapctl webhooks test whk_… --event-type order.completed")]
    Test {
        webhook_id: String,
        #[arg(long)]
        event_type: Option<String>,
    },
    /// The newest deliveries of a subscription and their attempts.
    #[command(after_help = "Example:\n  swapctl webhooks deliveries whk_… --limit 5")]
    Deliveries {
        webhook_id: String,
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Run a local receiver that verifies each delivery's signature and prints it.
    #[command(after_help = "Examples:
  swapctl webhooks listen --secret whsec_…
  swapctl webhooks listen --listen 127.0.0.1:9000 --secret whsec_new… --secret whsec_old… --count 1

Unverified deliveries are answered 401 and reported on stderr.")]
    Listen {
        /// Where to listen.
        #[arg(long, default_value = "127.0.0.1:8787")]
        listen: SocketAddr,
        /// Signing secret(s); give the old and the new one during a rotation.
        #[arg(
            long,
            required = true,
            env = "SWAPD_WEBHOOK_SECRET",
            hide_env_values = true
        )]
        secret: Vec<String>,
        /// Exit after this many verified deliveries.
        #[arg(long)]
        count: Option<u64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum OnchainCommand {
    /// The execution plan of an onchain route card, for a wallet.
    #[command(
        after_help = "Example:\n  swapctl onchain resolve rqq_… --wallet 0x52908400098527886E0F7030069857D2E4169EE7"
    )]
    Resolve {
        route_quote_id: String,
        #[arg(long)]
        wallet: String,
        #[arg(long)]
        wallet_namespace: Option<String>,
        #[arg(long)]
        slippage_bps: Option<u32>,
    },
    /// Report what the wallet sent: a transaction hash, or the signatures of gasless steps.
    #[command(after_help = "Examples:
  swapctl onchain report xpl_… --token xat_… --wallet 0x5290… --tx-hash 0xabab…01
  swapctl onchain report xpl_… --token xat_… --wallet 0x5290… --signatures '[{\"signatureId\":\"…\",\"purpose\":\"permit\",\"signature\":\"0x…\"}]'")]
    Report {
        execution_plan_id: String,
        /// The plan's access token (`executionAccessToken`).
        #[arg(long)]
        token: String,
        #[arg(long)]
        wallet: String,
        /// `eip155` or `solana` (inferred from the wallet when left out).
        #[arg(long)]
        namespace: Option<String>,
        #[arg(long, conflicts_with = "signatures")]
        tx_hash: Option<String>,
        /// A JSON array of `{signatureId, purpose, signature}` (the plan's signature requests, signed).
        #[arg(long)]
        signatures: Option<String>,
    },
    /// Where an execution stands.
    #[command(
        after_help = "Examples:\n  swapctl onchain status xpl_… --token xat_…\n  swapctl onchain status xpl_… --token xat_… --wait"
    )]
    Status {
        execution_plan_id: String,
        #[arg(long)]
        token: String,
        /// Poll until the execution is done or failed.
        #[arg(long)]
        wait: bool,
    },
}

#[derive(Debug, Args)]
pub struct X402Args {
    #[arg(value_enum)]
    pub method: HttpMethod,
    /// `/api/x402/…`.
    pub path: String,
    /// Query parameter `name=value` (repeatable).
    #[arg(short, long = "query", value_name = "NAME=VALUE")]
    pub query: Vec<String>,
    /// JSON body of a POST.
    #[arg(long)]
    pub body: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HttpMethod {
    Get,
    Post,
}

#[derive(Debug, Subcommand)]
pub enum MarketIntelCommand {
    /// Queue a job (paid with the EVM key; owned by the signed-in wallet).
    #[command(after_help = "Examples:
  swapctl market-intel create pair-depth --from BTC --to ETH --steps 6
  swapctl market-intel create route-scan --from BTC --to USDTTRC --amount 0.5 --wait
  swapctl market-intel create rate-history --from BTC --to ETH --window-secs 86400 --buckets 24")]
    Create {
        #[arg(value_enum)]
        kind: JobKind,
        #[arg(long)]
        from: String,
        #[arg(long)]
        to: String,
        #[arg(long)]
        amount: Option<String>,
        #[arg(long, value_enum)]
        direction: Option<DirectionArg>,
        #[arg(long)]
        steps: Option<u32>,
        #[arg(long)]
        window_secs: Option<i64>,
        #[arg(long)]
        buckets: Option<u32>,
        /// Poll until the job has finished.
        #[arg(long)]
        wait: bool,
    },
    /// A job and, once it has finished, its result (free for its wallet).
    #[command(
        after_help = "Examples:\n  swapctl market-intel show job_…\n  swapctl market-intel show job_… --wait"
    )]
    Show {
        job_id: String,
        #[arg(long)]
        wait: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum JobKind {
    PairDepth,
    RouteScan,
    RateHistory,
}

impl JobKind {
    pub fn wire(self) -> &'static str {
        match self {
            JobKind::PairDepth => "pair_depth",
            JobKind::RouteScan => "route_scan",
            JobKind::RateHistory => "rate_history",
        }
    }
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// swapd's data directory: the demo creates its API key there with `swapd keys create`
    /// (otherwise it uses SWAPD_API_KEY and SWAPD_API_SECRET).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The swapd binary [default: next to swapctl, else on PATH].
    #[arg(long, value_name = "PATH")]
    pub swapd_bin: Option<PathBuf>,
    /// The most seconds one step may take.
    #[arg(long, default_value_t = 120)]
    pub step_timeout: u64,
    /// After the tour, run this many swaps across the providers and show their scorecards
    /// (a few dozen make every provider's figures show: docs/market.md).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub swaps: u32,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every command a user can run shows examples in its `--help`.
    #[test]
    fn every_command_has_examples() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            let path = format!("{path} {}", command.get_name());
            let subcommands: Vec<_> = command.get_subcommands().collect();
            if subcommands.is_empty() || command.get_name() == "swapctl" {
                let help = command
                    .get_after_help()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                if !help.contains("Example") {
                    missing.push(path.clone());
                }
            }
            for sub in subcommands {
                if sub.get_name() != "help" {
                    walk(sub, &path, missing);
                }
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "", &mut missing);
        assert!(missing.is_empty(), "no examples in: {missing:?}");
        Cli::command().debug_assert();
    }
}
