// SPDX-License-Identifier: Apache-2.0
pragma solidity 0.8.30;

interface IERC20 {
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// A router that swaps native coin and a token it holds, at the output its caller names: what a
/// DEX aggregator's transaction does, as far as the chain shows it (a native payment in and a
/// token Transfer out, or a token taken under the caller's allowance and native coin paid out).
/// It reverts below the minimum, like a real router on slippage.
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

    /// The same, also paying `fees` of the output token to their `feeRecipients`: an
    /// aggregator that collects integrators' fees in the output token in the swap's own
    /// transaction (0x's `swapFeeRecipient`, one per party).
    function swapNativeForTokenWithFees(
        address token,
        uint256 amountOut,
        uint256 minAmountOut,
        address recipient,
        address[] calldata feeRecipients,
        uint256[] calldata fees
    ) external payable {
        require(msg.value > 0, "no input");
        require(amountOut >= minAmountOut, "slippage");
        require(feeRecipients.length == fees.length, "fees");
        for (uint256 i = 0; i < fees.length; i++) {
            require(IERC20(token).transfer(feeRecipients[i], fees[i]), "fee");
        }
        require(IERC20(token).transfer(recipient, amountOut), "payout");
    }

    function swapTokenForNative(
        address token,
        uint256 amountIn,
        uint256 amountOut,
        uint256 minAmountOut,
        address payable recipient
    ) external {
        require(amountOut >= minAmountOut, "slippage");
        require(IERC20(token).transferFrom(msg.sender, address(this), amountIn), "input");
        (bool paid, ) = recipient.call{value: amountOut}("");
        require(paid, "payout");
    }
}
