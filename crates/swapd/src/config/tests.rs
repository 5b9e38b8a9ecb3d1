// `Jail::expect_with` fixes the closure's error type to figment's (large) `Error`.
#![allow(clippy::result_large_err)]

use super::value::{HttpUrl, Secret};
use super::*;
use figment::Jail;

/// (environment, swapd.toml text, the setting the error must name)
type BadCase<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a str);

fn load(jail_env: &[(&str, &str)], toml: Option<&str>) -> Result<Config, ConfigError> {
    let mut result = None;
    Jail::expect_with(|jail| {
        for (k, v) in jail_env {
            jail.set_env(k, v);
        }
        if let Some(text) = toml {
            jail.create_file(DEFAULT_CONFIG_FILE, text)?;
        }
        result = Some(Config::load(&Overrides::default()));
        Ok(())
    });
    result.unwrap()
}

#[test]
fn zero_configuration_is_a_sandbox_on_localhost_with_sqlite_in_data() {
    let config = load(&[], None).unwrap();
    assert_eq!(config.mode, Mode::Sandbox);
    assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(config.database().expose(), "sqlite://./data/swapd.db");
    assert_eq!(config.origin(), "http://127.0.0.1:8080");
}

#[test]
fn layers_apply_in_order_file_then_env_then_flags() {
    let toml = "listen = \"127.0.0.1:9000\"\ndata_dir = \"from-file\"\n[log]\nformat = \"json\"\n";
    let config = load(
        &[
            ("SWAPD_DATA_DIR", "from-env"),
            ("SWAPD_DATABASE__MAX_CONNECTIONS", "3"),
        ],
        Some(toml),
    )
    .unwrap();
    assert_eq!(config.listen.port(), 9000);
    assert_eq!(config.data_dir, PathBuf::from("from-env"));
    assert_eq!(config.database.max_connections, 3);
    assert_eq!(config.log.format, LogFormat::Json);

    Jail::expect_with(|jail| {
        jail.create_file(DEFAULT_CONFIG_FILE, toml)?;
        jail.set_env("SWAPD_DATA_DIR", "from-env");
        let overrides = Overrides {
            data_dir: Some("from-flag".into()),
            listen: Some("127.0.0.1:7000".parse().unwrap()),
            ..Overrides::default()
        };
        let config = Config::load(&overrides).unwrap();
        assert_eq!(config.data_dir, PathBuf::from("from-flag"));
        assert_eq!(config.listen.port(), 7000);
        assert_eq!(config.database().expose(), "sqlite://from-flag/swapd.db");
        Ok(())
    });
}

#[test]
fn every_section_is_set_from_the_environment() {
    let config = load(
        &[
            ("SWAPD_SHUTDOWN__DRAIN_SECS", "9"),
            ("SWAPD_TELEMETRY__OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("SWAPD_FEES__RECONCILE_TOLERANCE_BPS", "7"),
            ("SWAPD_URL", "http://not-a-setting"),
        ],
        None,
    )
    .unwrap();
    assert_eq!(config.shutdown.drain_secs, 9);
    assert_eq!(
        config.telemetry.otlp_endpoint.as_ref().map(HttpUrl::as_str),
        Some("http://127.0.0.1:4318")
    );
    assert_eq!(config.fees.reconcile_tolerance_bps, 7);
    let https = load(
        &[("SWAPD_TELEMETRY__OTLP_ENDPOINT", "https://collector")],
        None,
    );
    assert!(
        https
            .unwrap_err()
            .to_string()
            .contains("telemetry.otlp_endpoint")
    );
}

#[test]
fn the_shipped_example_file_is_valid() {
    let example = include_str!("../../../../swapd.example.toml");
    let config = load(&[], Some(example)).unwrap();
    assert_eq!(config.mode, Mode::Sandbox);
}

#[test]
fn unrelated_swapd_variables_are_not_configuration() {
    let config = load(
        &[
            ("SWAPD_URL", "http://x"),
            ("SWAPD_TEST_POSTGRES_URL", "postgres://x"),
        ],
        None,
    );
    assert!(config.is_ok(), "{config:?}");
}

#[test]
fn bad_values_name_the_setting() {
    let cases: [BadCase; 10] = [
        (&[("SWAPD_LISTEN", "not-an-address")], None, "listen"),
        (&[], Some("listne = \"x\""), "listne"),
        (&[("SWAPD_DATABASE_URL", "mysql://x")], None, "database_url"),
        (&[("SWAPD_MASTER_KEY", "short")], None, "master_key"),
        (&[("SWAPD_X402__PAY_TO", "0x123")], None, "x402.pay_to"),
        (
            &[("SWAPD_PUBLIC_URL", "https://a.example/path")],
            None,
            "public_url",
        ),
        (
            &[("SWAPD_DATABASE__MAX_CONNECTIONS", "0")],
            None,
            "database.max_connections",
        ),
        (
            &[("SWAPD_PROVIDERS__DEADLINE_MS", "10")],
            None,
            "providers.deadline_ms",
        ),
        (
            &[],
            Some("[providers]\nsandbox_stalled = [\"nobody\"]"),
            "providers.sandbox_stalled",
        ),
        (
            &[("SWAPD_MODE", "live")],
            Some("[providers]\nsandbox_failing = [\"atlas\"]"),
            "providers.sandbox_failing",
        ),
    ];
    for (env, toml, key) in cases {
        let err = load(env, toml).unwrap_err().to_string();
        assert!(err.contains(key), "`{err}` should name `{key}`");
    }
}

#[test]
fn live_mode_lists_every_missing_requirement() {
    let err = load(&[("SWAPD_MODE", "live")], None)
        .unwrap_err()
        .to_string();
    for key in [
        "master_key",
        "database_url",
        "x402.facilitator_url",
        "x402.pay_to",
        "providers.live",
    ] {
        assert!(err.contains(key), "`{err}` should name `{key}`");
    }
    let err = load(
        &[
            ("SWAPD_MODE", "live"),
            ("SWAPD_MASTER_KEY", &"ab".repeat(32)),
            ("SWAPD_DATABASE_URL", "postgres://u@h/db"),
            ("SWAPD_X402__FACILITATOR", "http"),
            ("SWAPD_X402__FACILITATOR_URL", "https://facilitator.example"),
            (
                "SWAPD_X402__PAY_TO",
                "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
            ),
        ],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("providers.live") && !err.contains("master_key"),
        "{err}"
    );
}

/// The other live requirements, met.
const LIVE: [(&str, &str); 7] = [
    ("SWAPD_MODE", "live"),
    (
        "SWAPD_MASTER_KEY",
        "abababababababababababababababababababababababababababababababab",
    ),
    ("SWAPD_DATABASE_URL", "postgres://u@h/db"),
    ("SWAPD_X402__FACILITATOR", "http"),
    ("SWAPD_X402__FACILITATOR_URL", "https://facilitator.example"),
    (
        "SWAPD_X402__PAY_TO",
        "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
    ),
    ("SWAPD_MAIL__SMTP_URL", "smtp://mail.example"),
];

#[test]
fn each_live_desk_needs_its_credentials_and_takes_them_from_the_environment() {
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut env: Vec<(&str, &str)> = LIVE.to_vec();
        env.extend_from_slice(extra);
        load(&env, None)
    };
    let err = with(&[("SWAPD_PROVIDERS__LIVE", "[changenow, fixedfloat]")])
        .unwrap_err()
        .to_string();
    for key in [
        "SWAPD_PROVIDERS__CHANGENOW__API_KEY",
        "SWAPD_PROVIDERS__FIXEDFLOAT__API_KEY",
        "SWAPD_PROVIDERS__FIXEDFLOAT__API_SECRET",
    ] {
        assert!(err.contains(key), "`{err}` should name `{key}`");
    }
    let config = with(&[
        ("SWAPD_PROVIDERS__LIVE", "[changenow]"),
        ("SWAPD_PROVIDERS__CHANGENOW__API_KEY", "cn-key"),
        (
            "SWAPD_PROVIDERS__CHANGENOW__BASE_URL",
            "http://127.0.0.1:9/v2/",
        ),
        ("SWAPD_PROVIDERS__CHANGENOW__TIMEOUT_MS", "2500"),
    ])
    .unwrap();
    assert_eq!(config.providers.live, ["changenow"]);
    assert_eq!(
        config
            .providers
            .changenow
            .api_key
            .as_ref()
            .map(Secret::expose),
        Some("cn-key")
    );
    assert_eq!(
        config.providers.changenow.base_url.as_str(),
        "http://127.0.0.1:9/v2/"
    );
    assert_eq!(config.providers.changenow.timeout_ms, 2_500);
    assert_eq!(
        config.providers.fixedfloat.base_url.as_str(),
        swapd_desks::fixedfloat::BASE_URL
    );
    let err = with(&[("SWAPD_PROVIDERS__LIVE", "[bitstamp]")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("changenow, fixedfloat"), "{err}");
    let err = with(&[("SWAPD_PROVIDERS__FIXEDFLOAT__BASE_URL", "ftp://x")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("providers.fixedfloat"), "{err}");
}

#[test]
fn lifi_and_the_chains_it_follows_are_configured_by_file_or_environment() {
    let config = load(
        &[
            ("SWAPD_PROVIDERS__LIFI__API_KEY", "lifi-key"),
            (
                "SWAPD_CHAINS__BASE__RPC_URL",
                "https://base-mainnet.example/v2/node-key",
            ),
        ],
        Some(
            "[chains.eth]\nrpc_url = \"http://127.0.0.1:8545\"\nconfirmations = 20\n\n\
             [providers.lifi]\nintegrator = \"acme\"\n",
        ),
    )
    .unwrap();
    assert_eq!(config.providers.lifi.api_key(), Some("lifi-key"));
    assert_eq!(config.providers.lifi.integrator, "acme");
    assert_eq!(
        config.providers.lifi.base_url.as_str(),
        swapd_onchain::lifi::BASE_URL
    );
    let base = &config.chains["base"];
    assert_eq!(
        base.rpc_url.as_str(),
        "https://base-mainnet.example/v2/node-key"
    );
    assert_eq!(base.confirmations, None);
    assert_eq!(base.timeout_ms, 5_000);
    assert_eq!(config.chains["eth"].confirmations, Some(20));
    assert_eq!(
        ChainConfig::default_confirmations(chain_network("ETH").unwrap()),
        12
    );
    // Solana takes `confirmations` like every chain, as its commitment (fewer than 31:
    // confirmed; unset or more: finalized).
    for (section, confirmations) in [
        (
            "[chains.sol]\nrpc_url = \"http://127.0.0.1:8899\"\nconfirmations = 1\n",
            Some(1),
        ),
        ("[chains.sol]\nrpc_url = \"http://127.0.0.1:8899\"\n", None),
    ] {
        let config = load(&[], Some(section)).unwrap();
        assert_eq!(config.chains["sol"].confirmations, confirmations);
    }

    // Keys in a node's path and LI.FI's key are not shown.
    let shown = config.redacted_toml();
    assert!(
        !shown.contains("node-key") && !shown.contains("lifi-key"),
        "{shown}"
    );
    assert!(
        shown.contains("https://base-mainnet.example/<redacted>"),
        "{shown}"
    );
    assert!(shown.contains("http://127.0.0.1:8545"), "{shown}");

    for (toml, problem) in [
        (
            "[chains.mars]\nrpc_url = \"http://x\"\n",
            "unknown network `mars`",
        ),
        (
            "[chains.xrp]\nrpc_url = \"http://x\"\n",
            "EVM chains and Solana only",
        ),
        ("[chains.base]\nrpc_url = \"ftp://x\"\n", "chains.base"),
        (
            "[chains.base]\nrpc_url = \"http://x\"\nblocks = 3\n",
            "blocks",
        ),
    ] {
        let err = load(&[], Some(toml)).unwrap_err().to_string();
        assert!(err.contains(problem), "`{err}` should say `{problem}`");
    }
    let err = load(&[("SWAPD_PROVIDERS__LIVE", "[lifi, bitstamp]")], None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("changenow, fixedfloat, jupiter, lifi, relay, zerox"),
        "{err}"
    );
    let err = load(
        &[("SWAPD_MODE", "live"), ("SWAPD_PROVIDERS__LIVE", "[zerox]")],
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("SWAPD_PROVIDERS__ZEROX__API_KEY"), "{err}");
}

#[test]
fn show_redacts_secrets_and_passwords() {
    let config = load(
        &[
            ("SWAPD_MASTER_KEY", &"cd".repeat(32)),
            ("SWAPD_DATABASE_URL", "postgres://app:hunter2@db/swapd"),
            ("SWAPD_X402__ACCESS_TOKEN_SECRET", "tok-secret"),
            ("SWAPD_PROVIDERS__CHANGENOW__API_KEY", "cn-key-secret"),
            ("SWAPD_PROVIDERS__FIXEDFLOAT__API_KEY", "ff-key-secret"),
            ("SWAPD_PROVIDERS__FIXEDFLOAT__API_SECRET", "ff-hmac-secret"),
        ],
        None,
    )
    .unwrap();
    let shown = config.redacted_toml();
    for secret in ["cn-key-secret", "ff-key-secret", "ff-hmac-secret"] {
        assert!(!shown.contains(secret), "{secret} shown");
    }
    assert!(!shown.contains(&"cd".repeat(32)));
    assert!(!shown.contains("hunter2"));
    assert!(!shown.contains("tok-secret"));
    assert!(shown.contains("postgres://app:***@db/swapd"));
    assert!(shown.contains("master_key = \"<redacted>\""));
}

#[test]
fn ways_to_pay_are_a_list_and_the_single_network_keys_its_one_entry() {
    // Today's keys: one way to pay, shown as the list by `config show`.
    let single = load(
        &[
            ("SWAPD_X402__NETWORK", "eip155:137"),
            (
                "SWAPD_X402__PAY_TO",
                "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
            ),
        ],
        None,
    )
    .unwrap();
    let ways = single.x402.ways_to_pay(Mode::Sandbox).unwrap();
    assert_eq!(ways.len(), 1);
    assert_eq!(ways[0].network.as_str(), "eip155:137");
    assert_eq!(ways[0].facilitator_url, None, "the ledger");
    let shown = single.redacted_toml();
    assert!(
        shown.contains("[[x402.accepts]]") && shown.contains("network = \"eip155:137\""),
        "{shown}"
    );
    // Nothing set: in the sandbox USDC on Base, then on Solana, and `upto` on Base for jobs,
    // all settled by the ledger; in live mode Base.
    let default = load(&[], None).unwrap();
    let ways = |ways: Vec<X402Accept>| {
        ways.iter()
            .map(|way| {
                (
                    way.network.to_string(),
                    way.scheme.as_str(),
                    way.facilitator_url.is_none(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ways(default.x402.ways_to_pay(Mode::Sandbox).unwrap()),
        [
            ("eip155:8453".to_owned(), "exact", true),
            (
                "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".to_owned(),
                "exact",
                true
            ),
            ("eip155:8453".to_owned(), "upto", true),
        ]
    );
    assert!(
        default
            .redacted_toml()
            .contains("network = \"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\"")
    );
    assert_eq!(
        ways(default.x402.ways_to_pay(Mode::Live).unwrap()),
        [("eip155:8453".to_owned(), "exact", true)]
    );
    // `upto` is EVM's, and pays jobs only: an `exact` way must be listed too.
    let upto_on_solana = "[[x402.accepts]]\nnetwork = \"eip155:8453\"\n[[x402.accepts]]\nnetwork = \"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\"\nscheme = \"upto\"\n";
    let err = load(&[], Some(upto_on_solana)).unwrap_err().to_string();
    assert!(err.contains("EVM networks only"), "{err}");
    let upto_only = "[[x402.accepts]]\nnetwork = \"eip155:8453\"\nscheme = \"upto\"\n";
    let err = load(&[], Some(upto_only)).unwrap_err().to_string();
    assert!(err.contains("list an `exact` way"), "{err}");

    let listed = r#"
[x402]
price_usd = "0.10"

[[x402.accepts]]
network = "eip155:8453"
pay_to = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
facilitator_url = "https://facilitator.example"

[[x402.accepts]]
network = "eip155:84532"
scheme = "exact"
asset = { address = "0x5FbDB2315678afecb367f032d93F642f64180aa3", name = "Test Dollar", version = "1", decimals = 18 }
"#;
    let config = load(&[], Some(listed)).unwrap();
    let ways = config.x402.ways_to_pay(Mode::Sandbox).unwrap();
    let networks: Vec<&str> = ways.iter().map(|way| way.network.as_str()).collect();
    assert_eq!(networks, ["eip155:8453", "eip155:84532"], "in order");
    assert_eq!(ways[1].asset.as_ref().unwrap().decimals, 18);
    assert_eq!(ways[0].asset, None, "USDC");
    // What `config show` prints loads back to the same ways to pay.
    let again = load(&[], Some(&config.redacted_toml())).unwrap();
    assert_eq!(again.x402.ways_to_pay(Mode::Sandbox).unwrap(), ways);

    // The list and the single-network keys together are ambiguous.
    let err = load(&[("SWAPD_X402__NETWORK", "eip155:1")], Some(listed))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("x402.network") && err.contains("x402.accepts"),
        "{err}"
    );
    // Each way once; only EVM networks for now; the single form's HTTP facilitator needs its URL.
    let twice = format!("{listed}\n[[x402.accepts]]\nnetwork = \"eip155:8453\"\n");
    let err = load(&[], Some(&twice)).unwrap_err().to_string();
    assert!(err.contains("listed twice"), "{err}");
    let cosmos = "[[x402.accepts]]\nnetwork = \"cosmos:cosmoshub-4\"\n";
    let err = load(&[], Some(cosmos)).unwrap_err().to_string();
    assert!(err.contains("x402.accepts.network"), "{err}");
    // Solana: a base58 owner and mint, no EIP-712 domain; an address of another network is
    // refused.
    let solana = "[[x402.accepts]]\nnetwork = \"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\"\npay_to = \"2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4\"\n";
    let ways = load(&[], Some(solana))
        .unwrap()
        .x402
        .ways_to_pay(Mode::Sandbox)
        .unwrap();
    assert_eq!(
        ways[0].pay_to.as_ref().unwrap().to_string(),
        "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4"
    );
    let evm_to_solana = "[[x402.accepts]]\nnetwork = \"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp\"\npay_to = \"0x209693Bc6afc0C5328bA36FaF03C514EF312287C\"\n";
    let err = load(&[], Some(evm_to_solana)).unwrap_err().to_string();
    assert!(
        err.contains("x402.pay_to") && err.contains("not an address of"),
        "{err}"
    );
    let domain_on_solana = format!(
        "{solana}asset = {{ address = \"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v\", name = \"USD Coin\" }}\n"
    );
    let err = load(&[], Some(&domain_on_solana)).unwrap_err().to_string();
    assert!(err.contains("no EIP-712 domain"), "{err}");
    let err = load(&[("SWAPD_X402__FACILITATOR", "http")], None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("x402.facilitator_url"), "{err}");
    let unknown = "[[x402.accepts]]\nnetwork = \"eip155:8453\"\nprice = \"1\"\n";
    let err = load(&[], Some(unknown)).unwrap_err().to_string();
    assert!(err.contains("price"), "{err}");

    // Live: every way to pay needs its facilitator and seller address.
    let live = [
        ("SWAPD_MODE", "live"),
        ("SWAPD_MASTER_KEY", LIVE[1].1),
        ("SWAPD_DATABASE_URL", "postgres://u@h/db"),
    ];
    let err = load(&live, Some(listed)).unwrap_err().to_string();
    assert!(
        err.contains("x402.accepts: facilitator_url of every way to pay")
            && err.contains("x402.accepts: pay_to of every way to pay"),
        "{err}"
    );
}
