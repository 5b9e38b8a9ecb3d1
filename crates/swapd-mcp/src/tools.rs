//! The tools, derived from the x402 API's OpenAPI document (docs/mcp.md, "Tools"): one per
//! operation of the x402 route table, named by its `operationId`. A route added to the table
//! is in the document, so it is a tool without a second declaration.
//!
//! A tool's arguments are its route's inputs, flat: path and query parameters by name, header
//! parameters in camelCase without `X-` (`Idempotency-Key` is `idempotencyKey`,
//! `X-Page-Token` is `pageToken`), and the properties of the JSON body. The input schema is
//! built from the same schemas as the document; the output schema is the `data` of the
//! route's success answer.

use std::collections::BTreeSet;
use std::sync::Arc;

use http::Method;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

/// What a tool call needs before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Free,
    /// Paid per call with an x402 payment (`_meta["x402/payment"]`).
    Paid,
    /// Free for the wallet that owns the resource: a Sign-In-With-X proof
    /// (`_meta["sign-in-with-x"]`) or, where the route takes one, the resource's page token.
    Wallet,
}

/// Where an argument goes in the route's HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Path,
    Query,
    /// The header of that name.
    Header(String),
    /// A property of the JSON body.
    Body,
}

#[derive(Debug, Clone)]
pub struct Argument {
    pub name: String,
    pub place: Place,
}

/// A tool and the route it calls.
#[derive(Debug, Clone)]
pub struct ToolRoute {
    pub tool: Tool,
    pub method: Method,
    /// The route's path template (`/api/x402/orders/{orderId}`).
    pub path: String,
    pub access: Access,
    pub arguments: Vec<Argument>,
}

impl ToolRoute {
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    pub fn argument(&self, name: &str) -> Option<&Argument> {
        self.arguments.iter().find(|a| a.name == name)
    }

    /// Whether the route sends a JSON body (every POST does, maybe empty).
    pub fn has_body(&self) -> bool {
        self.method == Method::POST
    }
}

/// Every tool of a document, in the document's path order.
#[derive(Debug, Clone, Default)]
pub struct ToolTable {
    routes: Vec<ToolRoute>,
}

/// The document cannot be turned into tools (a bug of the document, said at start).
#[derive(Debug, thiserror::Error)]
#[error("the x402 OpenAPI document cannot be turned into MCP tools: {0}")]
pub struct TableError(String);

/// The path prefix of the routes that become tools.
const X402_PREFIX: &str = "/api/x402/";

impl ToolTable {
    /// The tools of the x402 API's OpenAPI document: every operation with an `operationId`
    /// under `/api/x402/` but the document itself.
    pub fn from_openapi(document: &Value) -> Result<Self, TableError> {
        let schemas = document
            .pointer("/components/schemas")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let paths = document
            .get("paths")
            .and_then(Value::as_object)
            .ok_or_else(|| TableError("no paths".into()))?;
        let mut routes = Vec::new();
        for (path, operations) in paths {
            if !(path.starts_with(X402_PREFIX) || path == X402_PREFIX.trim_end_matches('/'))
                || path.ends_with("/openapi.json")
            {
                continue;
            }
            for (method, operation) in operations.as_object().into_iter().flatten() {
                let Ok(method) = method.to_ascii_uppercase().parse::<Method>() else {
                    continue;
                };
                routes.push(derive(&schemas, path, method, operation)?);
            }
        }
        let names: BTreeSet<&str> = routes.iter().map(ToolRoute::name).collect();
        if names.len() != routes.len() {
            return Err(TableError("two operations share an operationId".into()));
        }
        Ok(Self { routes })
    }

    pub fn get(&self, name: &str) -> Option<&ToolRoute> {
        self.routes.iter().find(|r| r.name() == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &ToolRoute> {
        self.routes.iter()
    }

    pub fn tools(&self) -> Vec<Tool> {
        self.routes.iter().map(|r| r.tool.clone()).collect()
    }
}

fn derive(
    schemas: &Map<String, Value>,
    path: &str,
    method: Method,
    operation: &Value,
) -> Result<ToolRoute, TableError> {
    let problem = |what: &str| TableError(format!("{method} {path}: {what}"));
    let name = operation
        .get("operationId")
        .and_then(Value::as_str)
        .ok_or_else(|| problem("no operationId"))?;
    let access = access(operation);
    let mut input = InputSchema::default();
    for parameter in operation
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        input.parameter(parameter).map_err(|e| problem(&e))?;
    }
    if let Some(body) = operation.pointer("/requestBody/content/application~1json/schema") {
        input.body(schemas, body).map_err(|e| problem(&e))?;
    }
    let output = success_data(operation).ok_or_else(|| problem("no success answer"))?;
    // The document marks what changes nothing (`x-read-only`), a POST /quotes too.
    let read = method == Method::GET
        || operation.get("x-read-only").and_then(Value::as_bool) == Some(true);
    let idempotent = read || input.takes("idempotencyKey");
    let annotations = ToolAnnotations::with_title(title(operation, name))
        .read_only(read)
        .destructive(false)
        .idempotent(idempotent)
        .open_world(true);
    let description = operation
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or(name)
        .to_owned();
    let tool = Tool::new(
        name.to_owned(),
        description,
        Arc::new(input.schema(schemas)),
    )
    .with_title(title(operation, name))
    .with_raw_output_schema(Arc::new(with_definitions(schemas, output)))
    .with_annotations(annotations);
    Ok(ToolRoute {
        tool,
        method,
        path: path.to_owned(),
        access,
        arguments: input.arguments,
    })
}

fn title(operation: &Value, name: &str) -> String {
    operation
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or(name)
        .to_owned()
}

/// The document says what a route needs in its security requirement: `x402` (paid) or
/// `siwx` (a wallet proof); none is free.
fn access(operation: &Value) -> Access {
    let schemes: Vec<&str> = operation
        .get("security")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|requirement| requirement.keys().map(String::as_str))
        .collect();
    if schemes.contains(&"x402") {
        Access::Paid
    } else if schemes.contains(&"siwx") {
        Access::Wallet
    } else {
        Access::Free
    }
}

/// The schema of `data` in the route's success answer (`{"success": true, "data": ...}`).
fn success_data(operation: &Value) -> Option<Value> {
    let responses = operation.get("responses")?.as_object()?;
    responses
        .iter()
        .filter(|(status, _)| status.starts_with('2'))
        .find_map(|(_, response)| {
            response
                .pointer("/content/application~1json/schema/properties/data")
                .cloned()
        })
}

#[derive(Default)]
struct InputSchema {
    properties: Map<String, Value>,
    required: Vec<String>,
    /// Constraints of the body over its properties (which sets of fields go together).
    constraints: Vec<Value>,
    arguments: Vec<Argument>,
}

impl InputSchema {
    fn takes(&self, name: &str) -> bool {
        self.properties.contains_key(name)
    }

    fn add(
        &mut self,
        name: String,
        place: Place,
        schema: Value,
        required: bool,
    ) -> Result<(), String> {
        if self.takes(&name) {
            return Err(format!("two inputs are both called `{name}`"));
        }
        if required {
            self.required.push(name.clone());
        }
        self.properties.insert(name.clone(), schema);
        self.arguments.push(Argument { name, place });
        Ok(())
    }

    fn parameter(&mut self, parameter: &Value) -> Result<(), String> {
        let field = |key: &str| {
            parameter
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (wire, location) = (field("name"), field("in"));
        let required = parameter.get("required").and_then(Value::as_bool) == Some(true);
        let mut schema = parameter
            .get("schema")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if let (Some(object), Some(description)) =
            (schema.as_object_mut(), parameter.get("description"))
        {
            object.entry("description").or_insert(description.clone());
        }
        let (name, place) = match location {
            "path" => (wire.to_owned(), Place::Path),
            "query" => (wire.to_owned(), Place::Query),
            "header" => (argument_of_header(wire), Place::Header(wire.to_owned())),
            other => return Err(format!("parameter `{wire}` in {other}")),
        };
        self.add(name, place, schema, required)
    }

    /// The body's properties become arguments; a body that is not an object of properties
    /// (after its `$ref`, or as the first part of an `allOf`) is refused.
    fn body(&mut self, schemas: &Map<String, Value>, body: &Value) -> Result<(), String> {
        let body = resolve(schemas, body);
        let (object, rest) = match body.get("allOf").and_then(Value::as_array) {
            Some(parts) => {
                let (first, rest) = parts.split_first().ok_or("an empty allOf body")?;
                (resolve(schemas, first), rest.to_vec())
            }
            None => (body, Vec::new()),
        };
        let properties = object
            .get("properties")
            .and_then(Value::as_object)
            .ok_or("a body without properties")?;
        let required: BTreeSet<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for (name, schema) in properties {
            self.add(
                name.clone(),
                Place::Body,
                schema.clone(),
                required.contains(name.as_str()),
            )?;
        }
        self.constraints.extend(rest);
        Ok(())
    }

    fn schema(&self, schemas: &Map<String, Value>) -> JsonObject {
        let mut schema = json!({
            "type": "object",
            "properties": self.properties,
            "additionalProperties": false,
        });
        if !self.required.is_empty() {
            schema["required"] = json!(self.required);
        }
        if !self.constraints.is_empty() {
            schema["allOf"] = json!(self.constraints);
        }
        with_definitions(schemas, schema)
    }
}

/// `Idempotency-Key` → `idempotencyKey`, `X-Page-Token` → `pageToken`.
fn argument_of_header(header: &str) -> String {
    let header = header
        .strip_prefix("X-")
        .or_else(|| header.strip_prefix("x-"))
        .unwrap_or(header);
    let mut name = String::new();
    for (i, word) in header.split('-').enumerate() {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            if i == 0 {
                name.extend(first.to_lowercase());
            } else {
                name.extend(first.to_uppercase());
            }
            name.extend(chars.flat_map(char::to_lowercase));
        }
    }
    name
}

const COMPONENTS: &str = "#/components/schemas/";

/// The component a `$ref` names, else the schema itself.
fn resolve<'a>(schemas: &'a Map<String, Value>, schema: &'a Value) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(COMPONENTS))
        .and_then(|name| schemas.get(name))
        .unwrap_or(schema)
}

/// `schema` standing alone: its references point into its own `$defs`, which hold every
/// component it reaches.
fn with_definitions(schemas: &Map<String, Value>, mut schema: Value) -> JsonObject {
    let mut reached = BTreeSet::new();
    let mut pending = Vec::new();
    collect_references(&schema, &mut pending);
    while let Some(name) = pending.pop() {
        if let Some(component) = schemas.get(&name)
            && reached.insert(name)
        {
            collect_references(component, &mut pending);
        }
    }
    rewrite_references(&mut schema);
    // MCP wants an object schema at the top.
    let mut object = match schema {
        Value::Object(object) if object.get("type") == Some(&json!("object")) => object,
        other => Map::from_iter([
            ("type".to_owned(), json!("object")),
            ("allOf".to_owned(), json!([other])),
        ]),
    };
    if !reached.is_empty() {
        let definitions = reached
            .into_iter()
            .map(|name| {
                let mut component = schemas[&name].clone();
                rewrite_references(&mut component);
                (name, component)
            })
            .collect::<Map<_, _>>();
        object.insert("$defs".into(), Value::Object(definitions));
    }
    object
}

fn collect_references(schema: &Value, into: &mut Vec<String>) {
    match schema {
        Value::Object(object) => {
            if let Some(name) = object
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(COMPONENTS))
            {
                into.push(name.to_owned());
            }
            object.values().for_each(|v| collect_references(v, into));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_references(v, into)),
        _ => {}
    }
}

fn rewrite_references(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get_mut("$ref")
                && let Some(name) = reference.strip_prefix(COMPONENTS)
            {
                *reference = format!("#/$defs/{name}");
            }
            object.values_mut().for_each(rewrite_references);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_references),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_become_camel_case_arguments() {
        assert_eq!(argument_of_header("Idempotency-Key"), "idempotencyKey");
        assert_eq!(argument_of_header("X-Page-Token"), "pageToken");
        assert_eq!(
            argument_of_header("X-Onchain-Execution-Access-Token"),
            "onchainExecutionAccessToken"
        );
    }

    fn document() -> Value {
        json!({
            "paths": {
                "/api/x402/things/{thingId}": {
                    "post": {
                        "operationId": "make_thing",
                        "summary": "Make a thing",
                        "description": "Paid per call. Makes a thing.",
                        "security": [{"x402": []}],
                        "parameters": [
                            {"name": "thingId", "in": "path", "required": true, "schema": {"type": "string"}},
                            {"name": "Idempotency-Key", "in": "header", "required": false, "schema": {"type": "string"}}
                        ],
                        "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ThingInput"}}}},
                        "responses": {"201": {"content": {"application/json": {"schema": {
                            "type": "object",
                            "properties": {"success": {"type": "boolean"}, "data": {"$ref": "#/components/schemas/Thing"}}
                        }}}}}
                    }
                },
                "/api/x402/openapi.json": {"get": {"operationId": "x402_openapi", "responses": {}}},
                "/api/v3/elsewhere": {"get": {"operationId": "elsewhere", "responses": {}}}
            },
            "components": {"schemas": {
                "ThingInput": {
                    "allOf": [
                        {"type": "object", "required": ["size"], "properties": {"size": {"$ref": "#/components/schemas/Size"}, "color": {"type": "string"}}, "additionalProperties": false},
                        {"oneOf": [{"required": ["color"]}, {"required": ["size"]}]}
                    ]
                },
                "Size": {"type": "string", "enum": ["S", "L"]},
                "Thing": {"type": "object", "properties": {"thingId": {"type": "string"}}},
                "Unused": {"type": "string"}
            }}
        })
    }

    #[test]
    fn an_operation_becomes_a_tool_with_flat_arguments_and_standalone_schemas() {
        let table = ToolTable::from_openapi(&document()).unwrap();
        let names: Vec<&str> = table.iter().map(ToolRoute::name).collect();
        assert_eq!(names, ["make_thing"]);
        let route = table.get("make_thing").unwrap();
        assert_eq!(route.access, Access::Paid);
        assert_eq!(route.method, Method::POST);
        assert_eq!(route.path, "/api/x402/things/{thingId}");
        let places: Vec<(&str, &Place)> = route
            .arguments
            .iter()
            .map(|a| (a.name.as_str(), &a.place))
            .collect();
        assert_eq!(
            places,
            [
                ("thingId", &Place::Path),
                ("idempotencyKey", &Place::Header("Idempotency-Key".into())),
                ("color", &Place::Body),
                ("size", &Place::Body),
            ]
        );
        let input = Value::Object((*route.tool.input_schema).clone());
        assert_eq!(input["required"], json!(["thingId", "size"]));
        assert_eq!(input["properties"]["size"], json!({"$ref": "#/$defs/Size"}));
        assert_eq!(
            input["$defs"],
            json!({"Size": {"type": "string", "enum": ["S", "L"]}})
        );
        assert_eq!(
            input["allOf"][0]["oneOf"][0],
            json!({"required": ["color"]})
        );
        let output = Value::Object((*route.tool.output_schema.clone().unwrap()).clone());
        assert_eq!(output["allOf"][0], json!({"$ref": "#/$defs/Thing"}));
        assert!(output["$defs"].get("Thing").is_some());
        let annotations = route.tool.annotations.clone().unwrap();
        assert_eq!(annotations.read_only_hint, Some(false));
        assert_eq!(annotations.destructive_hint, Some(false));
        assert_eq!(annotations.idempotent_hint, Some(true));
    }

    #[test]
    fn an_operation_marked_read_only_is_a_read_whatever_its_method() {
        let mut document = document();
        document["paths"]["/api/x402/things/{thingId}"]["post"]["x-read-only"] = json!(true);
        let table = ToolTable::from_openapi(&document).unwrap();
        let annotations = table
            .get("make_thing")
            .unwrap()
            .tool
            .annotations
            .clone()
            .unwrap();
        assert_eq!(annotations.read_only_hint, Some(true));
    }

    #[test]
    fn an_input_named_twice_is_refused() {
        let mut document = document();
        document["components"]["schemas"]["ThingInput"]["allOf"][0]["properties"]["thingId"] =
            json!({"type": "string"});
        assert!(ToolTable::from_openapi(&document).is_err());
    }
}
