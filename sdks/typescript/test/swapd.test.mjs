// The partner's and the agent's journeys, against a real sandbox swapd: the binary cargo built
// (SWAPD_BIN, or $CARGO_TARGET_DIR/debug/swapd, or target/debug/swapd), a fresh data dir and an
// API key with every permission.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, openSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createBusinessApiClient, SwapdApiError, verifyWebhook, WebhookVerificationError } from "../dist/index.js";
import { createX402ApiClient, SwapdPaymentRefused } from "../dist/x402.js";

const ROOT = new URL("../../../", import.meta.url).pathname;
const PERMISSIONS = "prices:read,orders:create,orders:read,orders:update,notifications:write,webhooks:read,webhooks:write";
const TRON_PAYOUT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const ETH_PAYOUT = "0x52908400098527886E0F7030069857D2E4169EE7";
const BTC_REFUND = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq";

const binary = [process.env.SWAPD_BIN, process.env.CARGO_TARGET_DIR && join(process.env.CARGO_TARGET_DIR, "debug", "swapd"), join(ROOT, "target", "debug", "swapd")].find((p) => p && existsSync(p));
if (!binary && process.env.CI) throw new Error("CI must run the SDK against swapd: build it (cargo build -p swapd) or set SWAPD_BIN");
const skip = binary ? false : "no swapd binary: run `cargo build -p swapd` or set SWAPD_BIN";

let server;
let swapd;
before(async () => {
  if (skip) return;
  const data = mkdtempSync(join(tmpdir(), "swapd-sdk-ts-"));
  const key = JSON.parse(execFileSync(binary, ["--data-dir", data, "keys", "create", "--name", "sdk", "--permissions", PERMISSIONS, "--per-minute", "6000", "--json"], { encoding: "utf8" }));
  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  const log = openSync(join(data, "serve.log"), "w");
  server = spawn(binary, ["--data-dir", data, "serve", "--listen", `127.0.0.1:${port}`], { stdio: ["ignore", log, log], env: { ...process.env, RUST_LOG: "warn", SWAPD_SANDBOX__PROFILE: "punctual" } });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {}
    if (i > 300 || server.exitCode !== null) throw new Error(`swapd did not become ready: ${readFileSync(join(data, "serve.log"), "utf8").slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  swapd = { url, apiKey: key.apiKey, apiSecret: key.apiSecret };
});
after(() => server?.kill("SIGTERM"));

const business = () => createBusinessApiClient({ baseUrl: swapd.url, apiKey: swapd.apiKey, apiSecret: swapd.apiSecret });

test("a fixed order runs from route to payout, and a retry returns the same order", { skip }, async () => {
  const api = business();
  assert.ok((await api.currencies()).count >= 20);
  const routes = await api.discoverRoutes({ fromCcy: "BTC", toCcy: "USDTTRC", amount: "0.05", type: "fixed" });
  const card = routes.routes.find((c) => c.executionType === "offchain" && c.isAvailable && c.routeQuoteId);
  const resolved = await api.resolveRoute({ routeQuoteId: card.routeQuoteId });
  const idempotencyKey = `sdk-ts-order-${randomBytes(8).toString("hex")}`;
  const body = { createToken: resolved.createToken, toAddress: TRON_PAYOUT, refundAddress: BTC_REFUND };
  const order = await api.createOrder(body, { idempotencyKey });
  assert.equal(order.status, "awaiting_deposit");
  assert.equal(order.rate, resolved.rate);
  assert.equal((await api.createOrder(body, { idempotencyKey })).orderId, order.orderId, "the same Idempotency-Key answers the same order");
  await api.simulateDeposit(order.orderId, { amount: order.from.amount });
  const done = await api.waitForOrder(order.orderId, { until: "completed", timeoutMs: 120_000 });
  assert.equal(done.status, "completed");
  assert.ok(done.to.txId);
});

test("an emergency is answered with a refund", { skip }, async () => {
  const api = business();
  const order = await api.createOrder({ fromCcy: "BTC", toCcy: "ETH", amount: "0.05", type: "fixed", toAddress: ETH_PAYOUT });
  const [whole, fraction = ""] = order.from.amount.split(".");
  const units = (BigInt(whole + fraction) * 9n) / 10n;
  const short = fraction ? `${units / 10n ** BigInt(fraction.length)}.${String(units % 10n ** BigInt(fraction.length)).padStart(fraction.length, "0")}` : String(units);
  await api.simulateDeposit(order.orderId, { amount: short });
  const held = await api.waitForOrder(order.orderId, { until: "emergency", timeoutMs: 120_000 });
  assert.equal(held.status, "emergency");
  assert.ok(held.emergency.reasons.includes("LESS"));
  await api.emergency(order.orderId, { choice: "REFUND", refundAddress: BTC_REFUND });
  assert.equal((await api.waitForOrder(order.orderId, { timeoutMs: 120_000 })).status, "refunded");
});

test("an onchain plan is resolved, reported and followed", { skip }, async () => {
  const api = business();
  const wallet = privateKeyToAccount(generatePrivateKey()).address;
  const routes = await api.discoverRoutes({ fromCcy: "ETHBASE", toCcy: "USDCBASE", amount: "1", walletAddress: wallet, walletChainNamespace: "eip155" });
  const card = routes.routes.find((c) => c.executionType === "onchain" && c.isAvailable && c.routeQuoteId);
  const plan = await api.resolveOnchainRoute({ routeQuoteId: card.routeQuoteId, walletAddress: wallet, walletChainNamespace: "eip155" });
  const onchainExecutionAccessToken = plan.executionAccessToken;
  const txHash = `0x${randomBytes(31).toString("hex")}01`;
  const reported = await api.reportOnchainExecution({ executionPlanId: plan.executionPlanId, chainNamespace: "eip155", walletAddress: wallet, txHash }, { onchainExecutionAccessToken });
  assert.equal(reported.executionPlanId, plan.executionPlanId);
  const status = await api.getOnchainExecution(plan.executionPlanId, { onchainExecutionAccessToken });
  assert.ok(["submitted", "pending", "done"].includes(status.status));
});

test("webhook deliveries verify across a rotation and a replay", { skip }, async () => {
  const api = business();
  const deliveries = [];
  let arrived;
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      arrived?.();
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  const next = async () => {
    for (let i = 0; i < 300 && !deliveries.length; i++) await new Promise((r) => { arrived = r; setTimeout(r, 100); });
    assert.ok(deliveries.length, "a delivery arrived");
    return deliveries.shift();
  };
  try {
    const created = await api.createWebhook({ url: `http://127.0.0.1:${receiver.address().port}/hooks`, events: ["order.created"] });
    const order = await api.createOrder({ fromCcy: "BTC", toCcy: "ETH", amount: "0.05", toAddress: ETH_PAYOUT });
    const first = await next();
    const event = verifyWebhook(created.secret, first.headers, first.body);
    assert.equal(event.type, "order.created");
    assert.equal(event.data.order.orderId, order.orderId);
    assert.throws(() => verifyWebhook(`whsec_${"A".repeat(43)}=`, first.headers, first.body), WebhookVerificationError);
    assert.throws(() => verifyWebhook(created.secret, first.headers, first.body.replace("order.created", "order.updated")), WebhookVerificationError);
    const rotated = await api.rotateWebhookSecret(created.webhookId, { previousSecretExpiresIn: 3600 });
    await api.replayWebhookEvents(created.webhookId, { eventId: event.id });
    const replay = await next();
    assert.equal(verifyWebhook([rotated.secret], replay.headers, replay.body).id, event.id, "a replay is the same event");
    assert.equal(verifyWebhook([created.secret], replay.headers, replay.body).id, event.id, "both secrets sign during the grace");
    assert.ok((await api.listWebhookDeliveries(created.webhookId, { limit: 10 })).count >= 2);
  } finally {
    receiver.close();
  }
});

test("an agent pays, owns, reads free, and is refused another's order", { skip }, async () => {
  const payer = privateKeyToAccount(generatePrivateKey());
  const agent = createX402ApiClient({ baseUrl: swapd.url, signer: payer, maxAmountPerCall: 1_000_000n });
  assert.ok((await agent.currencies()).count >= 20);
  assert.ok(agent.lastSettlement?.success);
  assert.equal(agent.lastSettlement.payer.toLowerCase(), payer.address.toLowerCase());
  const order = await agent.createOrder({ fromCcy: "BTC", toCcy: "USDTTRC", amount: "0.05", toAddress: TRON_PAYOUT });
  const paidForOrder = agent.lastSettlement;
  assert.equal((await agent.getOrder(order.orderId)).orderId, order.orderId);
  assert.equal(agent.lastSettlement, paidForOrder, "the owner's read is free (signed in, not paid)");
  const job = await agent.createJob({ kind: "pair_depth", fromCcy: "BTC", toCcy: "ETH" });
  assert.equal((await agent.getJob(job.jobId)).jobId, job.jobId);
  const stranger = createX402ApiClient({ baseUrl: swapd.url, signer: privateKeyToAccount(generatePrivateKey()) });
  await assert.rejects(stranger.getOrder(order.orderId), (e) => e instanceof SwapdApiError && e.status === 404 && e.code === "order_not_found");
});

test("an agent never pays more than its cap", { skip }, async () => {
  const agent = createX402ApiClient({ baseUrl: swapd.url, signer: privateKeyToAccount(generatePrivateKey()), maxAmountPerCall: 1 });
  await assert.rejects(agent.currencies(), SwapdPaymentRefused);
});
