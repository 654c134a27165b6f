//! Error answers as `Status` objects with the real reason, code and message text
//! (`k8s.io/apimachinery/pkg/api/errors`).

use serde_json::{Value, json};

use crate::apimachinery::field::go_quote;
use crate::resources::Resource;

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub body: Value,
    /// `Retry-After` seconds, for 429.
    pub retry_after: Option<u32>,
    /// `Warning` header texts recorded before the request failed.
    pub warnings: Vec<String>,
}

impl ApiError {
    /// The same error, answered with these `Warning` headers.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }

    fn new(code: u16, reason: &str, message: String, details: Value) -> Self {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        });
        if !details.is_null() {
            body["details"] = omit_empty(details);
        }
        ApiError {
            code,
            body,
            retry_after: None,
            warnings: Vec::new(),
        }
    }

    pub fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or_default()
    }

    pub fn reason(&self) -> &str {
        self.body["reason"].as_str().unwrap_or_default()
    }

    pub fn not_found(resource: &Resource, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", resource.qualified()),
            json!({"name": name, "group": resource.group, "kind": resource.plural}),
        )
    }

    /// A path the server does not serve.
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
            json!({}),
        )
    }

    pub fn already_exists(resource: &Resource, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", resource.qualified()),
            json!({"name": name, "group": resource.group, "kind": resource.plural}),
        )
    }

    /// A stale `resourceVersion` precondition.
    pub fn conflict(resource: &Resource, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                resource.qualified()
            ),
            json!({"name": name, "group": resource.group, "kind": resource.plural}),
        )
    }

    /// Validation failure with field causes: `Node "n" is invalid: <errors>`.
    pub fn invalid(resource: &Resource, name: &str, causes: Vec<FieldError>) -> Self {
        Self::invalid_kind(resource.group, resource.kind, name, causes)
    }

    /// `errors.NewInvalid(GroupKind{group, kind}, name, causes)`: the message names the kind
    /// as `Kind.group` (`PatchOptions.meta.k8s.io "" is invalid: ...`); the aggregate drops
    /// causes whose text repeats, while `details.causes` keeps them all.
    pub fn invalid_kind(group: &str, kind: &str, name: &str, causes: Vec<FieldError>) -> Self {
        let mut rendered: Vec<String> = Vec::new();
        for c in &causes {
            let text = c.to_string();
            if !rendered.contains(&text) {
                rendered.push(text);
            }
        }
        let joined = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let causes_json: Vec<Value> = causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.body(), "field": c.field}))
            .collect();
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        Self::new(
            422,
            "Invalid",
            format!("{qualified} {} is invalid: {joined}", go_quote(name)),
            json!({"name": name, "group": group, "kind": kind, "causes": causes_json}),
        )
    }

    /// What the API server answers when a JSON Patch does not apply (a failed `test`):
    /// `NewGenericServerResponse(422, ...)`, whose message hides the patch error.
    pub fn patch_not_applied() -> Self {
        Self::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request".into(),
            json!({}),
        )
    }

    /// A body that does not decode into the resource's Go type.
    pub fn cannot_decode(resource: &Resource, error: &str) -> Self {
        Self::bad_request(format!(
            "{kind} in version {version} cannot be handled as a {kind}: {error}",
            kind = resource.kind,
            version = go_quote(resource.version),
        ))
    }

    /// An update or patch whose object is not the one of the URL.
    pub fn name_mismatch(object_name: &str, url_name: &str) -> Self {
        Self::bad_request(format!(
            "the name of the object ({object_name}) does not match the name on the URL ({url_name})"
        ))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message.into(), Value::Null)
    }

    /// A patch with a content type the server does not accept (go-restful's answer).
    pub fn unsupported_media_type() -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            "415: Unsupported Media Type".into(),
            json!({}),
        )
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".into(),
            json!({}),
        )
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized".into(), Value::Null)
    }

    /// RBAC denial, worded like the authorizer's.
    pub fn forbidden(
        user: &str,
        verb: &str,
        resource: &Resource,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Self {
        let subject = match name {
            Some(n) => format!("{} \"{n}\"", resource.qualified()),
            None => resource.qualified(),
        };
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        Self::new(
            403,
            "Forbidden",
            format!(
                "{subject} is forbidden: User \"{user}\" cannot {verb} resource \"{}\" in API group \"{}\" {scope}",
                resource.plural, resource.group
            ),
            json!({"name": name.unwrap_or_default(), "group": resource.group, "kind": resource.plural}),
        )
    }

    /// RBAC denial of a path that names no resource (`/api`, `/apis`), as the authorizer
    /// words it.
    pub fn forbidden_path(user: &str, verb: &str, path: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("forbidden: User \"{user}\" cannot {verb} path \"{path}\""),
            json!({}),
        )
    }

    pub fn too_many_requests(retry_after: u32) -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.".into(),
            json!({"retryAfterSeconds": retry_after}),
        );
        e.retry_after = Some(retry_after);
        e
    }

    /// An error the handler returns as a plain Go error: the code, the message, no reason
    /// (an unparsable `resourceVersion` of a watch is a 500 of this kind).
    pub fn without_reason(code: u16, message: impl Into<String>) -> Self {
        let mut e = Self::new(code, "", message.into(), Value::Null);
        if let Some(body) = e.body.as_object_mut() {
            body.remove("reason");
        }
        e
    }

    /// A `continue` token from before the window of recent changes (etcd's compaction).
    pub fn continue_expired() -> Self {
        Self::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. \
             You can start a new list without the continue parameter, or use the continue \
             token in this response to retrieve the remainder of the results. Continuing with \
             the provided token results in an inconsistent list - objects that were created, \
             modified, or deleted between the time the first chunk was returned and now may \
             show up in the list."
                .to_string(),
            Value::Null,
        )
    }

    /// Server-side apply's 409: one cause per field another manager holds.
    pub fn apply_conflicts(conflicts: &[crate::apply::Conflict]) -> Self {
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|c| {
                json!({"reason": "FieldManagerConflict",
                       "message": format!("conflict with {}", c.manager.shown()),
                       "field": crate::apply::show_path(&c.path)})
            })
            .collect();
        Self::new(
            409,
            "Conflict",
            crate::apply::conflict_message(conflicts),
            json!({ "causes": causes }),
        )
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
            Value::Null,
        )
    }

    /// The answer to an injected `Status` fault: 429 with its `Retry-After`, other codes
    /// with the generic message of [`ApiError::with_code`].
    /// A refusal quoting the credentials the request carried (`sent`, the `Authorization`
    /// header's value), in the words of a server that echoes them.
    pub fn echoing_credentials(sent: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("request with credentials [{sent}] is forbidden"),
            Value::Null,
        )
    }

    pub fn injected(code: u16, retry_after_seconds: Option<u32>) -> Self {
        match (code, retry_after_seconds) {
            (429, Some(seconds)) => Self::too_many_requests(seconds),
            (code, seconds) => {
                let mut e = Self::with_code(code);
                e.retry_after = seconds.or(e.retry_after);
                e
            }
        }
    }

    /// The reverse proxy could not reach the real server (kube-apiserver's own proxies
    /// answer 502 with a `Status` like this).
    pub fn upstream(error: &dyn std::fmt::Display) -> Self {
        Self::new(
            502,
            "ServiceUnavailable",
            format!("error trying to reach the upstream API server: {error}"),
            Value::Null,
        )
    }

    /// Any code with a generic message (fault injection).
    pub fn with_code(code: u16) -> Self {
        match code {
            429 => Self::too_many_requests(1),
            409 => Self::new(
                409,
                "Conflict",
                "the server reported a conflict".into(),
                json!({}),
            ),
            503 => Self::new(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request".into(),
                json!({}),
            ),
            504 => Self::new(
                504,
                "Timeout",
                "Timeout: request did not complete within the allotted timeout".into(),
                json!({}),
            ),
            c if c >= 500 => Self::internal("injected fault"),
            c => Self::new(
                c,
                "Unknown",
                format!(
                    "the server responded with the status code {c} but did not return more information"
                ),
                json!({}),
            ),
        }
    }
}

/// `omitempty`: a `StatusDetails` leaves out an empty name, group, kind or uid.
fn omit_empty(mut details: Value) -> Value {
    if let Some(map) = details.as_object_mut() {
        map.retain(|k, v| {
            !(matches!(k.as_str(), "name" | "group" | "kind" | "uid")
                && (v.is_null() || v.as_str() == Some("")))
        });
    }
    details
}

/// The bad value of a field error, as `ErrorBody` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    /// Not printed (`Required`, `Forbidden`).
    Omitted,
    /// A string, printed with Go's `%q`.
    Str(String),
    /// Already rendered as Go prints it (`json.Marshal` of a struct, `%v` of a number).
    Rendered(String),
}

/// One field error, rendered like `field.Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// `FieldValueInvalid`, `FieldValueNotSupported`, `FieldValueDuplicate`,
    /// `FieldValueRequired`, `FieldValueForbidden`.
    pub reason: &'static str,
    pub field: String,
    pub value: FieldValue,
    pub detail: String,
}

impl FieldError {
    /// `field.Invalid(path, value, detail)` for a string value.
    pub fn invalid(field: impl Into<String>, value: &str, detail: impl Into<String>) -> Self {
        Self::with(
            "FieldValueInvalid",
            field,
            FieldValue::Str(value.into()),
            detail,
        )
    }

    /// `field.Invalid` for a value that is not a string, already rendered as Go prints it.
    pub fn invalid_rendered(
        field: impl Into<String>,
        rendered: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self::with(
            "FieldValueInvalid",
            field,
            FieldValue::Rendered(rendered.into()),
            detail,
        )
    }

    /// `field.Required(path, detail)`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::with("FieldValueRequired", field, FieldValue::Omitted, detail)
    }

    /// `field.Forbidden(path, detail)`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::with("FieldValueForbidden", field, FieldValue::Omitted, detail)
    }

    /// `field.NotSupported(path, value, supported)`.
    pub fn not_supported(field: impl Into<String>, value: FieldValue, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        Self::with(
            "FieldValueNotSupported",
            field,
            value,
            format!("supported values: {}", list.join(", ")),
        )
    }

    /// `field.Duplicate(path, value)` with a detail.
    pub fn duplicate(
        field: impl Into<String>,
        rendered: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self::with(
            "FieldValueDuplicate",
            field,
            FieldValue::Rendered(rendered.into()),
            detail,
        )
    }

    fn with(
        reason: &'static str,
        field: impl Into<String>,
        value: FieldValue,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            reason,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    /// The part after `field: ` (`ErrorBody`).
    pub fn body(&self) -> String {
        let kind = match self.reason {
            "FieldValueRequired" => "Required value",
            "FieldValueForbidden" => "Forbidden",
            "FieldValueNotSupported" => "Unsupported value",
            "FieldValueDuplicate" => "Duplicate value",
            _ => "Invalid value",
        };
        let value = match &self.value {
            FieldValue::Omitted => String::new(),
            FieldValue::Str(s) => format!(": {}", go_quote(s)),
            FieldValue::Rendered(r) => format!(": {r}"),
        };
        format!("{kind}{value}{}", suffix(&self.detail))
    }
}

fn suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}
