// The reference x402 clients (@x402/fetch, @x402/core, @x402/evm (exact and upto), @x402/svm, @x402/extensions, pinned in
// package.json) against a running swapd with the ledger facilitator. Run by
// crates/swapd/tests/npm_x402.rs: `node client.mjs <base-url>`. Prints one line per check and
// exits non-zero when any fails.
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { createSIWxClientHook, createSIWxPayload, encodeSIWxHeader } from "@x402/extensions/sign-in-with-x";
import { appendPaymentIdentifierToExtensions, generatePaymentId, validatePaymentIdentifier } from "@x402/extensions/payment-identifier";
import { extractDiscoveryInfo, validateDiscoveryExtension, validateDiscoveryExtensionSpec } from "@x402/extensions/bazaar";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { createKeyPairSignerFromPrivateKeyBytes } from "@solana/kit";
import http from "node:http";

const base = process.argv[2];
let failures = 0;
function check(name, ok, detail) {
  console.log(`${ok ? "ok" : "FAIL"} ${name}${ok ? "" : `: ${detail}`}`);
  if (!ok) failures += 1;
}

const orderBody = JSON.stringify({ fromCcy: "BTC", toCcy: "USDTTRC", amount: "0.05", toAddress: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t" });
const payer = privateKeyToAccount(generatePrivateKey());
const client = new x402Client().register("eip155:*", new ExactEvmScheme(payer));

// 1. A paid catalog read: 402, paid by the reference client, 200 with PAYMENT-RESPONSE.
const pay = wrapFetchWithPayment(fetch, new x402HTTPClient(client));
let response = await pay(`${base}/api/x402/currencies`);
let body = await response.json();
check("paid catalog read", response.status === 200 && body.data.count >= 20, `${response.status} ${JSON.stringify(body).slice(0, 300)}`);
const settled = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE") ?? "");
check("settlement names the payer", settled.success && settled.payer.toLowerCase() === payer.address.toLowerCase(), JSON.stringify(settled));

// 2. An order, paid and so bound to the payer's wallet.
response = await pay(`${base}/api/x402/orders`, {
  method: "POST",
  headers: { "content-type": "application/json", "Idempotency-Key": "npm-interop-order-evm" },
  body: orderBody,
});
body = await response.json();
check("order created", response.status === 201 && body.data.orderId?.startsWith("ord_"), `${response.status} ${JSON.stringify(body).slice(0, 300)}`);
const orderUrl = `${base}/api/x402/orders/${body.data?.orderId}`;

// 3. Read back by its wallet: the SIWX hook answers the free read's 402 with an EVM proof.
const signedIn = (signer) => wrapFetchWithPayment(fetch, new x402HTTPClient(new x402Client()).onPaymentRequired(createSIWxClientHook(signer)));
response = await signedIn(payer)(orderUrl);
body = await response.json();
check("EVM SIWX read of the wallet's order", response.status === 200 && body.data.orderId === orderUrl.split("/").pop(), `${response.status} ${JSON.stringify(body).slice(0, 300)}`);

// 4. Another wallet's proof: refused as not found.
const stranger = privateKeyToAccount(generatePrivateKey());
response = await signedIn(stranger)(orderUrl);
body = await response.json();
check("another wallet's read is refused", response.status === 404 && body.error.code === "order_not_found", `${response.status} ${JSON.stringify(body)}`);

// 5. A Solana wallet: an order paid by the EVM payer with the Solana wallet signed in (both
//    headers, each made by the reference libraries), then read back with a Solana proof.
const solana = await createKeyPairSignerFromPrivateKeyBytes(new Uint8Array(32).fill(11));
const solanaProof = async (url, required) => {
  const extension = required.extensions["sign-in-with-x"];
  const chain = extension.supportedChains.find((c) => c.type === "ed25519");
  return encodeSIWxHeader(await createSIWxPayload({ ...extension.info, chainId: chain.chainId, type: chain.type }, solana, url));
};
const ordersUrl = `${base}/api/x402/orders`;
const init = { method: "POST", headers: { "content-type": "application/json", "Idempotency-Key": "npm-interop-order-sol" }, body: orderBody };
response = await fetch(ordersUrl, init);
let required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED"));
const payment = await client.createPaymentPayload(required);
const paymentHeader = new x402HTTPClient(client).encodePaymentSignatureHeader(payment)["PAYMENT-SIGNATURE"];
response = await fetch(ordersUrl, {
  ...init,
  headers: { ...init.headers, "PAYMENT-SIGNATURE": paymentHeader, "SIGN-IN-WITH-X": await solanaProof(ordersUrl, required) },
});
body = await response.json();
check("order created for a Solana wallet", response.status === 201, `${response.status} ${JSON.stringify(body).slice(0, 300)}`);
const solanaOrderUrl = `${base}/api/x402/orders/${body.data?.orderId}`;
response = await fetch(solanaOrderUrl);
required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED"));
check("free read without a proof is 402 with no payment asked", response.status === 402 && required.accepts.length === 0, `${response.status}`);
response = await fetch(solanaOrderUrl, { headers: { "SIGN-IN-WITH-X": await solanaProof(solanaOrderUrl, required) } });
body = await response.json();
check("Solana SIWX read of the wallet's order", response.status === 200 && body.data.orderId === solanaOrderUrl.split("/").pop(), `${response.status} ${JSON.stringify(body).slice(0, 300)}`);
response = await signedIn(payer)(solanaOrderUrl);
check("the payer's EVM proof does not read the Solana wallet's order", response.status === 404, `${response.status}`);

// 6. The payment-identifier extension: declared as the reference helpers validate it, and a
//    call sent again with a newly signed payment under the same id answers the first answer
//    without settling the second payment.
const catalogUrl = `${base}/api/x402/currencies`;
required = decodePaymentRequiredHeader((await fetch(catalogUrl)).headers.get("PAYMENT-REQUIRED"));
const declared = required.extensions["payment-identifier"];
check("paid routes declare payment-identifier", declared?.info?.required === false && validatePaymentIdentifier(declared).valid, JSON.stringify(declared));
const paymentId = generatePaymentId();
const payUnder = async (id) => {
  const identified = await client.createPaymentPayload(required);
  identified.extensions = appendPaymentIdentifierToExtensions(structuredClone(identified.extensions ?? {}), id);
  const header = new x402HTTPClient(client).encodePaymentSignatureHeader(identified)["PAYMENT-SIGNATURE"];
  return fetch(catalogUrl, { headers: { "PAYMENT-SIGNATURE": header } });
};
const firstCall = await payUnder(paymentId);
const sentAgain = await payUnder(paymentId);
check(
  "a call sent again under its payment identifier is answered once",
  firstCall.status === 200 && sentAgain.status === 200 && sentAgain.headers.get("idempotent-replayed") === "true"
    && sentAgain.headers.get("PAYMENT-RESPONSE") === firstCall.headers.get("PAYMENT-RESPONSE")
    && JSON.stringify(await sentAgain.json()) === JSON.stringify(await firstCall.json()),
  `${firstCall.status} ${sentAgain.status} ${sentAgain.headers.get("idempotent-replayed")}`,
);

// 7. The bazaar discovery extension of paid routes (a query, a body, a path parameter), valid by
//    the reference helpers and read by them as a facilitator indexing discovery reads it.
const discovered = [
  ["GET", `${base}/api/x402/tokens/search?q=usdc&limit=5`, undefined, "/api/x402/tokens/search"],
  ["POST", ordersUrl, orderBody, "/api/x402/orders"],
  ["POST", `${base}/api/x402/orders/ord_${"0".repeat(32)}/refund`, "{}", "/api/x402/orders/:orderId/refund"],
];
for (const [method, url, requestBody, route] of discovered) {
  const init = requestBody === undefined ? {} : { method, headers: { "content-type": "application/json", "Idempotency-Key": "npm-interop-discovery" }, body: requestBody };
  const asked = decodePaymentRequiredHeader((await fetch(url, init)).headers.get("PAYMENT-REQUIRED"));
  const extension = asked.extensions?.bazaar;
  const valid = extension ? validateDiscoveryExtension(extension) : { valid: false, errors: ["no bazaar extension"] };
  const spec = extension ? validateDiscoveryExtensionSpec(extension) : valid;
  const indexed = extension && extractDiscoveryInfo({ x402Version: 2, resource: asked.resource, accepted: asked.accepts[0], payload: {}, extensions: asked.extensions }, asked.accepts[0]);
  const expectedUrl = new URL(url);
  check(
    `bazaar discovery of ${method} ${route}`,
    valid.valid && spec.valid && indexed?.method === method && indexed.resourceUrl === `${expectedUrl.origin}${route}`
      && indexed.description === asked.resource.description,
    JSON.stringify({ valid, spec, indexed }).slice(0, 800),
  );
}

// 8. `exact` on Solana, the sandbox's second way to pay: the reference Solana client pays with
//    a Solana key (on the blockhash hint swapd sends), and the ledger settles it. The client
//    reads the mint's account from a Solana node: a local stand-in answers that one call with
//    USDC's mint (6 decimals, the Token program's).
const mintAccount = Buffer.alloc(82);
mintAccount[44] = 6; // decimals
mintAccount[45] = 1; // initialized
const solanaNode = http.createServer((request, reply) => {
  let text = "";
  request.on("data", (chunk) => { text += chunk; });
  request.on("end", () => {
    const call = JSON.parse(text);
    const result = call.method === "getAccountInfo"
      ? { context: { slot: 1 }, value: { data: [mintAccount.toString("base64"), "base64"], executable: false, lamports: 1461600, owner: "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", rentEpoch: 0, space: 82 } }
      : null;
    reply.setHeader("content-type", "application/json");
    reply.end(JSON.stringify({ jsonrpc: "2.0", id: call.id, result }));
  });
});
await new Promise((listening) => solanaNode.listen(0, "127.0.0.1", listening));
const solanaPayer = await createKeyPairSignerFromPrivateKeyBytes(new Uint8Array(32).fill(12));
const solanaClient = new x402Client().register("solana:*", new ExactSvmScheme(solanaPayer, { rpcUrl: `http://127.0.0.1:${solanaNode.address().port}` }));
required = decodePaymentRequiredHeader((await fetch(catalogUrl)).headers.get("PAYMENT-REQUIRED"));
const solanaWay = required.accepts.find((way) => way.network.startsWith("solana:"));
check(
  "the sandbox offers Base then Solana",
  required.accepts[0].network === "eip155:8453" && solanaWay?.network === "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" && typeof solanaWay.extra.feePayer === "string",
  JSON.stringify(required.accepts),
);
response = await wrapFetchWithPayment(fetch, new x402HTTPClient(solanaClient))(catalogUrl);
body = await response.json();
const solanaSettled = response.status === 200 ? decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE") ?? "") : {};
check(
  "a call paid on Solana by the reference client",
  response.status === 200 && solanaSettled.success && solanaSettled.network === solanaWay?.network && solanaSettled.payer === solanaPayer.address,
  `${response.status} ${JSON.stringify(body).slice(0, 300)} ${JSON.stringify(solanaSettled)}`,
);
solanaNode.close();

// 9. `upto` on a market-intel job: the reference upto client signs a Permit2 permit for the
//    job's maximum; the job is queued unsettled, and when the worker has run it, its read (with
//    the payer's SIWX proof) says what was settled: what the job used.
const uptoClient = new x402Client().register("eip155:*", new UptoEvmScheme(payer));
const jobsUrl = `${base}/api/x402/market-intel/jobs`;
response = await wrapFetchWithPayment(fetch, new x402HTTPClient(uptoClient))(jobsUrl, {
  method: "POST",
  headers: { "content-type": "application/json", "Idempotency-Key": "npm-interop-upto-job" },
  body: JSON.stringify({ kind: "pair_depth", fromCcy: "BTC", toCcy: "USDTTRC", steps: 3 }),
});
body = await response.json();
check(
  "a job paid upto its maximum is queued, nothing settled yet",
  response.status === 202 && body.data.payment?.status === "authorized" && body.data.payment.maximum === "600000" && !response.headers.get("PAYMENT-RESPONSE"),
  `${response.status} ${JSON.stringify(body).slice(0, 400)}`,
);
const jobUrl = `${jobsUrl}/${body.data?.jobId}`;
let job = {};
let jobRead;
for (let attempt = 0; attempt < 100 && !["succeeded", "failed"].includes(job.status); attempt += 1) {
  await new Promise((wait) => setTimeout(wait, 100));
  jobRead = await signedIn(payer)(jobUrl);
  job = (await jobRead.json()).data ?? {};
}
const charged = jobRead?.headers.get("PAYMENT-RESPONSE") ? decodePaymentResponseHeader(jobRead.headers.get("PAYMENT-RESPONSE")) : {};
const used = String(50000 * (job.result?.ladder?.length ?? 0));
check(
  "the job's read settles what it used",
  job.status === "succeeded" && job.payment?.status === "settled" && job.payment.amount === used && charged.success && charged.amount === used,
  `${JSON.stringify(job).slice(0, 400)} ${JSON.stringify(charged)}`,
);

console.log(failures === 0 ? "all checks passed" : `${failures} checks failed`);
process.exit(failures === 0 ? 0 : 1);
