//! AL001 split-required-terms finds required nodeSelectorTerms split into terms over
//! different keys: they are OR-ed.
use crate::affinity::{
    Req, keys, marked_as_or, merged_term_yaml, render_term, required_terms, requirements,
};
use crate::fix::{TextEdit, TextFix, alone_on_lines, indentation, is_flow, source};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::source::Document;
use crate::yaml::Node;

pub static META: RuleMeta = RuleMeta {
    id: "AL001",
    name: "split-required-terms",
    severity: Severity::Error,
    summary: "required nodeSelectorTerms split into terms over different keys: they are OR-ed",
    doc: "## What it does
Flags required node affinity whose `nodeSelectorTerms` hold several terms that constrain
different keys (at least two terms share no key).

## Why it matters
Terms are OR-ed; only the expressions inside one term are AND-ed. What was meant as
\"online pool AND A100 AND 80 GB\" becomes \"online pool OR A100 OR 80 GB\": the model lands on
any node matching one condition, typically the wrong GPU.

## When it does not fire
- A real OR over the same keys (`a100` or `h100` in two terms with the same keys).
- An OR of alternative evidence: every term is one presence check — `Exists`, `In` over
  values like `\"true\"`, a `*.present` key, or a node-feature-discovery fact
  (`feature.node.kubernetes.io/...`) — such as \"an NVIDIA PCI device OR an NVIDIA CPU OR
  `nvidia.com/gpu.present`\". Each is enough on its own, so the OR is what was meant.
- An OR between a deprecated well-known label and the label that replaced it
  (`beta.kubernetes.io/os` and `kubernetes.io/os`, `failure-domain.beta.kubernetes.io/zone`
  and `topology.kubernetes.io/zone`, the `arch`, `region` and `instance-type` pairs): they
  count as one key, so old and new nodes both match.
- An OR of one property published by different sources — a manifest written for clusters
  with NVIDIA GPU Feature Discovery and for GKE node pools asks for
  `nvidia.com/gpu.product` OR `cloud.google.com/gke-accelerator`, and a node of either kind
  carries only its own label. These count as one key (an OR across *different* properties,
  GPU model OR zone, is still flagged):
  - GPU model: `nvidia.com/gpu.product` (GPU Feature Discovery, also OpenShift's GPU
    operator), `cloud.google.com/gke-accelerator` (GKE), `karpenter.k8s.aws/instance-gpu-name`
    (Karpenter on AWS), `k8s.amazonaws.com/accelerator` (EKS), `amd.com/gpu.product-name`
    (AMD GPU labeller);
  - GPU memory: `nvidia.com/gpu.memory`, `karpenter.k8s.aws/instance-gpu-memory`,
    `amd.com/gpu.vram`;
  - GPU count: `nvidia.com/gpu.count`, `karpenter.k8s.aws/instance-gpu-count`,
    `cloud.google.com/gke-accelerator-count`;
  - GPU vendor: `karpenter.k8s.aws/instance-gpu-manufacturer`,
    `kubernetes.azure.com/accelerator` (AKS);
  - zone: `topology.kubernetes.io/zone`, `topology.gke.io/zone`,
    `topology.ebs.csi.aws.com/zone`, `topology.disk.csi.azure.com/zone` (CSI drivers);
  - capacity type: `karpenter.sh/capacity-type`, `eks.amazonaws.com/capacityType`,
    `cloud.google.com/gke-spot`, `kubernetes.azure.com/scalesetpriority`.

  (node-feature-discovery's PCI labels, `feature.node.kubernetes.io/pci-10de.present`, are
  presence checks: the case above.)
- An OR the author marked as deliberate with a comment on the `nodeSelectorTerms:` line,
  on a term, or on the comment lines right above them, that says so: `any of`, `either`,
  `alternative`, `OR-ed`/`ORed`, or `OR` in capitals (a comment that calls the OR a defect —
  `FIXME`, `bug`, `mistake`, `wrong`, `broken` — or negates it does not count):
  ```yaml
  nodeSelectorTerms:   # any of: GPU nodes of either vendor
  ```
  (or the annotation `affinity-lint.placekit.dev/ignore: AL001` on the workload).

## Example
```yaml
nodeSelectorTerms:
- matchExpressions: [{key: pool, operator: In, values: [online]}]
- matchExpressions: [{key: accelerator.example.com/gpu-family, operator: In, values: [a100]}]
```

## Fix
Put every expression in one term. `--fix --unsafe-fixes` does it, editing only the later
terms' lines and keeping the style they are written in (block lists stay block, flow lists
become one flow list); unsafe: the scheduler then requires every condition, so make sure
that is what was meant. In block style:
```yaml
nodeSelectorTerms:
- matchExpressions:
  - {key: pool, operator: In, values: [online]}
  - {key: accelerator.example.com/gpu-family, operator: In, values: [a100]}
```",
};

#[derive(Debug)]
pub struct Al001;

impl Rule for Al001 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        let Some((key_node, terms)) = required_terms(spec) else {
            return;
        };
        if terms.len() < 2 {
            return;
        }
        let key_sets: Vec<_> = terms.iter().map(keys).collect();
        let disjoint_pair = key_sets.iter().enumerate().any(|(i, a)| {
            !a.is_empty()
                && key_sets[i + 1..]
                    .iter()
                    .any(|b| !b.is_empty() && a.is_disjoint(b))
        });
        if !disjoint_pair || alternative_evidence(terms) {
            return;
        }
        if marked_as_or(cx.object, key_node, terms) {
            return;
        }
        let terms_node = required_terms_node(spec);
        let merge = terms_node.and_then(|n| merge_terms(cx.object.document, n));
        let rendered: Vec<String> = terms
            .iter()
            .map(|t| match requirements(t) {
                reqs if reqs.is_empty() => render_term(&reqs),
                reqs => format!("({})", render_term(&reqs)),
            })
            .collect();
        let all: Vec<_> = terms.iter().flat_map(requirements).collect();
        let finding = RawFinding::at(
                key_node,
                format!(
                    "{} nodeSelectorTerms constrain different keys and are OR-ed: the scheduler accepts any node matching {}; if every condition is required, they belong in one term",
                    terms.len(),
                    rendered.join(" OR ")
                ),
            )
            .with_fix(merged_term_yaml(&all));
        out.push(match merge {
            Some(fix) => finding.with_text_fix(fix),
            None => finding.without_text_fix(
                "the terms are written in a way --fix does not rewrite (an empty term or matchFields among them, styles mixed between terms, or comments inside a flow list)",
            ),
        });
    }
}

/// The `nodeSelectorTerms` list node of a pod spec.
fn required_terms_node(spec: &Node) -> Option<&Node> {
    crate::affinity::in_affinity(
        spec,
        &[
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
        ],
    )
}

/// Merges every term's `matchExpressions` into the first term, editing only the lines of
/// the later terms: in block style their `- matchExpressions:` lines go and their
/// expressions are re-indented under the first term's; in flow style their expressions
/// move into the first term's brackets; a whole list written in flow style becomes one
/// flow term. Unsafe: the scheduler then requires every condition, where it accepted
/// any. Terms with `matchFields`, styles mixed between terms, or a flow list with comments
/// inside get no automatic fix.
fn merge_terms(doc: &Document, terms_node: &Node) -> Option<TextFix> {
    let terms = terms_node.items();
    let lists: Vec<&Node> = terms
        .iter()
        .map(|t| match t.entries() {
            [(key, list)] if key.as_str() == Some("matchExpressions") => Some(list),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let first = lists[0];
    let mut edits = Vec::new();
    if is_flow(doc, terms_node) {
        // `nodeSelectorTerms: [{matchExpressions: [..]}, {matchExpressions: [..]}]`: the
        // list is rewritten as one term holding every expression, as written. Only
        // without comments inside it, which the rewrite would drop.
        let whole = source(doc, terms_node)?;
        if whole.contains('#') || !lists.iter().all(|l| is_flow(doc, l)) {
            return None;
        }
        let mut expressions = Vec::new();
        for list in &lists {
            expressions.extend(flow_items(doc, list)?);
        }
        // JSON stays JSON: the key is quoted when the terms quote it.
        let key = if whole.contains("\"matchExpressions\"") {
            "\"matchExpressions\""
        } else {
            "matchExpressions"
        };
        edits.push(TextEdit::replace(
            terms_node,
            format!("[{{{key}: [{}]}}]", expressions.join(", ")),
        ));
    } else if lists.iter().all(|l| is_flow(doc, l)) {
        // Each later term alone on its line(s): `- matchExpressions: [...]`.
        let mut moved = Vec::new();
        for (term, list) in terms.iter().zip(&lists).skip(1) {
            if !alone_on_lines(doc, term, list) {
                return None;
            }
            moved.extend(flow_items(doc, list)?);
            edits.push(TextEdit::delete_lines(term.line, list.end_line));
        }
        edits.push(TextEdit::insert(
            (first.end_line, first.end_col - 1),
            format!(", {}", moved.join(", ")),
        ));
    } else if lists
        .iter()
        .all(|l| !is_flow(doc, l) && !l.items().is_empty())
    {
        let dash = |list: &Node| Some(indentation(doc.line(list.items()[0].line)?));
        let target_indent = dash(first)?;
        for (term, list) in terms.iter().zip(&lists).skip(1) {
            // `- matchExpressions:` in any spacing or quoting, with or without a comment.
            let line = doc.line(term.line)?;
            let (header, comment) = match line.find(" #") {
                Some(i) => (&line[..i], Some(line[i..].trim())),
                None => (line, None),
            };
            let key = header.trim().strip_prefix('-')?.trim();
            if !matches!(
                key,
                "matchExpressions:" | "\"matchExpressions\":" | "'matchExpressions':"
            ) {
                return None;
            }
            // The header goes; a comment on it stays, on a line of its own.
            edits.push(match comment {
                Some(comment) => TextEdit {
                    from: (term.line, 1),
                    to: (term.line + 1, 1),
                    text: format!(
                        "{}{comment}{}",
                        " ".repeat(indentation(line)),
                        doc.newline()
                    ),
                },
                None => TextEdit::delete_lines(term.line, term.line),
            });
            let indent = dash(list)?;
            if indent != target_indent {
                for line in term.line + 1..=list.end_line {
                    let text = doc.line(line)?;
                    if indentation(text) >= indent && !text.trim().is_empty() {
                        edits.push(TextEdit {
                            from: (line, 1),
                            to: (line, indent + 1),
                            text: " ".repeat(target_indent),
                        });
                    }
                }
            }
        }
    } else {
        return None;
    }
    let merged: Vec<serde_json::Value> = lists
        .iter()
        .flat_map(|l| l.to_json().as_array().cloned().unwrap_or_default())
        .collect();
    Some(TextFix {
        safe: false,
        title: format!(
            "merge the {} terms into one (every condition required)",
            terms.len()
        ),
        edits,
        target: terms_node,
        expected: serde_json::json!([{ "matchExpressions": merged }]),
    })
}

/// The items of a flow list as written, between its brackets (no trailing comma); `None`
/// when the list has none.
fn flow_items(doc: &Document, list: &Node) -> Option<Option<String>> {
    let text = source(doc, list)?;
    let inner = text
        .get(1..text.len().saturating_sub(1))?
        .trim()
        .trim_end_matches(',')
        .trim_end();
    Some((!inner.is_empty()).then(|| inner.to_string()))
}

/// Values that say "this feature is there".
const TRUE_VALUES: &[&str] = &["true", "True", "TRUE", "1", "yes", "enabled", "present"];

/// A requirement that only checks that a feature is there, not which pool or model.
fn presence_check(req: &Req<'_>) -> bool {
    let discovered = req.key.starts_with("feature.node.kubernetes.io/")
        || req.key.ends_with(".present")
        || req.key.ends_with("/present");
    match req.op.as_str() {
        "Exists" => true,
        "In" => discovered || req.values.iter().all(|v| TRUE_VALUES.contains(&v.as_str())),
        _ => false,
    }
}

/// Every term is one presence check: alternative evidence for the same fact, OR-ed on
/// purpose.
fn alternative_evidence(terms: &[Node]) -> bool {
    terms.iter().all(|term| {
        let reqs = requirements(term);
        reqs.len() == 1
            && term.get("matchFields").is_none_or(|f| f.items().is_empty())
            && presence_check(&reqs[0])
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_equivalent_label_source_is_documented() {
        for source in crate::affinity::LABEL_SOURCES {
            for (label, _) in source.labels {
                assert!(super::META.doc.contains(&format!("`{label}`")), "{label}");
            }
        }
    }

    #[test]
    fn comments_that_mark_an_or() {
        use crate::affinity::says_or;
        for yes in [
            "any of these",
            "Either vendor",
            "alternative labels",
            "terms are ORed",
            "OR-ed on purpose",
            "GPU OR CPU",
            "any of: A100 or H100 (TODO: add B200)",
            "either vendor; pods should get one GPU",
        ] {
            assert!(says_or(yes), "{yes}");
        }
        for no in [
            "the model needs an A100",
            "or",
            "colored nodes",
            "operator",
            "ignored",
            "no alternatives",
            "FIXME: these are OR-ed by mistake, merge into one term",
            "pool AND gpu (the OR was a bug)",
            "these should not be ORed",
        ] {
            assert!(!says_or(no), "{no}");
        }
    }
}
