//! The MCP server: the tools of the x402 route table, the catalog and readiness resources and
//! the `swap` prompt, every call sent through a [`Dispatch`] as its route's HTTP request. The
//! server on `/mcp` dispatches into the HTTP application itself (same gate, same limits);
//! `swapctl mcp` dispatches to a remote swapd, signed or paid.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorCode as RpcCode, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, JsonObject,
    ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt,
    PromptArgument, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::Value;
use swapd_types::ErrorCode;

use crate::call::{self, HttpAnswer, HttpCall, Refusal};
use crate::tools::ToolTable;

/// Counter of tool calls on `/metrics`, by tool and outcome (`ok` or the error code).
pub const TOOL_CALLS: &str = "mcp_tool_calls_total";

/// Sends a tool call's HTTP request and brings back the answer.
pub trait Dispatch: Send + Sync + 'static {
    /// `context` is the MCP request's: on the HTTP server it holds the HTTP request it came in
    /// (`http::request::Parts`), whose client the limits count.
    fn send(
        &self,
        call: HttpCall,
        context: &RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<HttpAnswer, Refusal>> + Send;
}

/// The MCP server over a dispatcher.
pub struct SwapdMcp<D> {
    tools: Arc<ToolTable>,
    dispatch: Arc<D>,
}

impl<D> Clone for SwapdMcp<D> {
    fn clone(&self) -> Self {
        Self {
            tools: self.tools.clone(),
            dispatch: self.dispatch.clone(),
        }
    }
}

impl<D: Dispatch> SwapdMcp<D> {
    pub fn new(tools: Arc<ToolTable>, dispatch: Arc<D>) -> Self {
        Self { tools, dispatch }
    }

    /// Calls tool `name`: its route's request, sent, and the answer as the tool's result.
    pub async fn call(
        &self,
        name: &str,
        arguments: &JsonObject,
        meta: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(route) = self.tools.get(name) else {
            let unknown = Refusal::new(
                ErrorCode::NotFound,
                format!("there is no tool `{name}`: tools/list names them"),
            )
            .into_result();
            record("unknown", &unknown);
            return unknown;
        };
        let result = match call::request(route, arguments, meta) {
            Err(refused) => refused.into_result(),
            Ok(request) => match self.dispatch.send(request, context).await {
                Ok(answer) => call::result(route, &answer),
                Err(refused) => refused.into_result(),
            },
        };
        record(name, &result);
        result
    }
}

/// Logs and counts a tool call by its outcome (`ok` or the error code).
fn record(tool: &str, result: &CallToolResult) {
    let outcome = call::outcome(result);
    tracing::info!(tool, outcome, "mcp tool call");
    metrics::counter!(TOOL_CALLS, "tool" => tool.to_owned(), "outcome" => outcome).increment(1);
}

/// The resources: what an agent reads before it calls anything.
const READINESS_URI: &str = "swapd://readiness";
const CURRENCIES_URI: &str = "swapd://currencies";

const INSTRUCTIONS: &str = "swapd exchanges one currency for another. Start with `discover_routes` \
(or the `swap` prompt): pick a route, `resolve_route` for a createToken, `create_order` with it and \
an `idempotencyKey`, send the deposit to the order's payinAddress, then follow it with `get_order` \
(free: pass the `pageToken` of its orderPageUrl, or a Sign-In-With-X proof in \
_meta[\"sign-in-with-x\"]). Paid tools answer a PaymentRequired tool error first: pay it in \
_meta[\"x402/payment\"] (x402 exact, USDC) and call again with the same arguments.";

impl<D: Dispatch> ServerHandler for SwapdMcp<D> {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.server_info = Implementation::new("swapd", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(INSTRUCTIONS.into());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.clone().unwrap_or_default();
        let meta = request_meta(request.meta.as_ref().map(|m| &m.0.0), &context);
        Ok(self
            .call(&request.name, &arguments, &meta, &context)
            .await
            .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(READINESS_URI, "readiness")
                .with_title("What swapd offers and what a call costs (free)")
                .with_mime_type("application/json"),
            Resource::new(CURRENCIES_URI, "currencies")
                .with_title("The currency catalog (paid like the `currencies` tool)")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let tool = match request.uri.as_str() {
            READINESS_URI => "readiness",
            CURRENCIES_URI => "currencies",
            other => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource {other}"),
                    None,
                ));
            }
        };
        let meta = request_meta(request.meta.as_ref().map(|m| &m.0.0), &context);
        let result = self.call(tool, &JsonObject::new(), &meta, &context).await;
        let content = result.structured_content.clone().unwrap_or(Value::Null);
        if result.is_error == Some(true) {
            // A resource cannot answer a tool error: the same object rides in the JSON-RPC
            // error's data, with its stable code as the message.
            let code = content["code"]
                .as_str()
                .unwrap_or("internal_error")
                .to_owned();
            return Err(ErrorData::new(
                RpcCode::INVALID_REQUEST,
                code,
                Some(content),
            ));
        }
        Ok(
            ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
                uri: request.uri,
                mime_type: Some("application/json".into()),
                text: content.to_string(),
                meta: result.meta,
            }])
            .into(),
        )
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![swap_prompt()]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "swap" {
            return Err(ErrorData::invalid_params(
                format!("no prompt {}", request.name),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        let argument = |name: &str, otherwise: &str| {
            arguments
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or(otherwise)
                .to_owned()
        };
        let text = swap_steps(
            &argument("fromCcy", "<the currency you send>"),
            &argument("toCcy", "<the currency you want>"),
            &argument("amount", "<how much you send>"),
            &argument("toAddress", "<the address that receives it>"),
        );
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description("Swap one currency for another with swapd, step by step")
                .into(),
        )
    }
}

/// The request's `_meta`: where rmcp left it (the context), with what the params still hold.
fn request_meta(params: Option<&JsonObject>, context: &RequestContext<RoleServer>) -> JsonObject {
    let mut meta = context.meta.0.0.clone();
    if let Some(params) = params {
        meta.extend(params.clone());
    }
    meta
}

fn swap_prompt() -> Prompt {
    let argument = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    Prompt::new(
        "swap",
        Some("Swap one currency for another: routes, order, deposit, status"),
        Some(vec![
            argument("fromCcy", "The currency you send (e.g. BTC)"),
            argument("toCcy", "The currency you want (e.g. ETH)"),
            argument("amount", "How much you send, as a decimal string"),
            argument("toAddress", "The address that receives what you buy"),
        ]),
    )
}

fn swap_steps(from: &str, to: &str, amount: &str, to_address: &str) -> String {
    format!(
        "Swap {amount} {from} for {to}, delivered to {to_address}, with swapd's tools.\n\
         1. Call `discover_routes` with fromCcy={from}, toCcy={to}, amount={amount}. It is paid: \
         answer its PaymentRequired with an x402 payment in _meta[\"x402/payment\"] and call again \
         with the same arguments. Pick a route (best `toAmount`, acceptable `eta`).\n\
         2. For an offchain route, call `resolve_route` with its routeQuoteId to get a createToken \
         (for an onchain route, `resolve_onchain_route` gives the transactions to sign instead).\n\
         3. Call `create_order` with createToken, toAddress={to_address} and a fresh \
         idempotencyKey (reuse the same key if you must retry: the order is created once).\n\
         4. Send exactly the order's fromAmount of {from} to its payinAddress (with payinExtraId \
         when there is one) before it expires.\n\
         5. Follow the order with `get_order` (free): pass orderId and the pageToken, the last \
         segment of its orderPageUrl. Stop when its status is finished, failed, refunded or \
         expired; on emergency, call `emergency` or `refund`."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_swap_prompt_names_the_tools_it_walks_through() {
        let steps = swap_steps("BTC", "ETH", "0.1", "0xabc");
        for tool in [
            "discover_routes",
            "resolve_route",
            "create_order",
            "get_order",
        ] {
            assert!(steps.contains(tool), "{tool}");
        }
        assert!(steps.contains("0.1 BTC for ETH"));
    }
}
