// A local chain with Base's chain id, so swapd's registry (USDC on Base at its real address) and
// EIP-155 signatures hold unchanged.
module.exports = { networks: { hardhat: { chainId: 8453 } } };
