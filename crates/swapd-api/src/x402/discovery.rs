//! The x402 `bazaar` discovery extension (docs/x402.md, "Discovery"): what a paid route takes
//! and answers, as JSON schemas read from the route's operation in the OpenAPI document (one
//! declaration: the utoipa schemas), so that facilitators that index discovery list swapd's
//! routes. The shapes are those of `declareDiscoveryExtension` and the server extension's
//! request-time enrichment in `@x402/extensions` 2.27.

use std::collections::HashMap;
use std::sync::OnceLock;

use axum::http::Method;
use serde_json::{Map, Value, json};

const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// A `$ref` nested deeper than this is left open (`{}`) rather than followed: schemas that
/// refer to themselves end there.
const MAX_DEPTH: usize = 24;

/// What one paid route takes and answers, its references resolved: the extension's `schema`,
/// made once, and what describing a request needs.
#[derive(Debug, Clone)]
pub(crate) struct RouteSchemas {
    method: Method,
    /// A POST's JSON body is described (else the query is).
    body: bool,
    /// The query parameters' schemas, by name, to type the values sent.
    query: Value,
    /// `/api/x402/orders/:orderId`, for routes with path parameters.
    route_template: Option<String>,
    /// Whether the route answers a JSON body.
    output: bool,
    schema: Value,
}

/// The request a `PAYMENT-REQUIRED` answers, as the extension describes it.
pub(crate) struct Presented<'a> {
    /// The route template as mounted (`/api/x402/orders/{orderId}`).
    pub template: &'a str,
    /// The request's path.
    pub path: &'a str,
    pub query: Option<&'a str>,
    /// A POST's JSON body, as checked before the 402.
    pub body: Option<&'a Value>,
}

/// The schemas of every operation of `document` (an OpenAPI 3.1 document), by method and path.
fn read_document(document: &Value) -> HashMap<(Method, String), RouteSchemas> {
    let mut routes = HashMap::new();
    let Some(paths) = document["paths"].as_object() else {
        return routes;
    };
    let components = &document["components"]["schemas"];
    for (path, operations) in paths {
        let Some(operations) = operations.as_object() else {
            continue;
        };
        for (method, operation) in operations {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            let inline = |schema: &Value| inlined(schema, components, 0);
            let parameters = |place: &str| {
                let mut properties = Map::new();
                let mut required = Vec::new();
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    if parameter["in"] != place {
                        continue;
                    }
                    let Some(name) = parameter["name"].as_str() else {
                        continue;
                    };
                    properties.insert(name.to_owned(), inline(&parameter["schema"]));
                    if parameter["required"] == true {
                        required.push(Value::from(name));
                    }
                }
                (!properties.is_empty())
                    .then(|| json!({"properties": properties, "required": required}))
            };
            let json_schema = |content: &Value| {
                Some(&content["application/json"]["schema"])
                    .filter(|schema| schema.is_object())
                    .map(inline)
            };
            let body = json_schema(&operation["requestBody"]["content"]);
            let output = ["200", "201", "202"]
                .iter()
                .find_map(|status| json_schema(&operation["responses"][status]["content"]));
            let schemas = RouteSchemas::new(
                method.clone(),
                path,
                body,
                parameters("query"),
                parameters("path"),
                output,
            );
            routes.insert((method, path.clone()), schemas);
        }
    }
    routes
}

/// `schema` with each `#/components/schemas/…` reference replaced by what it names (the
/// extension travels without the document, and discovery refuses references out of itself),
/// and without its annotations (descriptions, examples, titles): clients echo the extension in
/// every payment, so it carries what validates, not what documents.
fn inlined(schema: &Value, components: &Value, depth: usize) -> Value {
    match schema {
        Value::Object(object) => {
            if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
                let name = reference.trim_start_matches("#/components/schemas/");
                if depth >= MAX_DEPTH || name == reference {
                    return json!({});
                }
                return inlined(&components[name], components, depth + 1);
            }
            Value::Object(
                object
                    .iter()
                    .filter(|(key, _)| !ANNOTATIONS.contains(&key.as_str()))
                    .map(|(key, value)| {
                        let value = match key.as_str() {
                            // A map of names to schemas: its keys are names, not keywords.
                            "properties" | "patternProperties" | "$defs" => {
                                named(value, components, depth)
                            }
                            _ => inlined(value, components, depth),
                        };
                        (key.clone(), value)
                    })
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| inlined(item, components, depth))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Schema keywords that document rather than validate.
const ANNOTATIONS: [&str; 4] = ["description", "example", "examples", "title"];

/// A map of names to schemas, each inlined.
fn named(map: &Value, components: &Value, depth: usize) -> Value {
    match map {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(name, schema)| (name.clone(), inlined(schema, components, depth)))
                .collect(),
        ),
        other => inlined(other, components, depth),
    }
}

/// The schemas of the x402 document's operation `method` `template`, if it has one.
pub(crate) fn route_schemas(method: &Method, template: &str) -> Option<&'static RouteSchemas> {
    static ROUTES: OnceLock<HashMap<(Method, String), RouteSchemas>> = OnceLock::new();
    ROUTES
        .get_or_init(|| {
            let document = serde_json::from_str(crate::openapi::x402_document())
                .expect("the x402 document is JSON");
            read_document(&document)
        })
        .get(&(method.clone(), template.to_owned()))
}

impl RouteSchemas {
    /// The route `method` `template` with its body, query and path parameters (each as the
    /// properties of one object) and its answer's schemas.
    fn new(
        method: Method,
        template: &str,
        body: Option<Value>,
        query: Option<Value>,
        path: Option<Value>,
        output: Option<Value>,
    ) -> Self {
        let mut input = Map::from_iter([
            ("type".into(), json!({"type": "string", "const": "http"})),
            (
                "method".into(),
                json!({"type": "string", "enum": [method.as_str()]}),
            ),
        ]);
        let mut required = vec![json!("type"), json!("method")];
        let query = query.unwrap_or_else(|| json!({"properties": {}}));
        match &body {
            Some(body) => {
                input.insert(
                    "bodyType".into(),
                    json!({"type": "string", "enum": ["json", "form-data", "text"]}),
                );
                input.insert("body".into(), body.clone());
                required.extend([json!("bodyType"), json!("body")]);
            }
            None => {
                input.insert("queryParams".into(), object_schema(&query));
            }
        }
        if let Some(path) = &path {
            input.insert("pathParams".into(), object_schema(path));
        }
        let mut properties = Map::from_iter([(
            "input".into(),
            json!({
                "type": "object",
                "properties": input,
                "required": required,
                "additionalProperties": false,
            }),
        )]);
        if let Some(Value::Object(output)) = &output {
            let mut example = Map::from_iter([("type".into(), json!("object"))]);
            example.extend(output.clone());
            properties.insert(
                "output".into(),
                json!({
                    "type": "object",
                    "properties": {"type": {"type": "string"}, "example": example},
                    "required": ["type"],
                }),
            );
        }
        Self {
            method,
            body: body.is_some(),
            query: query["properties"].clone(),
            route_template: path.is_some().then(|| colon_template(template)),
            output: output.is_some(),
            schema: json!({
                "$schema": SCHEMA_DIALECT,
                "type": "object",
                "properties": properties,
                "required": ["input"],
            }),
        }
    }

    /// The extension for `presented`: its `info` is the request itself (the body or query it
    /// sent, its path's parameters), which its `schema` validates.
    pub(crate) fn extension(&self, presented: &Presented<'_>) -> Value {
        let mut input = Map::from_iter([
            ("type".into(), json!("http")),
            ("method".into(), json!(self.method.as_str())),
        ]);
        if self.body {
            input.insert("bodyType".into(), json!("json"));
            let body = presented.body.cloned().unwrap_or_else(|| json!({}));
            input.insert("body".into(), body);
        } else {
            let values = query_values(presented.query, &self.query);
            input.insert("queryParams".into(), Value::Object(values));
        }
        let mut extension = Map::new();
        if let Some(route_template) = &self.route_template {
            let values = path_values(presented.template, presented.path);
            input.insert("pathParams".into(), Value::Object(values));
            extension.insert("routeTemplate".into(), json!(route_template));
        }
        let mut info = Map::from_iter([("input".into(), Value::Object(input))]);
        if self.output {
            info.insert("output".into(), json!({"type": "json"}));
        }
        extension.insert("info".into(), Value::Object(info));
        extension.insert("schema".into(), self.schema.clone());
        Value::Object(extension)
    }
}

/// `{type: object, properties, required}` of parameters read as one object.
fn object_schema(parameters: &Value) -> Value {
    let mut schema = Map::from_iter([("type".into(), json!("object"))]);
    if let Value::Object(parameters) = parameters {
        schema.extend(parameters.clone());
    }
    Value::Object(schema)
}

/// The request's query as the values its parameters' schemas (by name) type: numbers and
/// booleans as such, the rest as text.
fn query_values(query: Option<&str>, parameters: &Value) -> Map<String, Value> {
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .map(|(name, value)| {
            let typed = match parameters[name.as_ref()]["type"].as_str() {
                Some("integer") => value.parse::<i64>().ok().map(Value::from),
                Some("number") => value.parse::<f64>().ok().map(Value::from),
                Some("boolean") => value.parse::<bool>().ok().map(Value::from),
                _ => None,
            };
            let value = typed.unwrap_or_else(|| Value::from(value.as_ref()));
            (name.into_owned(), value)
        })
        .collect()
}

/// The values of `template`'s `{name}` segments in `path`.
fn path_values(template: &str, path: &str) -> Map<String, Value> {
    template
        .split('/')
        .zip(path.split('/'))
        .filter_map(|(part, value)| {
            let name = part.strip_prefix('{')?.strip_suffix('}')?;
            Some((name.to_owned(), Value::from(value)))
        })
        .collect()
}

/// `/orders/{orderId}` as discovery writes route templates: `/orders/:orderId`.
fn colon_template(template: &str) -> String {
    template
        .split('/')
        .map(
            |part| match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name) => format!(":{name}"),
                None => part.to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_inlined_annotations_dropped_and_a_cycle_ends() {
        let components = json!({
            "A": {"type": "object", "description": "an A",
                "properties": {"b": {"$ref": "#/components/schemas/B"}, "description": {"type": "string", "example": "x"}}},
            "B": {"type": "string", "pattern": "^x$"},
            "Loop": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Loop"}}},
        });
        assert_eq!(
            inlined(&json!({"$ref": "#/components/schemas/A"}), &components, 0),
            json!({"type": "object", "properties": {"b": {"type": "string", "pattern": "^x$"}, "description": {"type": "string"}}})
        );
        let looped = inlined(
            &json!({"$ref": "#/components/schemas/Loop"}),
            &components,
            0,
        );
        assert!(!looped.to_string().contains("$ref"));
    }

    #[test]
    fn every_paid_route_is_described_from_its_operation() {
        for route in super::super::routes().iter().filter(|r| r.access.paid()) {
            let schemas = route_schemas(&route.method, &route.path)
                .unwrap_or_else(|| panic!("{} {} has no operation", route.method, route.path));
            assert!(schemas.output, "{} answers a body", route.path);
            assert_eq!(schemas.body, route.method == Method::POST, "{}", route.path);
            let extension = schemas.extension(&Presented {
                template: &route.path,
                path: &route.path,
                query: None,
                body: None,
            });
            let text = extension.to_string();
            assert!(!text.contains("$ref"), "{}", route.path);
            // Echoed in every payment of the route, whose header the gate caps.
            assert!(
                text.len() <= 6 * 1024,
                "{}: {} bytes",
                route.path,
                text.len()
            );
        }
    }

    #[test]
    fn a_request_is_described_as_sent() {
        let schemas = route_schemas(&Method::GET, "/api/x402/tokens/search").unwrap();
        let extension = schemas.extension(&Presented {
            template: "/api/x402/tokens/search",
            path: "/api/x402/tokens/search",
            query: Some("q=usdc&limit=5"),
            body: None,
        });
        assert_eq!(
            extension["info"]["input"],
            json!({"type": "http", "method": "GET", "queryParams": {"q": "usdc", "limit": 5}})
        );
        let input = &extension["schema"]["properties"]["input"];
        assert_eq!(input["properties"]["queryParams"]["required"], json!(["q"]));
        assert_eq!(
            input["properties"]["queryParams"]["properties"]["limit"]["type"],
            "integer"
        );

        let template = "/api/x402/orders/{orderId}/refund";
        let schemas = route_schemas(&Method::POST, template).unwrap();
        let body = json!({"refundAddress": "bc1qexample"});
        let extension = schemas.extension(&Presented {
            template,
            path: "/api/x402/orders/ord_0123/refund",
            query: None,
            body: Some(&body),
        });
        assert_eq!(
            extension["routeTemplate"],
            "/api/x402/orders/:orderId/refund"
        );
        assert_eq!(extension["info"]["input"]["body"], body);
        assert_eq!(
            extension["info"]["input"]["pathParams"],
            json!({"orderId": "ord_0123"})
        );
        assert_eq!(extension["info"]["output"], json!({"type": "json"}));
    }
}
