// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

interface IERC20 {
    function transfer(address to, uint256 value) external returns (bool);
}

/// A router that swaps native coin for a token it holds, at the output its caller names: what a
/// DEX aggregator's transaction does, as far as the chain shows it (a native payment in, a token
/// Transfer to the recipient out). It reverts below the minimum, like a real router on slippage.
contract TestRouter {
    function swapNativeForToken(
        address token,
        uint256 amountOut,
        uint256 minAmountOut,
        address recipient
    ) external payable {
        require(msg.value > 0, "no input");
        require(amountOut >= minAmountOut, "slippage");
        require(IERC20(token).transfer(recipient, amountOut), "payout");
    }
}
