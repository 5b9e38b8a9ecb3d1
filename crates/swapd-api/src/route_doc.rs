//! Reading a handler's OpenAPI annotation (`utoipa_axum::routes!` of one handler): the route
//! tables of both surfaces take a route's path and method from it.

use axum::http::Method;
use utoipa::openapi::path::{HttpMethod, Operation, Paths};

/// The one path, method and operation of `routes!(handler)`.
pub(crate) fn single_operation(paths: Paths) -> (String, Method, Operation) {
    let mut paths = paths.paths.into_iter();
    let (path, item) = paths.next().expect("the handler has a #[utoipa::path]");
    assert!(paths.next().is_none(), "one handler per route");
    let operations = [
        (Method::GET, item.get),
        (Method::POST, item.post),
        (Method::PATCH, item.patch),
        (Method::PUT, item.put),
        (Method::DELETE, item.delete),
    ];
    let mut found = operations
        .into_iter()
        .filter_map(|(method, operation)| operation.map(|operation| (method, operation)));
    let (method, operation) = found.next().expect("the annotation names a method");
    assert!(found.next().is_none(), "one method per handler: {path}");
    (path, method, operation)
}

pub(crate) fn http_method(method: &Method) -> HttpMethod {
    match *method {
        Method::GET => HttpMethod::Get,
        Method::POST => HttpMethod::Post,
        Method::PATCH => HttpMethod::Patch,
        Method::PUT => HttpMethod::Put,
        Method::DELETE => HttpMethod::Delete,
        _ => unreachable!("no route is declared with {method}"),
    }
}
