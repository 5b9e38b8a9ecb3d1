use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Parser;
use swapd::app::{Node, Roles, Runtime, cancel_on_signal, open_store};
use swapd::cli::{Cli, Command, ConfigCommand, ConsoleCommand};
use swapd::config::Config;
use swapd::{affiliates, keys, logging};
use swapd_core::Mode;
use tokio_util::sync::CancellationToken;

/// mimalloc rather than the system allocator: a request allocates and frees many small
/// buffers, where glibc's malloc showed as the largest cost in profiles (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(&cli.overrides()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("error: {error}");
            eprintln!(
                "hint: `swapd config show` prints the effective configuration; see docs/configuration.md"
            );
            return ExitCode::from(2);
        }
    };
    let telemetry = match swapd::telemetry::Telemetry::start(&config.telemetry) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("error: telemetry.otlp_endpoint: {error:#}");
            return ExitCode::from(2);
        }
    };
    logging::init(&config.log, telemetry.as_ref());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("start the tokio runtime");
    match runtime.block_on(run(cli.command, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, config: Config) -> anyhow::Result<()> {
    match command {
        Command::Serve(args) => serve(config, Roles::from_flags(args.api, args.worker)).await,
        Command::Healthcheck { url } => healthcheck(&config, url).await,
        Command::Migrate => {
            let store = open_store(&config).await?;
            store.migrate().await.context("migration failed")?;
            let versions = store.applied_migrations().await?;
            println!(
                "{} database is at migration {} ({} applied)",
                store.backend(),
                versions.last().copied().unwrap_or_default(),
                versions.len()
            );
            Ok(())
        }
        Command::Keys(command) => keys::run(&Runtime::open(config).await?, command).await,
        Command::Affiliates(command) => {
            affiliates::run(&Runtime::open(config).await?, command).await
        }
        Command::Console(ConsoleCommand::HashPassword) => {
            let mut password = String::new();
            std::io::stdin()
                .read_line(&mut password)
                .context("cannot read the password from standard input")?;
            let password = password.trim_end_matches(['\r', '\n']);
            if password.chars().count() < 12 {
                anyhow::bail!("the operator password must have at least 12 characters");
            }
            let hash =
                swapd_api::console::Console::hash_password(password).map_err(anyhow::Error::msg)?;
            println!("{hash}");
            Ok(())
        }
        Command::Config(ConfigCommand::Show) => {
            print!("{}", config.redacted_toml());
            Ok(())
        }
        Command::Openapi { out, check } => openapi(&out, check),
    }
}

async fn serve(config: Config, roles: Roles) -> anyhow::Result<()> {
    let mode = config.mode;
    let database = config.database();
    let data_dir = config.data_dir.display().to_string();
    let public_url = config.origin();
    let app = Node::build(Runtime::open(config).await?, roles).await?;
    println!("swapd {} ({})", env!("CARGO_PKG_VERSION"), roles.describe());
    println!("  mode:      {}", mode.as_str());
    println!("  database:  {database}");
    if let Some(addr) = app.local_addr() {
        println!("  listening: http://{addr}  (public URL {public_url})");
        println!("  health:    http://{addr}/healthz   docs: http://{addr}/api/v3/openapi.json");
    }
    if mode == Mode::Sandbox {
        println!();
        println!("Create the first API key (its secret is shown once):");
        println!(
            "  {} keys create --data-dir {data_dir} --name demo --permissions prices:read,orders:create,orders:read,orders:update,notifications:write,webhooks:read,webhooks:write",
            invocation()
        );
    }
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    app.run_until_stopped(shutdown).await?;
    println!("swapd stopped");
    Ok(())
}

fn openapi(out: &Path, check: bool) -> anyhow::Result<()> {
    let documents = [
        ("v3.json", swapd_api::openapi::business_document()),
        ("x402.json", swapd_api::openapi::x402_document()),
    ];
    let mut stale = Vec::new();
    for (name, generated) in documents {
        let path = out.join(name);
        if check {
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            if committed != generated {
                stale.push(path.display().to_string());
            }
        } else {
            std::fs::create_dir_all(out)?;
            std::fs::write(&path, generated)
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    if !stale.is_empty() {
        bail!(
            "{} differ from the code; regenerate with `swapd openapi --out {}`",
            stale.join(", "),
            out.display()
        );
    }
    Ok(())
}

/// How the user ran this binary: `cargo run -q -p swapd --` from a checkout, else `swapd`.
/// The readiness URL `text` names: itself, or `/readyz` of a node's base URL
/// (`http://127.0.0.1:8080`, as a user types it).
fn readiness_url(text: &str) -> anyhow::Result<String> {
    let mut url = url::Url::parse(text)
        .with_context(|| format!("--url {text}: not a URL (e.g. http://127.0.0.1:8080)"))?;
    if url.path() == "/" {
        url.set_path("/readyz");
    }
    Ok(url.to_string())
}

fn invocation() -> &'static str {
    let program = std::env::args().next().unwrap_or_default();
    if program.contains("/target/") {
        "cargo run -q -p swapd --"
    } else {
        "swapd"
    }
}

/// Whether this node answers ready at `url` (a node's base URL means its `/readyz`; by default
/// `/readyz` at the listen address, an unspecified address asked on loopback), within a few
/// seconds.
async fn healthcheck(config: &Config, url: Option<String>) -> anyhow::Result<()> {
    let url = match url {
        Some(url) => readiness_url(&url)?,
        None => {
            let mut address = config.listen;
            if address.ip().is_unspecified() {
                address.set_ip(match address.ip() {
                    std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            format!("http://{address}/readyz")
        }
    };
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(3))
        .build()?;
    let answer = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("{url} does not answer"))?;
    if !answer.status().is_success() {
        bail!("{url} answered {}: not ready", answer.status());
    }
    println!("ready");
    Ok(())
}
