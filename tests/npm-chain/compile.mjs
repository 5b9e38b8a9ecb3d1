// Compiles contracts/*.sol with solc-js (no download) and prints each contract's runtime
// bytecode as JSON: {"TestToken": "0x…", "TestRouter": "0x…"}.
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";

const solc = createRequire(import.meta.url)("solc");
const dir = new URL("./contracts/", import.meta.url);
const sources = Object.fromEntries(
  readdirSync(dir)
    .filter((name) => name.endsWith(".sol"))
    .map((name) => [name, { content: readFileSync(new URL(name, dir), "utf8") }]),
);
const output = JSON.parse(
  solc.compile(
    JSON.stringify({
      language: "Solidity",
      sources,
      settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["evm.deployedBytecode.object"] } } },
    }),
  ),
);
const errors = (output.errors || []).filter((e) => e.severity === "error");
if (errors.length) {
  console.error(errors.map((e) => e.formattedMessage).join("\n"));
  process.exit(1);
}
const runtime = {};
for (const contracts of Object.values(output.contracts)) {
  for (const [name, contract] of Object.entries(contracts)) {
    runtime[name] = "0x" + contract.evm.deployedBytecode.object;
  }
}
console.log(JSON.stringify(runtime));
