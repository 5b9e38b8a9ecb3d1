//! `swapctl mcp` over stdio, as an agent host runs it, against an in-process sandbox swapd:
//! the handshake, the tools (the server's own), a free call, a call paid from the wallet key,
//! the session's spending cap, and the Business API key instead of a wallet.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};
use support::{EVM_KEY, Sandbox};

/// A `swapctl mcp` child speaking JSON-RPC lines on its stdin and stdout.
struct Agent {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Agent {
    fn start(sandbox: &Sandbox, wallet: bool, extra: &[&str]) -> Agent {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("swapctl"));
        for (name, _) in std::env::vars() {
            if name.starts_with("SWAPD_") || name.starts_with("SWAPCTL_") {
                command.env_remove(name);
            }
        }
        command
            .env("HOME", &sandbox.dir)
            .env("XDG_CONFIG_HOME", &sandbox.dir)
            .env("SWAPD_URL", &sandbox.url);
        if wallet {
            command.env("SWAPD_EVM_KEY", EVM_KEY).arg("--x402");
        } else {
            command
                .env("SWAPD_API_KEY", &sandbox.api_key)
                .env("SWAPD_API_SECRET", &sandbox.api_secret);
        }
        let mut child = command
            .arg("mcp")
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut agent = Agent {
            child,
            input,
            output,
            next_id: 1,
        };
        let hello = agent.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test-host", "version": "1"}
            }),
        );
        assert_eq!(hello["serverInfo"]["name"], "swapd", "{hello}");
        assert!(hello["capabilities"]["tools"].is_object());
        agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        agent
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// Sends a request and returns its result (answers to other ids are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "swapctl mcp closed stdout"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{message}");
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const ROUTES: fn() -> Value = || json!({"fromCcy": "BTC", "toCcy": "ETH", "amount": "0.1"});

#[test]
fn a_local_agent_calls_the_servers_tools_paid_from_its_wallet() {
    let sandbox = Sandbox::start();
    let mut agent = Agent::start(&sandbox, true, &[]);

    let listed = agent.request("tools/list", json!({}));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let served: Vec<String> = swapd_api::mcp::tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, served, "the same tools as the server's /mcp");

    let free = agent.call("readiness", json!({}));
    assert_eq!(free["isError"], false, "{free}");
    assert_eq!(free["structuredContent"]["x402Version"], 2);

    let paid = agent.call("discover_routes", ROUTES());
    assert_eq!(paid["isError"], false, "{paid}");
    assert!(paid["structuredContent"]["count"].as_u64().unwrap() >= 1);
    let settlement = &paid["_meta"]["x402/payment-response"];
    assert_eq!(settlement["success"], true, "{paid}");
    assert_eq!(settlement["payer"], support::EVM_WALLET);
}

#[test]
fn the_session_never_spends_past_its_cap() {
    let sandbox = Sandbox::start();
    let mut agent = Agent::start(&sandbox, true, &["--max-spend-usd", "0"]);
    let refused = agent.call("discover_routes", ROUTES());
    assert_eq!(refused["isError"], true);
    assert_eq!(
        refused["structuredContent"]["code"], "quota_exceeded",
        "{refused}"
    );
    assert!(
        refused.get("_meta").is_none_or(Value::is_null),
        "nothing was paid"
    );
}

#[test]
fn with_an_api_key_the_tools_call_the_business_api() {
    let sandbox = Sandbox::start();
    let mut agent = Agent::start(&sandbox, false, &[]);
    let routes = agent.call("discover_routes", ROUTES());
    assert_eq!(routes["isError"], false, "{routes}");
    assert!(routes["structuredContent"]["count"].as_u64().unwrap() >= 1);
    assert!(
        routes.get("_meta").is_none_or(Value::is_null),
        "nothing is paid with a key"
    );

    let order = agent.call(
        "create_order",
        json!({
            "fromCcy": "BTC",
            "toCcy": "USDTTRC",
            "amount": "0.05",
            "toAddress": support::TRON_ADDRESS,
            "idempotencyKey": "mcp-key-order-1",
        }),
    );
    assert_eq!(order["isError"], false, "{order}");
    let id = order["structuredContent"]["orderId"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = agent.call("get_order", json!({"orderId": id}));
    assert_eq!(read["structuredContent"]["orderId"], id.as_str());
}
