//! Hosts for the partition test: one network namespace per node, each joined by a veth pair to
//! a bridge in this namespace, whose address (the "host") carries the relays to PostgreSQL and
//! Redis and the webhook receiver. Faults are `iptables` rules inside a node's namespace, so
//! they touch nothing but the test's own addresses; dropping the namespaces and the bridge
//! removes them all.

use std::net::Ipv4Addr;
use std::process::Command;

/// libfaketime, preloaded into a process whose clock runs ahead (Debian's `faketime` package;
/// its `faketime` wrapper is not used: it forks, so a signal to it would not reach swapd).
pub const FAKETIME_LIBRARY: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// What the test needs of this machine, or why it cannot run.
pub fn missing_tools() -> Option<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !root {
        return Some("network namespaces need root".into());
    }
    if !std::path::Path::new(FAKETIME_LIBRARY).exists() {
        return Some(format!(
            "{FAKETIME_LIBRARY} is missing: apt-get install faketime"
        ));
    }
    for (tool, package) in [("ip", "iproute2"), ("iptables", "iptables")] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("`{tool}` is missing: apt-get install {package}"));
        }
    }
    None
}

/// The bridge, the namespaces on it, and their addresses.
pub struct Net {
    tag: String,
    pub host: Ipv4Addr,
    nodes: Vec<Ipv4Addr>,
}

/// A fault inside one node's namespace.
#[derive(Debug, Clone, Copy)]
pub enum Cut {
    /// Packets to and from the host's `port` dropped.
    Port(u16),
    /// A share of packets to and from the host's `port` dropped at random.
    Loss { port: u16, percent: u8 },
    /// Every packet through the node's link dropped: nobody reaches it, it reaches nobody.
    Everyone,
}

impl Net {
    /// `nodes` namespaces on a /24 of 10.0.0.0/8 picked by this process's id.
    pub fn create(nodes: usize) -> Net {
        let pid = std::process::id();
        let tag = format!("sw{}", pid % 100_000);
        let mut net = Net {
            host: Ipv4Addr::new(10, 100 + (pid % 100) as u8, ((pid / 100) % 250) as u8, 1),
            nodes: Vec::new(),
            tag,
        };
        let bridge = net.bridge();
        sh(&["ip", "link", "add", &bridge, "type", "bridge"]);
        sh(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", net.host),
            "dev",
            &bridge,
        ]);
        sh(&["ip", "link", "set", &bridge, "up"]);
        for i in 0..nodes {
            let [a, b, c, _] = net.host.octets();
            let address = Ipv4Addr::new(a, b, c, 10 + i as u8);
            let ns = net.namespace(i);
            let (outside, inside) = (format!("{}v{i}", net.tag), net.link(i));
            sh(&["ip", "netns", "add", &ns]);
            net.nodes.push(address);
            sh(&[
                "ip", "link", "add", &outside, "type", "veth", "peer", "name", &inside,
            ]);
            sh(&["ip", "link", "set", &inside, "netns", &ns]);
            sh(&["ip", "link", "set", &outside, "master", &bridge]);
            sh(&["ip", "link", "set", &outside, "up"]);
            let within = |args: &[&str]| {
                let mut all = vec!["ip", "netns", "exec", &ns];
                all.extend_from_slice(args);
                sh(&all);
            };
            within(&["ip", "link", "set", "lo", "up"]);
            within(&[
                "ip",
                "addr",
                "add",
                &format!("{address}/24"),
                "dev",
                &inside,
            ]);
            within(&["ip", "link", "set", &inside, "up"]);
        }
        net
    }

    fn bridge(&self) -> String {
        format!("{}br", self.tag)
    }

    fn namespace(&self, node: usize) -> String {
        format!("swapd-{}-n{node}", self.tag)
    }

    fn link(&self, node: usize) -> String {
        format!("{}e{node}", self.tag)
    }

    pub fn address(&self, node: usize) -> Ipv4Addr {
        self.nodes[node]
    }

    /// A command run inside `node`'s namespace: `program` and `args` follow `ip netns exec`.
    pub fn command(&self, node: usize, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.namespace(node), program]);
        command
    }

    /// A socket listening on `node`'s own loopback at `port` (0: a free one), opened from a
    /// thread that joins the namespace: the node reaches it as `127.0.0.1`, which the sandbox
    /// lets webhooks go to, and the socket stays in the namespace, served from here.
    pub fn listen_inside(&self, node: usize, port: u16) -> std::net::TcpListener {
        let path = format!("/var/run/netns/{}", self.namespace(node));
        std::thread::spawn(move || {
            let namespace = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            rustix::thread::move_into_link_name_space(
                std::os::fd::AsFd::as_fd(&namespace),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .unwrap_or_else(|e| panic!("setns {path}: {e}"));
            let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
            listener.set_nonblocking(true).unwrap();
            listener
        })
        .join()
        .unwrap()
    }

    /// Adds `cut` to `node`'s faults.
    pub fn cut(&self, node: usize, cut: Cut) {
        let host = self.host.to_string();
        let link = self.link(node);
        let rules: Vec<Vec<String>> = match cut {
            Cut::Port(port) => port_rules(&host, port, &[]),
            Cut::Loss { port, percent } => port_rules(
                &host,
                port,
                &[
                    "-m",
                    "statistic",
                    "--mode",
                    "random",
                    "--probability",
                    &format!("0.{percent:02}"),
                ],
            ),
            Cut::Everyone => vec![
                words(&["-A", "INPUT", "-i", &link, "-j", "DROP"]),
                words(&["-A", "OUTPUT", "-o", &link, "-j", "DROP"]),
            ],
        };
        for rule in rules {
            self.iptables(node, &rule.iter().map(String::as_str).collect::<Vec<_>>());
        }
    }

    /// Removes every fault of `node`.
    pub fn heal(&self, node: usize) {
        self.iptables(node, &["-F", "INPUT"]);
        self.iptables(node, &["-F", "OUTPUT"]);
    }

    fn iptables(&self, node: usize, rule: &[&str]) {
        let ns = self.namespace(node);
        let mut all = vec!["ip", "netns", "exec", &ns, "iptables", "-w"];
        all.extend_from_slice(rule);
        sh(&all);
    }
}

fn words(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| (*p).to_owned()).collect()
}

/// Drops on both directions of the host's `port`, with `matching` added to each rule.
fn port_rules(host: &str, port: u16, matching: &[&str]) -> Vec<Vec<String>> {
    let port = port.to_string();
    let mut out = words(&["-A", "OUTPUT", "-d", host, "-p", "tcp", "--dport", &port]);
    let mut into = words(&["-A", "INPUT", "-s", host, "-p", "tcp", "--sport", &port]);
    for rule in [&mut out, &mut into] {
        rule.extend(words(matching));
        rule.extend(words(&["-j", "DROP"]));
    }
    vec![out, into]
}

impl Drop for Net {
    fn drop(&mut self) {
        for node in 0..self.nodes.len() {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.namespace(node)])
                .status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge()])
            .status();
    }
}

fn sh(args: &[&str]) {
    let output = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", args[0]));
    assert!(
        output.status.success(),
        "`{}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}
