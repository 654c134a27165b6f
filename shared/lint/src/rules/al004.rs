//! AL004 invalid-requirement finds a node selector requirement, toleration, pod affinity
//! term or spread constraint the API server rejects.
use crate::affinity::{Req, preferred_terms, required_terms, requirements};
use crate::fix::{TextEdit, TextFix};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::{Node, NodeKind, Typed};
use placekit_core::scheduling::{RequirementField, requirement_problems};

pub static META: RuleMeta = RuleMeta {
    id: "AL004",
    name: "invalid-requirement",
    severity: Severity::Error,
    summary: "a node selector requirement, toleration, pod affinity term or spread constraint the API server rejects",
    doc: "## What it does
Checks every node selector requirement (required and preferred) with the API server's
rules: `In`/`NotIn` need values, `Exists`/`DoesNotExist` take none, `Gt`/`Lt` take exactly one
integer, the operator must be known, the key must be a valid label key; `matchFields` only
supports `metadata.name` with `In`/`NotIn` and one value.

It also checks the shape the API server expects: `requiredDuringScheduling...` is a
mapping with `nodeSelectorTerms` (a list written there instead is rejected, not ignored),
terms and `matchExpressions` are lists of mappings, `values` is a list (`values: x` is not).

It checks the other placement fields as the API server validates them, and quotes its
answer (each form checked against kube-apiserver v1.37.2): tolerations (`operator: Exists`
with a `value`, an empty `key` without `Exists`, `tolerationSeconds` without `NoExecute`,
an unknown `operator` or `effect`), pod affinity and anti-affinity terms (a required term
without `topologyKey`, a preferred one without a `weight` of 1-100) and topology spread
constraints (`maxSkew` below 1, no `topologyKey`, a `whenUnsatisfiable` other than
`DoNotSchedule`/`ScheduleAnyway`). In a custom resource's pod template, the pods its
operator creates are the ones refused.

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
A toleration with `operator: Gt` or `Lt` (numeric comparisons, KEP-5471) is refused only
while the TaintTolerationComparisonOperators feature gate is off (alpha since Kubernetes
1.35): it is a warning that says so, not an error.

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
    let Some(affinity) = crate::affinity::in_affinity(spec, &["nodeAffinity"]) else {
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
        let yaml12 = cx.object.document.kustomize || cx.object.is_patch();
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
        let path = cx.object.pod.as_ref().map_or("spec", |p| p.path.as_str());
        // A custom resource is stored as written; the pods its operator creates are refused.
        let whose = if cx.object.pod.as_ref().is_none_or(|p| p.core) {
            "it"
        } else {
            "the pods its operator creates"
        };
        check_validation(spec, path, whose, out);
    }
}

/// The API server's validation of the other placement fields, each finding quoting what it
/// answers (checked against kube-apiserver v1.37.2): tolerations (operator, value, key,
/// effect, tolerationSeconds), pod (anti-)affinity terms (topologyKey, weight) and topology
/// spread constraints (maxSkew, topologyKey, whenUnsatisfiable). `path` is where the pod
/// spec is (`spec.template.spec`), as the API server names the field.
///
/// Long on purpose: one check per validated field, in the order of the API server's
/// validation, each quoting its message.
fn check_validation(spec: &Node, path: &str, whose: &str, out: &mut Vec<RawFinding>) {
    let text = |n: &Node, k: &str| {
        n.get(k)
            .and_then(Node::scalar_text)
            .unwrap_or_default()
            .to_string()
    };
    let reject = |out: &mut Vec<RawFinding>, at: &Node, field: String, answer: String| {
        out.push(RawFinding::at(
            at,
            format!("the API server rejects {whose}: {path}.{field}: {answer}"),
        ));
    };
    for (i, t) in spec
        .get("tolerations")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let (key, operator, value, effect) = (
            text(t, "key"),
            text(t, "operator"),
            text(t, "value"),
            text(t, "effect"),
        );
        if [&key, &operator, &value, &effect]
            .iter()
            .any(|v| is_placeholder(v))
        {
            continue;
        }
        let at = |k: &str| t.get(k).unwrap_or(t);
        let field = |f: &str| format!("tolerations[{i}].{f}");
        match operator.as_str() {
            "Exists" if !value.is_empty() => reject(
                out,
                at("value"),
                field("operator"),
                format!(
                    "Invalid value: {value:?}: value must be empty when `operator` is 'Exists'"
                ),
            ),
            "" | "Equal" if key.is_empty() => reject(
                out,
                at("operator"),
                field("operator"),
                format!(
                    "Invalid value: {:?}: operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                    operator
                ),
            ),
            "" | "Equal" | "Exists" => {}
            // Numeric comparisons (KEP-5471): refused unless the cluster turns the alpha gate
            // on, which some do on purpose: a warning, not an error.
            other @ ("Gt" | "Lt") => {
                reject(
                    out,
                    at("operator"),
                    field("operator"),
                    format!(
                        "Unsupported value: {other:?}: supported values: \"Equal\", \"Exists\", \"Lt\", \"Gt\" (unless it runs with the TaintTolerationComparisonOperators feature gate, alpha since Kubernetes 1.35 and off by default)"
                    ),
                );
                if let Some(last) = out.pop() {
                    out.push(last.with_severity(Severity::Warning));
                }
            }
            other => reject(
                out,
                at("operator"),
                field("operator"),
                format!("Unsupported value: {other:?}: supported values: \"Equal\", \"Exists\""),
            ),
        }
        if !matches!(
            effect.as_str(),
            "" | "NoSchedule" | "PreferNoSchedule" | "NoExecute"
        ) {
            reject(
                out,
                at("effect"),
                field("effect"),
                format!(
                    "Unsupported value: {effect:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
                ),
            );
        } else if t.get("tolerationSeconds").is_some_and(|s| !s.is_null()) && effect != "NoExecute"
        {
            reject(
                out,
                at("tolerationSeconds"),
                field("effect"),
                format!(
                    "Invalid value: {effect:?}: effect must be 'NoExecute' when `tolerationSeconds` is set"
                ),
            );
        }
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(affinity) = crate::affinity::in_affinity(spec, &[kind]) else {
            continue;
        };
        let required = "requiredDuringSchedulingIgnoredDuringExecution";
        for (i, term) in affinity
            .get(required)
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if text(term, "topologyKey").is_empty() && is_map(term) {
                reject(
                    out,
                    term.get("topologyKey").unwrap_or(term),
                    format!("affinity.{kind}.{required}[{i}].topologyKey"),
                    "Required value: can not be empty".into(),
                );
            }
        }
        let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
        for (i, term) in affinity
            .get(preferred)
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if !is_map(term) {
                continue;
            }
            let weight = term.get("weight");
            if weight.is_none_or(|w| w.as_i64().is_some_and(|w| !(1..=100).contains(&w))) {
                reject(
                    out,
                    weight.unwrap_or(term),
                    format!("affinity.{kind}.{preferred}[{i}].weight"),
                    format!(
                        "Invalid value: {}: must be in the range 1-100",
                        weight.and_then(Node::as_i64).unwrap_or(0)
                    ),
                );
            }
            if let Some(inner) = term.get("podAffinityTerm")
                && is_map(inner)
                && text(inner, "topologyKey").is_empty()
            {
                reject(
                    out,
                    inner.get("topologyKey").unwrap_or(inner),
                    format!("affinity.{kind}.{preferred}[{i}].podAffinityTerm.topologyKey"),
                    "Required value: can not be empty".into(),
                );
            }
        }
    }
    for (i, c) in spec
        .get("topologySpreadConstraints")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if !is_map(c) {
            continue;
        }
        let field = |f: &str| format!("topologySpreadConstraints[{i}].{f}");
        let skew = c.get("maxSkew");
        if let Some(n) = skew.map_or(Some(0), Node::as_i64)
            && n <= 0
        {
            reject(
                out,
                skew.unwrap_or(c),
                field("maxSkew"),
                format!("Invalid value: {n}: must be greater than zero"),
            );
        }
        if text(c, "topologyKey").is_empty() {
            reject(
                out,
                c.get("topologyKey").unwrap_or(c),
                field("topologyKey"),
                "Required value: can not be empty".into(),
            );
        }
        let when = text(c, "whenUnsatisfiable");
        if !is_placeholder(&when) && !matches!(when.as_str(), "DoNotSchedule" | "ScheduleAnyway") {
            reject(
                out,
                c.get("whenUnsatisfiable").unwrap_or(c),
                field("whenUnsatisfiable"),
                format!(
                    "Unsupported value: {when:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
                ),
            );
        }
    }
}
