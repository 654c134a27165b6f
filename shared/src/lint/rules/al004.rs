//! AL004 invalid-requirement.
use crate::lint::affinity::{Req, preferred_terms, required_terms, requirements};
use crate::lint::fix::{TextEdit, TextFix};
use crate::lint::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::lint::yaml::{Node, NodeKind, Typed};
use crate::scheduling::{RequirementField, requirement_problems};

pub static META: RuleMeta = RuleMeta {
    id: "AL004",
    name: "invalid-requirement",
    severity: Severity::Error,
    summary: "a node selector requirement the API server rejects",
    doc: "## What it does
Checks every node selector requirement (required and preferred) with the API server's
rules: `In`/`NotIn` need values, `Exists`/`DoesNotExist` take none, `Gt`/`Lt` take exactly one
integer, the operator must be known, the key must be a valid label key; `matchFields` only
supports `metadata.name` with `In`/`NotIn` and one value.

It also checks the shape the API server expects: `requiredDuringScheduling...` is a
mapping with `nodeSelectorTerms` (a list written there instead is rejected, not ignored),
terms and `matchExpressions` are lists of mappings, `values` is a list (`values: x` is not).

And it checks the strings as kubectl sends them: kubectl reads YAML 1.1, so an unquoted
`true`, `yes`, `on`, `80`, `1.0` or `0x1` in `values`, a `nodeSelector` value or a
toleration's `value` is sent as a boolean or a number, and the API server refuses the
object (`cannot unmarshal bool into ... of type string`). `--fix` quotes it (safe: the
object was refused as written). Files kustomize reads (in a directory with a
kustomization, or patches: a workload without its selector, a container without an image)
are read as kustomize reads them: YAML 1.2, where only `true` and `false` are booleans.

## When it does not fire
Only what the API server itself rejects is reported; unusual but valid keys and values are
not. A requirement with a placeholder another tool fills in (`${MIN_GPU_MIB}`,
`{{ .gpu }}`, `$(VAR)`) is not judged. Shape errors are reported once, without follow-up errors from the misread values.

## Why it matters
The API server rejects the whole object: the rollout never starts.

## Example
```yaml
- {key: accelerator.example.com/gpu-memory, operator: Gt, values: [80gb]}
```

## Fix
Use `In` for strings, or a numeric label (`gpu-memory-gb: \"80\"`) with `Gt`/`Lt`. Quote
values kubectl would read as booleans or numbers: `values: [\"true\"]`, `values: [\"80\"]`.",
};

#[derive(Debug)]
pub struct Al004;

fn check_term(term: &Node, out: &mut Vec<RawFinding>) {
    for req in requirements(term) {
        report(&req, RequirementField::Expression, out);
    }
    for field in term.get("matchFields").map(Node::items).unwrap_or_default() {
        let req = Req::from_node(field);
        report(&req, RequirementField::Field, out);
    }
}

/// Text a tool fills in before apply (`${MIN_GPU_MIB}`, `{{ .gpu }}`, `$(VAR)`): what it
/// becomes cannot be judged offline, as AL007 does not judge placeholder quantities.
fn is_placeholder(text: &str) -> bool {
    text.contains("${") || text.contains("{{") || text.contains("$(")
}

fn report(req: &Req<'_>, field: RequirementField, out: &mut Vec<RawFinding>) {
    if is_placeholder(&req.key) || req.values.iter().any(|v| is_placeholder(v)) {
        return;
    }
    let problems = requirement_problems(&req.to_k8s(), field);
    if !problems.is_empty() {
        out.push(RawFinding::at(
            req.node,
            format!(
                "the API server rejects `{}`: {}",
                req.render(),
                problems.join("; ")
            ),
        ));
    }
}

/// The kind of YAML node `node` is, for messages.
fn shape(node: &Node) -> &'static str {
    match &node.kind {
        NodeKind::Map(_) => "a mapping",
        NodeKind::Seq(_) => "a list",
        NodeKind::Scalar { .. } => "a scalar",
    }
}

fn is_list(node: &Node) -> bool {
    matches!(node.kind, NodeKind::Seq(_))
}

fn is_map(node: &Node) -> bool {
    matches!(node.kind, NodeKind::Map(_))
}

/// Shape errors in a node selector term's expression lists.
fn check_term_shape(term: &Node, out: &mut Vec<RawFinding>) {
    if !is_map(term) {
        out.push(RawFinding::at(term, format!("a node selector term must be a mapping (matchExpressions, matchFields), not {}: the API server rejects it", shape(term))));
        return;
    }
    for field in ["matchExpressions", "matchFields"] {
        let Some((key, list)) = term.entry(field) else {
            continue;
        };
        if !is_list(list) && !list.is_null() {
            out.push(RawFinding::at(
                key,
                format!(
                    "{field} must be a list, not {}: the API server rejects it",
                    shape(list)
                ),
            ));
            continue;
        }
        for req in list.items() {
            if !is_map(req) {
                out.push(RawFinding::at(req, format!("a {field} entry must be a mapping (key, operator, values), not {}: the API server rejects it", shape(req))));
            } else if let Some((key, values)) = req.entry("values")
                && !is_list(values)
                && !values.is_null()
            {
                out.push(RawFinding::at(
                    key,
                    format!(
                        "values must be a list (values: [{}]), not {}: the API server rejects it",
                        values.scalar_text().unwrap_or("..."),
                        shape(values)
                    ),
                ));
            }
        }
    }
}

/// Shape errors of a pod spec's node affinity: what the API server rejects outright.
fn check_shapes(spec: &Node, out: &mut Vec<RawFinding>) {
    let Some(affinity) = spec.path(&["affinity", "nodeAffinity"]) else {
        return;
    };
    if let Some((key, required)) = affinity.entry("requiredDuringSchedulingIgnoredDuringExecution")
    {
        match required.entry("nodeSelectorTerms") {
            _ if !is_map(required) && !required.is_null() => out.push(RawFinding::at(key, format!("requiredDuringSchedulingIgnoredDuringExecution must be a mapping with nodeSelectorTerms, not {}: the API server rejects it (the terms are not silently used)", shape(required)))),
            Some((terms_key, terms)) if !is_list(terms) => out.push(RawFinding::at(terms_key, format!("nodeSelectorTerms must be a list of terms, not {}: the API server rejects it", shape(terms)))),
            Some((_, terms)) => {
                for term in terms.items() {
                    check_term_shape(term, out);
                }
            }
            None => {}
        }
    }
    if let Some((key, preferred)) =
        affinity.entry("preferredDuringSchedulingIgnoredDuringExecution")
    {
        if !is_list(preferred) && !preferred.is_null() {
            out.push(RawFinding::at(key, format!("preferredDuringSchedulingIgnoredDuringExecution must be a list of {{weight, preference}}, not {}: the API server rejects it", shape(preferred))));
        }
        for entry in preferred.items() {
            // A null preference is decoded as an empty term (AL003's concern), not refused.
            if let Some(p) = entry.get("preference").filter(|p| !p.is_null()) {
                check_term_shape(p, out);
            }
        }
    }
}

/// A plain scalar kubectl sends as a boolean or a number where the API wants a string (a
/// label value, a toleration's value): the object is refused. The fix quotes it.
/// `yaml12`: kustomize reads the file, and YAML 1.2 takes only `true`/`false` as booleans
/// (a `yes` stays a string, written back quoted).
fn check_string(node: &Node, what: &str, yaml12: bool, out: &mut Vec<RawFinding>) {
    let text = node.scalar_text().unwrap_or_default();
    let read_as = match node.kubectl_type() {
        Some(Typed::Bool(_))
            if yaml12
                && !matches!(text, "true" | "True" | "TRUE" | "false" | "False" | "FALSE") =>
        {
            return;
        }
        Some(Typed::Bool(_)) => "a boolean",
        Some(Typed::Int(_) | Typed::Float(_)) => "a number",
        _ => return,
    };
    let quoted = format!("\"{text}\"");
    out.push(
        RawFinding::at(
            node,
            format!(
                "{what} `{text}` is read by kubectl as {read_as} (YAML 1.1), and the API server rejects it where a string belongs: quote it, {quoted}"
            ),
        )
        .with_fix(quoted.clone())
        .with_text_fix(TextFix {
            safe: true,
            title: format!("quote {text}"),
            edits: vec![TextEdit::replace(node, quoted)],
            target: node,
            expected: serde_json::Value::String(text.to_string()),
        }),
    );
}

/// The strings of a term's expressions and fields that kubectl would send typed.
fn check_term_strings(term: &Node, yaml12: bool, out: &mut Vec<RawFinding>) {
    for list in ["matchExpressions", "matchFields"] {
        for req in term.get(list).map(Node::items).unwrap_or_default() {
            for value in req.get("values").map(Node::items).unwrap_or_default() {
                check_string(value, "the value", yaml12, out);
            }
        }
    }
}

/// `nodeSelector` values, tolerations' values and node affinity values kubectl would
/// send as booleans or numbers.
fn check_strings(spec: &Node, yaml12: bool, out: &mut Vec<RawFinding>) {
    for (_, value) in spec
        .get("nodeSelector")
        .map(Node::entries)
        .unwrap_or_default()
    {
        check_string(value, "a nodeSelector value", yaml12, out);
    }
    for toleration in spec.get("tolerations").map(Node::items).unwrap_or_default() {
        if let Some(value) = toleration.get("value") {
            check_string(value, "a toleration's value", yaml12, out);
        }
    }
    if let Some((_, terms)) = required_terms(spec) {
        for term in terms {
            check_term_strings(term, yaml12, out);
        }
    }
    for (_, _, preference) in preferred_terms(spec) {
        if let Some(p) = preference {
            check_term_strings(p, yaml12, out);
        }
    }
}

/// A kustomize patch rather than an object to apply: a workload without its selector, or
/// a container without an image (both required by the API server).
fn is_patch(object: &crate::lint::source::Object<'_>, spec: &Node) -> bool {
    let workload = matches!(
        object.kind.as_str(),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
    );
    (workload && object.root.path(&["spec", "selector"]).is_none())
        || spec
            .get("containers")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .any(|c| c.get("image").is_none())
}

impl Rule for Al004 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let before = out.len();
        check_shapes(spec, out);
        if out.len() > before {
            // Values read from a wrong shape would only add confusing follow-up errors.
            return;
        }
        let yaml12 = cx.object.document.kustomize || is_patch(cx.object, spec);
        check_strings(spec, yaml12, out);
        if let Some((_, terms)) = required_terms(spec) {
            for term in terms {
                check_term(term, out);
            }
        }
        for (_, _, preference) in preferred_terms(spec) {
            if let Some(p) = preference {
                check_term(p, out);
            }
        }
    }
}
