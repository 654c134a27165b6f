//! AL007 extended-resource-limits finds an extended resource (GPU) with requests but no
//! limits, or requests != limits.
use crate::fix::{TextEdit, TextFix, is_flow, source};
use crate::podspec::all_containers;
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::source::Document;
use crate::yaml::{Node, NodeKind};
use placekit_core::model::quantity::parse_quantity_milli;

pub static META: RuleMeta = RuleMeta {
    id: "AL007",
    name: "extended-resource-limits",
    severity: Severity::Error,
    summary: "an extended resource (GPU) with requests but no limits, or requests != limits",
    doc: "## What it does
Flags containers that request an extended resource (a domain-prefixed name outside
`kubernetes.io`, such as `nvidia.com/gpu`, `amd.com/gpu`, `nvidia.com/mig-1g.10gb`) without
the same limit.

## When it does not fire
- Requests and limits that are not quantities (placeholders such as `${GPU_COUNT}`) are
  not compared; only a missing limit is reported then.
- `kubernetes.io` resources (`cpu`, `memory`, `hugepages-*`) are not extended resources.

## Why it matters
Extended resources cannot be overcommitted: the API server rejects a request without an
equal limit, and a mismatch is an error at admission.

## Example
```yaml
resources:
  requests: {nvidia.com/gpu: \"1\"}
```

## Fix
`--fix` adds the limit, equal to the request, in the style of the lines around it (safe:
the object is refused without it):
```yaml
resources:
  requests: {nvidia.com/gpu: \"1\"}
  limits: {nvidia.com/gpu: \"1\"}
```",
};

#[derive(Debug)]
pub struct Al007;

/// A resource name that is an extended resource.
pub fn is_extended(name: &str) -> bool {
    match name.split_once('/') {
        Some((domain, _)) => !(domain == "kubernetes.io" || domain.ends_with(".kubernetes.io")),
        None => false,
    }
}

/// Adds `limits: {RESOURCE: REQUEST}` in the style around it (a line in a block mapping,
/// an entry in a flow mapping). Safe: the API server refuses the object without it, and
/// with it the pod asks for exactly what it requested.
fn add_limit(doc: &Document, container: &Node, key: &Node, value: &Node) -> Option<TextFix> {
    let resources = container.get("resources")?;
    let entry = format!("{}: {}", source(doc, key)?, source(doc, value)?);
    let flow = |node: &Node| is_flow(doc, node);
    // New lines end as the file's do (CRLF files stay CRLF).
    let newline = doc.newline();
    let after_line = |line: usize, text: String| {
        let text = text.replace('\n', newline);
        // The last line of a document may lack its line break.
        let text = match doc.line(line + 1) {
            None if !doc.text.ends_with('\n') => format!("{newline}{text}"),
            _ => text,
        };
        TextEdit::insert((line + 1, 1), text)
    };
    // A key written as the keys around it are: quoted in JSON (`"limits"`), plain in YAML.
    let limits_key = match resources.entries().first().map(|(k, _)| k) {
        Some(k) if source(doc, k).is_some_and(|t| t.starts_with('"')) => "\"limits\"",
        _ => "limits",
    };
    let edit = match resources.get("limits") {
        Some(limits) if matches!(limits.kind, NodeKind::Map(_)) => {
            if flow(limits) {
                let separator = if limits.entries().is_empty() {
                    ""
                } else {
                    ", "
                };
                TextEdit::insert(
                    (limits.end_line, limits.end_col - 1),
                    format!("{separator}{entry}"),
                )
            } else {
                let indent = limits.entries().first()?.0.col - 1;
                after_line(limits.end_line, format!("{}{entry}\n", " ".repeat(indent)))
            }
        }
        Some(_) => return None,
        None if flow(resources) => TextEdit::insert(
            (resources.end_line, resources.end_col - 1),
            format!(", {limits_key}: {{{entry}}}"),
        ),
        None => {
            let (requests_key, requests) = resources.entry("requests")?;
            let indent = " ".repeat(requests_key.col - 1);
            let text = if flow(requests) {
                format!("{indent}limits: {{{entry}}}\n")
            } else {
                let child = " ".repeat(requests.entries().first()?.0.col - 1);
                format!("{indent}limits:\n{child}{entry}\n")
            };
            after_line(requests.end_line, text)
        }
    };
    let mut expected = resources.to_json();
    let limits = expected
        .as_object_mut()?
        .entry("limits")
        .or_insert_with(|| serde_json::json!({}));
    limits
        .as_object_mut()?
        .insert(key.as_str()?.to_string(), value.to_json());
    Some(TextFix {
        safe: true,
        title: format!("add the {} limit, equal to the request", key.as_str()?),
        edits: vec![edit],
        target: resources,
        expected,
    })
}

impl Rule for Al007 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        for container in all_containers(spec) {
            // Argo's single `container`/`script` has no name of its own; KServe's is `model`;
            // a NIMService's is the spec, named after the object.
            let name = container.get("name").and_then(Node::as_str).unwrap_or(
                if container.get("modelFormat").is_some() {
                    "model"
                } else if std::ptr::eq(container, spec) {
                    cx.object.name.as_str()
                } else {
                    "(unnamed)"
                },
            );
            // A GPU written without a value (`nvidia.com/gpu:`) is a zero quantity to the API
            // server (a custom resource's schema prunes it): the pods get no GPU.
            for field in ["requests", "limits"] {
                let entries = container
                    .path(&["resources", field])
                    .map(Node::entries)
                    .unwrap_or_default();
                for (key, value) in entries {
                    if let Some(resource) = key.as_str().filter(|r| is_extended(r))
                        && value.is_null()
                    {
                        out.push(RawFinding::at(key, format!("container {name} {field} {resource} without a value: the API server reads it as 0, so the pods get none")));
                    }
                }
            }
            let Some(requests) = container.path(&["resources", "requests"]) else {
                continue;
            };
            let limits = container.path(&["resources", "limits"]);
            for (key, value) in requests.entries() {
                let Some(resource) = key.as_str().filter(|r| is_extended(r)) else {
                    continue;
                };
                if value.is_null() {
                    continue;
                }
                let shown = value.scalar_text().unwrap_or("?");
                let limit_text = limits
                    .and_then(|l| l.get(resource))
                    .and_then(Node::scalar_text);
                let (requested, limit) = (
                    parse_quantity_milli(shown),
                    limit_text.and_then(parse_quantity_milli),
                );
                // A placeholder (`${GPUS}`, a template) is not a quantity: equal text on
                // both sides is fine, anything else cannot be judged offline.
                if limit_text.is_some() && (requested.is_none() || limit.is_none()) {
                    continue;
                }
                match limit {
                    None => {
                        let mut finding = RawFinding::at(key, format!("container {name} requests {resource}: {shown} without a limit: extended resources need requests == limits"))
                            .with_fix(format!(
                                "limits:\n  {resource}: {}",
                                source(cx.object.document, value).unwrap_or(shown)
                            ));
                        if let Some(fix) = add_limit(cx.object.document, container, key, value) {
                            finding = finding.with_text_fix(fix);
                        }
                        out.push(finding);
                    }
                    Some(l) if Some(l) != requested => out.push(RawFinding::at(
                        key,
                        format!("container {name} requests {resource}: {shown} but its limit differs: extended resources need requests == limits"),
                    )),
                    Some(_) => {}
                }
            }
        }
    }
}
