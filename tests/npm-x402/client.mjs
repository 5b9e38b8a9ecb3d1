// The reference x402 clients (@x402/fetch, @x402/core, @x402/evm, @x402/extensions, pinned in
// package.json) against a running swapd with the ledger facilitator. Run by
// crates/swapd/tests/npm_x402.rs: `node client.mjs <base-url>`. Prints one line per check and
// exits non-zero when any fails.
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { createSIWxClientHook, createSIWxPayload, encodeSIWxHeader } from "@x402/extensions/sign-in-with-x";
import { appendPaymentIdentifierToExtensions, generatePaymentId, validatePaymentIdentifier } from "@x402/extensions/payment-identifier";
import { extractDiscoveryInfo, validateDiscoveryExtension, validateDiscoveryExtensionSpec } from "@x402/extensions/bazaar";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createKeyPairSignerFromPrivateKeyBytes } from "@solana/kit";

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

console.log(failures === 0 ? "all checks passed" : `${failures} checks failed`);
process.exit(failures === 0 ? 0 : 1);
