//! AL006 preferred-weight-range finds a preferred node affinity weight outside 1..100.
use crate::affinity::preferred_terms;
use crate::fix::{TextEdit, TextFix, scalar_json};
use crate::rule::{Context, RawFinding, Rule, RuleMeta, Severity};
use crate::yaml::{Node, Typed};

pub static META: RuleMeta = RuleMeta {
    id: "AL006",
    name: "preferred-weight-range",
    severity: Severity::Error,
    summary: "preferred node affinity weight outside 1..100",
    doc: "## What it does
Checks that every preferred node affinity term has a `weight` from 1 to 100 (and that there
is one). Pod affinity and anti-affinity preferred terms are checked the same way.

## When it does not fire
Weights from 1 to 100, read as kubectl reads YAML: `50.0`, `0x10` and `1_0` are whole
numbers it sends as 50, 16 and 10, which the API server accepts. A weight written as a
string (`weight: \"50\"`) or a boolean (`weight: yes`) is reported as the wrong type, not
as out of range.

## Why it matters
The API server rejects other weights: the object is never created. Weights are scores,
not probabilities: 80 and 20 mean \"zone-a matters four times more than power profile\".

## Example
```yaml
preferredDuringSchedulingIgnoredDuringExecution:
- weight: 0
  preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}]}
```

## Fix
Use a weight from 1 to 100. `--fix` sets the nearest one (0 becomes 1, 150 becomes 100,
`\"50\"` becomes 50): a safe fix, since the object was rejected as written.",
};

#[derive(Debug)]
pub struct Al006;

/// The nearest weight the API server accepts, when the written one is a whole number
/// (quoted or not): the fix sets it.
fn nearest_weight(w: &Node) -> Option<i64> {
    let n = match w.kubectl_type()? {
        Typed::Str => w.scalar_text()?.trim().parse().ok()?,
        _ => w.as_i64()?,
    };
    Some(n.clamp(1, 100))
}

fn check_weight(entry: &Node, weight: Option<&Node>, out: &mut Vec<RawFinding>) {
    let Some(w) = weight else {
        out.push(RawFinding::at(
            entry,
            "preferred term without a weight: the API server requires one from 1 to 100",
        ));
        return;
    };
    let text = w.scalar_text().unwrap_or_default();
    let not_an_integer = |what: String| {
        RawFinding::at(
            w,
            format!(
                "weight must be an integer from 1 to 100, not {what}: the API server rejects it"
            ),
        )
    };
    // Read as kubectl reads it: `50.0`, `0x10` and `1_0` are whole numbers it sends as such.
    let finding = match w.kubectl_type() {
        None => not_an_integer("a list or mapping".into()),
        Some(Typed::Str) => not_an_integer(format!("the string {text:?}")),
        Some(Typed::Bool(_)) => {
            not_an_integer(format!("`{text}`, which kubectl reads as a boolean"))
        }
        Some(Typed::Null) => RawFinding::at(
            w,
            "weight is empty: the API server requires one from 1 to 100",
        ),
        Some(Typed::Int(_) | Typed::Float(_)) => match w.as_i64() {
            Some(1..=100) => return,
            Some(n) if n.to_string() != text => RawFinding::at(
                w,
                format!(
                    "weight {text} (kubectl reads {n}) is outside 1..100: the API server rejects it"
                ),
            ),
            Some(_) => RawFinding::at(
                w,
                format!("weight {text} is outside 1..100: the API server rejects it"),
            ),
            None if w.kubectl_type().is_some_and(
                |t| matches!(t, Typed::Float(f) if f.is_finite() && f.fract() != 0.0),
            ) =>
            {
                not_an_integer(format!("{text}, which has a fraction"))
            }
            None => RawFinding::at(
                w,
                format!("weight {text} is outside 1..100: the API server rejects it"),
            ),
        },
    };
    // The object is rejected as written, so the nearest accepted weight changes nothing
    // that ever ran: a safe fix.
    let finding = match nearest_weight(w).zip(scalar_json("weight", "1")) {
        Some((n, _)) => finding
            .with_fix(format!("weight: {n}"))
            .with_text_fix(TextFix {
                safe: true,
                title: format!("set the weight to {n}"),
                edits: vec![TextEdit::replace(w, n.to_string())],
                target: w,
                expected: serde_json::Value::from(n),
            }),
        None => finding,
    };
    out.push(finding);
}

impl Rule for Al006 {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, cx: &Context<'_>, out: &mut Vec<RawFinding>) {
        let Some(spec) = cx.object.pod_spec() else {
            return;
        };
        for (entry, weight, _) in preferred_terms(spec) {
            check_weight(entry, weight, out);
        }
        for kind in ["podAffinity", "podAntiAffinity"] {
            let terms = crate::affinity::in_affinity(
                spec,
                &[kind, "preferredDuringSchedulingIgnoredDuringExecution"],
            );
            for entry in terms.map(Node::items).unwrap_or_default() {
                check_weight(entry, entry.get("weight"), out);
            }
        }
    }
}
