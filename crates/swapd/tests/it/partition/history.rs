//! The partition test's history: every client operation as the clients saw it, the faults with
//! their windows, and the checker that reads them with the final records of the database, the
//! sandbox chain and desks, and the webhook receiver (docs/reliability.md, "The partition
//! test"). The checker is plain data in, figures and violations out, so that its own tests can
//! feed it histories that break each promise.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::time::Duration;

/// What a client asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Kind {
    CreateOrder,
    Deposit,
    Emergency,
    ReadOrder,
    /// A signed read, then the same signed request again on another node.
    Read,
    ReplayedNonce,
    X402Challenge,
    X402Order,
}

/// How a request ended, as its client saw it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Outcome {
    /// An HTTP answer; `code` is the error envelope's code.
    Answered { status: u16, code: Option<String> },
    /// No connection within the connect timeout: the node was out of the client's reach.
    Unreachable,
    /// Connected, and no answer within the client's deadline.
    NoAnswer,
}

impl Outcome {
    pub fn label(&self) -> String {
        match self {
            Outcome::Answered { status, code: None } => status.to_string(),
            Outcome::Answered {
                status,
                code: Some(code),
            } => format!("{status} {code}"),
            Outcome::Unreachable => "unreachable".into(),
            Outcome::NoAnswer => "no answer".into(),
        }
    }

    fn success(&self) -> bool {
        matches!(self, Outcome::Answered { status, .. } if (200..300).contains(status))
    }
}

/// One request.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Op {
    pub kind: Kind,
    pub node: usize,
    /// Milliseconds since the run started.
    pub sent_ms: u64,
    pub took_ms: u64,
    pub idempotency_key: Option<String>,
    /// The HMAC nonce, or for x402 `payer:nonce` of the payment.
    pub nonce: Option<String>,
    /// The order the request created or acted on, when known.
    pub order: Option<String>,
    /// A deposit's transaction as answered.
    pub tx_id: Option<String>,
    pub outcome: Outcome,
}

/// A fault, on the API node or worker `node` (`None`: every node), from `from_ms` to `to_ms`.
#[derive(Debug, Clone)]
pub struct FaultWindow {
    pub name: &'static str,
    pub node: Option<usize>,
    /// Whether clients could not reach the node meanwhile.
    pub isolates: bool,
    pub from_ms: u64,
    pub to_ms: u64,
    /// From the fault until the faulted node's readiness answered not ready.
    pub not_ready_after: Option<Duration>,
    /// From the heal until the faulted node answered ready again.
    pub recovery: Option<Duration>,
}

/// An order as the database holds it at the end.
#[derive(Debug, Clone)]
pub struct FinalOrder {
    pub id: String,
    pub status: String,
    pub terminal: bool,
    pub provider_ref: String,
    pub deposit_address: String,
    pub deposit_txs: Vec<String>,
    pub payout_tx: Option<String>,
    pub refund_tx: Option<String>,
}

/// Everything the run left behind, read after it.
#[derive(Debug, Default)]
pub struct Finals {
    pub orders: Vec<FinalOrder>,
    /// (Idempotency-Key, the order id its stored answer names) of order creations.
    pub creation_keys: Vec<(String, String)>,
    /// The sandbox desks' exchanges (upstream creates), by id.
    pub exchanges: Vec<String>,
    /// The sandbox chain's deposits: (transaction, address).
    pub deposits: Vec<(String, String)>,
    /// The sandbox chain's transfers out, by idempotency key (`payout:ord_…`, `refund:ord_…`).
    pub transfers: Vec<String>,
    /// The x402 ledger's settlements: `payer:nonce`.
    pub settlements: Vec<String>,
    /// Every order event the partner subscribed to: (event id, order id).
    pub events: Vec<(String, String)>,
    /// Deliveries received, by event id.
    pub deliveries: HashMap<String, usize>,
    /// Deliveries whose signature did not verify.
    pub unverified: usize,
    /// Deposits the test made on the sandbox chain itself (the wallets' orders): addresses.
    pub chain_deposits: Vec<String>,
    /// The orders open when a worker was cut off in the middle of its leases, and those of
    /// them still open when it came back (the other worker should have taken them over).
    pub worker_cut: (Vec<String>, Vec<String>),
}

/// What the checker found.
#[derive(Debug, Default)]
pub struct Report {
    pub figures: BTreeMap<&'static str, usize>,
    pub violations: Vec<String>,
}

impl Report {
    fn count(&mut self, figure: &'static str, n: usize) {
        *self.figures.entry(figure).or_default() += n;
    }

    fn violation(&mut self, text: String) {
        if self.violations.len() < 50 {
            self.violations.push(text);
        } else {
            self.count("violations not listed", 1);
        }
    }
}

/// The promises of docs/reliability.md, checked over a history and the final records.
pub fn check(ops: &[Op], faults: &[FaultWindow], finals: &Finals) -> Report {
    let mut report = Report::default();
    report.count("requests", ops.len());
    answers_in_time(ops, faults, &mut report);
    orders_once(ops, finals, &mut report);
    nonces_once(ops, &mut report);
    deposits_once(ops, finals, &mut report);
    payments_once(ops, finals, &mut report);
    webhooks_delivered(finals, &mut report);
    leases_taken_over(finals, &mut report);
    report
}

/// Every order open when a worker was cut off ended while it was away.
fn leases_taken_over(finals: &Finals, report: &mut Report) {
    let (open, stranded) = &finals.worker_cut;
    report.count("orders open when a worker was cut off", open.len());
    for order in stranded {
        report.violation(format!(
            "order {order} was open when its worker was cut off and still open when it came back"
        ));
    }
}

/// Every request got an answer within its deadline, unless its node was out of reach.
fn answers_in_time(ops: &[Op], faults: &[FaultWindow], report: &mut Report) {
    let out_of_reach = |op: &Op| {
        faults.iter().any(|f| {
            f.isolates
                && f.node == Some(op.node)
                && op.sent_ms <= f.to_ms
                && op.sent_ms + op.took_ms >= f.from_ms
        })
    };
    for op in ops {
        match op.outcome {
            Outcome::Answered { .. } => report.count("answered", 1),
            _ if out_of_reach(op) => report.count("unanswered by an isolated node", 1),
            _ => report.violation(format!(
                "{:?} to node {} at {} ms: {} after {} ms",
                op.kind,
                op.node,
                op.sent_ms,
                op.outcome.label(),
                op.took_ms
            )),
        }
    }
}

/// Every acknowledged order exists once and ended; one order and one upstream create per key.
fn orders_once(ops: &[Op], finals: &Finals, report: &mut Report) {
    let by_id: HashMap<&str, &FinalOrder> =
        finals.orders.iter().map(|o| (o.id.as_str(), o)).collect();
    let mut acknowledged: HashMap<&str, HashSet<&str>> = HashMap::new();
    for op in ops {
        if matches!(op.kind, Kind::CreateOrder | Kind::X402Order)
            && op.outcome.success()
            && let (Some(key), Some(order)) = (&op.idempotency_key, &op.order)
        {
            acknowledged.entry(key).or_default().insert(order);
        }
    }
    report.count("orders acknowledged", acknowledged.len());
    for (key, orders) in &acknowledged {
        if orders.len() > 1 {
            report.violation(format!("Idempotency-Key {key} answered orders {orders:?}"));
        }
        for order in orders {
            match by_id.get(order) {
                None => report.violation(format!("acknowledged order {order} does not exist")),
                Some(o) if !o.terminal => report.violation(format!(
                    "acknowledged order {order} ended {} (not terminal)",
                    o.status
                )),
                Some(o) => report.count(
                    match o.status.as_str() {
                        "completed" => "orders completed",
                        "refunded" => "orders refunded",
                        _ => "orders failed",
                    },
                    1,
                ),
            }
        }
    }
    let mut keys_of: HashMap<&str, Vec<&str>> = HashMap::new();
    for (key, order) in &finals.creation_keys {
        keys_of.entry(order).or_default().push(key);
    }
    let mut orders_of: HashMap<&str, usize> = HashMap::new();
    for (key, _) in &finals.creation_keys {
        *orders_of.entry(key).or_default() += 1;
    }
    for (key, n) in orders_of {
        if n > 1 {
            report.violation(format!("Idempotency-Key {key} stored {n} orders"));
        }
    }
    let exchanges: HashSet<&str> = finals.exchanges.iter().map(String::as_str).collect();
    let mut named: HashMap<&str, usize> = HashMap::new();
    for order in &finals.orders {
        if keys_of.get(order.id.as_str()).is_none_or(|k| k.len() != 1) {
            report.violation(format!(
                "order {} stored without exactly one Idempotency-Key",
                order.id
            ));
        }
        *named.entry(&order.provider_ref).or_default() += 1;
        if !exchanges.contains(order.provider_ref.as_str()) {
            report.violation(format!(
                "order {}'s upstream exchange {} does not exist",
                order.id, order.provider_ref
            ));
        }
    }
    report.count("orders stored", finals.orders.len());
    report.count("upstream creates", finals.exchanges.len());
    for exchange in &finals.exchanges {
        match named.get(exchange.as_str()) {
            None => report.violation(format!("upstream exchange {exchange} has no order")),
            Some(&n) if n > 1 => {
                report.violation(format!("upstream exchange {exchange} serves {n} orders"))
            }
            Some(_) => {}
        }
    }
}

/// No signed request's nonce was taken twice, on any nodes.
fn nonces_once(ops: &[Op], report: &mut Report) {
    let mut taken: HashMap<&str, usize> = HashMap::new();
    for op in ops {
        let refused =
            matches!(&op.outcome, Outcome::Answered { code: Some(c), .. } if c == "nonce_reused");
        if op.kind == Kind::ReplayedNonce {
            report.count("nonces replayed on another node", 1);
            if refused {
                report.count("replayed nonces refused", 1);
            }
        }
        if let Some(nonce) = &op.nonce
            && op.outcome.success()
            && op.kind != Kind::X402Order
        {
            *taken.entry(nonce).or_default() += 1;
        }
    }
    for (nonce, n) in taken {
        if n > 1 {
            report.violation(format!("nonce {nonce} accepted {n} times"));
        }
    }
}

/// Each deposit request made one transfer on the chain, and each transfer was credited to one
/// order once; each order was paid out or refunded once, as its status says.
fn deposits_once(ops: &[Op], finals: &Finals, report: &mut Report) {
    let mut answered: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut keys_at: HashMap<&str, HashSet<&str>> = HashMap::new();
    for op in ops.iter().filter(|op| op.kind == Kind::Deposit) {
        if let (Some(key), Some(order)) = (&op.idempotency_key, &op.order) {
            keys_at.entry(order).or_default().insert(key);
            if let (true, Some(tx)) = (op.outcome.success(), &op.tx_id) {
                answered.entry(key).or_default().insert(tx);
            }
        }
    }
    for (key, txs) in &answered {
        if txs.len() > 1 {
            report.violation(format!("deposit key {key} answered transfers {txs:?}"));
        }
    }
    let mut at_address: HashMap<&str, usize> = HashMap::new();
    for (_, address) in &finals.deposits {
        *at_address.entry(address).or_default() += 1;
    }
    report.count("deposits on the chain", finals.deposits.len());
    let mut credited: HashMap<&str, usize> = HashMap::new();
    for order in &finals.orders {
        let sent = keys_at.get(order.id.as_str()).map_or(0, HashSet::len)
            + finals
                .chain_deposits
                .iter()
                .filter(|a| **a == order.deposit_address)
                .count();
        let made = at_address
            .get(order.deposit_address.as_str())
            .copied()
            .unwrap_or(0);
        if made > sent {
            report.violation(format!(
                "order {}: {made} transfers for {sent} deposit requests",
                order.id
            ));
        }
        for tx in &order.deposit_txs {
            *credited.entry(tx).or_default() += 1;
        }
        let payout = format!("payout:{}", order.id);
        let refund = format!("refund:{}", order.id);
        let paid = finals.transfers.contains(&payout);
        let refunded = finals.transfers.contains(&refund);
        let expected = match order.status.as_str() {
            "completed" => (true, false),
            "refunded" => (false, true),
            _ => (false, false),
        };
        if order.terminal && (paid, refunded) != expected {
            report.violation(format!(
                "order {} {}: payout {paid}, refund {refunded}",
                order.id, order.status
            ));
        }
        if paid && order.payout_tx.is_none() || refunded && order.refund_tx.is_none() {
            report.violation(format!("order {} does not name its transfer", order.id));
        }
    }
    for (tx, n) in credited {
        if n > 1 {
            report.violation(format!("deposit {tx} credited {n} times"));
        }
    }
    report.count(
        "payouts",
        finals
            .transfers
            .iter()
            .filter(|k| k.starts_with("payout:"))
            .count(),
    );
}

/// One settlement per x402 payment, each serving at most one order.
fn payments_once(ops: &[Op], finals: &Finals, report: &mut Report) {
    let mut served: HashMap<&str, HashSet<&str>> = HashMap::new();
    for op in ops.iter().filter(|op| op.kind == Kind::X402Order) {
        if let (true, Some(payment), Some(order)) = (op.outcome.success(), &op.nonce, &op.order) {
            served.entry(payment).or_default().insert(order);
        }
    }
    let settled: HashSet<&str> = finals.settlements.iter().map(String::as_str).collect();
    report.count("x402 payments settled", finals.settlements.len());
    if settled.len() != finals.settlements.len() {
        report.violation("a payment was settled twice".into());
    }
    for (payment, orders) in &served {
        if orders.len() > 1 {
            report.violation(format!("payment {payment} bought orders {orders:?}"));
        }
        if !settled.contains(payment) {
            report.violation(format!("payment {payment} served without a settlement"));
        }
    }
}

/// Every event delivered at least once under its id, and no delivery of an unknown event.
fn webhooks_delivered(finals: &Finals, report: &mut Report) {
    let events: HashSet<&str> = finals.events.iter().map(|(id, _)| id.as_str()).collect();
    report.count("events", events.len());
    report.count("deliveries", finals.deliveries.values().sum());
    if finals.unverified > 0 {
        report.violation(format!("{} deliveries did not verify", finals.unverified));
    }
    for (id, order) in &finals.events {
        if !finals.deliveries.contains_key(id) {
            report.violation(format!("event {id} of {order} never delivered"));
        }
    }
    for id in finals.deliveries.keys() {
        if !events.contains(id.as_str()) {
            report.violation(format!("a delivery names event {id}, which does not exist"));
        }
    }
}

/// The fault matrix's row of each fault: requests sent meanwhile to the faulted node and to
/// the others, their answers by code, the worst latency of an answer, and the recovery time.
pub fn matrix(ops: &[Op], faults: &[FaultWindow]) -> String {
    let mut out = String::from(
        "| fault | faulted node: requests; answers | other nodes: requests; answers | worst latency | not ready after | ready again after the heal |\n|---|---|---|---|---|---|\n",
    );
    for fault in faults {
        let during: Vec<&Op> = ops
            .iter()
            .filter(|op| op.sent_ms >= fault.from_ms && op.sent_ms < fault.to_ms)
            .collect();
        let summary = |ops: Vec<&&Op>| {
            let mut by_code: BTreeMap<String, usize> = BTreeMap::new();
            for op in &ops {
                *by_code.entry(op.outcome.label()).or_default() += 1;
            }
            let answers = by_code
                .iter()
                .map(|(code, n)| format!("{code}: {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            format!("{}; {answers}", ops.len())
        };
        let faulted = |op: &&&Op| fault.node.is_none_or(|n| n == op.node);
        let worst = during
            .iter()
            .filter(|op| matches!(op.outcome, Outcome::Answered { .. }))
            .map(|op| op.took_ms)
            .max()
            .unwrap_or(0);
        let seconds =
            |d: Option<Duration>| d.map_or("—".into(), |d| format!("{:.1} s", d.as_secs_f64()));
        let (not_ready, recovery) = (seconds(fault.not_ready_after), seconds(fault.recovery));
        let others = if fault.node.is_some() {
            summary(during.iter().filter(|op| !faulted(op)).collect())
        } else {
            "—".into()
        };
        let _ = writeln!(
            out,
            "| {} ({} s) | {} | {others} | {worst} ms | {not_ready} | {recovery} |",
            fault.name,
            (fault.to_ms - fault.from_ms) / 1000,
            summary(during.iter().filter(faulted).collect()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: Kind, key: &str, order: &str, status: u16) -> Op {
        Op {
            kind,
            node: 0,
            sent_ms: 1_000,
            took_ms: 10,
            idempotency_key: Some(key.into()),
            nonce: Some(format!("nonce-{key}-{status}")),
            order: Some(order.into()),
            tx_id: None,
            outcome: Outcome::Answered { status, code: None },
        }
    }

    fn order(id: &str) -> FinalOrder {
        FinalOrder {
            id: id.into(),
            status: "completed".into(),
            terminal: true,
            provider_ref: format!("ex-{id}"),
            deposit_address: format!("addr-{id}"),
            deposit_txs: vec![format!("tx-{id}")],
            payout_tx: Some(format!("payout-{id}")),
            refund_tx: None,
        }
    }

    /// One order created, deposited, paid out and announced: the history every test breaks.
    fn clean() -> (Vec<Op>, Finals) {
        let mut deposit = op(Kind::Deposit, "dep-1", "ord_1", 202);
        deposit.tx_id = Some("tx-ord_1".into());
        let ops = vec![op(Kind::CreateOrder, "key-1", "ord_1", 201), deposit];
        let finals = Finals {
            orders: vec![order("ord_1")],
            creation_keys: vec![("key-1".into(), "ord_1".into())],
            exchanges: vec!["ex-ord_1".into()],
            deposits: vec![("tx-ord_1".into(), "addr-ord_1".into())],
            transfers: vec!["payout:ord_1".into()],
            events: vec![("evt_1".into(), "ord_1".into())],
            deliveries: HashMap::from([("evt_1".into(), 2)]),
            ..Finals::default()
        };
        (ops, finals)
    }

    #[test]
    fn a_clean_history_passes_with_its_figures() {
        let (ops, finals) = clean();
        let report = check(&ops, &[], &finals);
        assert_eq!(report.violations, Vec::<String>::new());
        assert_eq!(report.figures["orders acknowledged"], 1);
        assert_eq!(report.figures["orders completed"], 1);
        assert_eq!(report.figures["deliveries"], 2);
    }

    #[test]
    fn each_broken_promise_is_reported() {
        type Damage = Box<dyn Fn(&mut Vec<Op>, &mut Finals)>;
        let broken: Vec<(&str, Damage)> = vec![
            (
                "answered orders",
                Box::new(|ops, _| ops.push(op(Kind::CreateOrder, "key-1", "ord_2", 201))),
            ),
            (
                "stored 2 orders",
                Box::new(|_, f| f.creation_keys.push(("key-1".into(), "ord_9".into()))),
            ),
            (
                "not terminal",
                Box::new(|_, f| {
                    f.orders[0].status = "exchanging".into();
                    f.orders[0].terminal = false;
                }),
            ),
            ("does not exist", Box::new(|_, f| f.orders.clear())),
            (
                "has no order",
                Box::new(|_, f| f.exchanges.push("ex-orphan".into())),
            ),
            (
                "accepted 2 times",
                Box::new(|ops, _| {
                    let mut again = ops[0].clone();
                    again.kind = Kind::ReplayedNonce;
                    again.node = 1;
                    ops.push(again);
                }),
            ),
            (
                "2 transfers for 1 deposit",
                Box::new(|_, f| f.deposits.push(("tx-2".into(), "addr-ord_1".into()))),
            ),
            (
                "credited 2 times",
                Box::new(|_, f| f.orders[0].deposit_txs.push("tx-ord_1".into())),
            ),
            (
                "payout true, refund true",
                Box::new(|_, f| {
                    f.orders[0].status = "refunded".into();
                    f.orders[0].refund_tx = Some("r".into());
                    f.transfers = vec!["refund:ord_1".into(), "payout:ord_1".into()];
                }),
            ),
            (
                "never delivered",
                Box::new(|_, f| {
                    f.deliveries.clear();
                }),
            ),
            (
                "which does not exist",
                Box::new(|_, f| {
                    f.deliveries.insert("evt_unknown".into(), 1);
                }),
            ),
            ("did not verify", Box::new(|_, f| f.unverified = 1)),
            (
                "still open when it came back",
                Box::new(|_, f| f.worker_cut = (vec!["ord_1".into()], vec!["ord_1".into()])),
            ),
            (
                "no answer after",
                Box::new(|ops, _| {
                    ops[0].outcome = Outcome::NoAnswer;
                }),
            ),
            (
                "served without a settlement",
                Box::new(|ops, _| {
                    let mut paid = op(Kind::X402Order, "x-1", "ord_1", 201);
                    paid.nonce = Some("0xpayer:0x01".into());
                    ops.push(paid);
                }),
            ),
        ];
        for (expected, damage) in broken {
            let (mut ops, mut finals) = clean();
            damage(&mut ops, &mut finals);
            let report = check(&ops, &[], &finals);
            assert!(
                report.violations.iter().any(|v| v.contains(expected)),
                "`{expected}` not reported: {:?}",
                report.violations
            );
        }
    }

    #[test]
    fn a_request_unanswered_while_its_node_was_isolated_is_not_a_hang() {
        let (mut ops, finals) = clean();
        ops[0].outcome = Outcome::NoAnswer;
        ops[0].took_ms = 15_000;
        let isolated = FaultWindow {
            name: "isolated",
            node: Some(0),
            isolates: true,
            from_ms: 5_000,
            to_ms: 20_000,
            not_ready_after: None,
            recovery: None,
        };
        let report = check(&ops, std::slice::from_ref(&isolated), &finals);
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        assert_eq!(report.figures["unanswered by an isolated node"], 1);
        // Another node's isolation excuses nothing.
        let elsewhere = FaultWindow {
            node: Some(1),
            ..isolated
        };
        let report = check(&ops, &[elsewhere], &finals);
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    }
}
