//! `kubectl affinity-lint policy`: the single-object rules as a ValidatingAdmissionPolicy
//! (CEL, admissionregistration.k8s.io/v1) and its binding, so a split-term Deployment that
//! never went through the linter is still stopped at the API server.
//!
//! The CEL mirrors the rules' own logic (AL001 with its alternative-evidence exception,
//! AL003, AL006, AL007). The linter's suppression annotation is written by the workload's
//! author, so the policy exempts nothing on its strength unless the admin opts in when
//! generating it ([`Exemptions::Annotation`]); by default the only exemptions are the
//! admin's (the binding's namespace selector). What only the linter can see (comments
//! marking a deliberate OR, other files) stays the linter's.

use super::source::IGNORE_ANNOTATION;

/// The policy's and binding's name.
pub const POLICY_NAME: &str = "affinity-lint.placekit.dev";

/// The rules the policy enforces.
pub const POLICY_RULES: &[&str] = &["AL001", "AL003", "AL006", "AL007"];

/// What the API server does with a violation (`validationActions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Action {
    /// Reject the request.
    Deny,
    /// Admit it, with a warning to the client (kubectl prints it).
    Warn,
    /// Admit it, with an audit annotation.
    Audit,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Deny => "Deny",
            Action::Warn => "Warn",
            Action::Audit => "Audit",
        }
    }
}

/// What may exempt a workload from the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Exemptions {
    /// Nothing a client writes: only the binding's namespace selector, which the admin
    /// sets, leaves workloads out.
    #[default]
    AdminOnly,
    /// Also the linter's `affinity-lint.placekit.dev/ignore` annotation, which anyone who
    /// may create the workload can write (`policy --allow-ignore-annotation`).
    Annotation,
}

/// One CEL validation: the rule, the condition that must hold, and what it says.
struct Check {
    rule: &'static str,
    /// Holds for an object the rule does not flag.
    expression: &'static str,
    message: &'static str,
}

const CHECKS: &[Check] = &[
    Check {
        rule: "AL001",
        expression: "variables.requiredTerms.size() < 2 || variables.alternativeEvidence || !variables.termKeys.exists(a, variables.termKeys.exists(b, a.size() > 0 && b.size() > 0 && !a.exists(k, k in b)))",
        message: "AL001 split-required-terms: required nodeSelectorTerms constrain different keys and are OR-ed, so any one condition admits a node; if every condition is required, put them in one term",
    },
    Check {
        rule: "AL003",
        expression: "!variables.requiredTerms.exists(t, t.?matchExpressions.orValue([]).size() == 0 && t.?matchFields.orValue([]).size() == 0) && !variables.preferredTerms.exists(p, p.?preference.?matchExpressions.orValue([]).size() == 0 && p.?preference.?matchFields.orValue([]).size() == 0)",
        message: "AL003 empty-term: a node selector term with no expressions and no fields matches no node",
    },
    Check {
        rule: "AL006",
        expression: "variables.preferredTerms.all(p, p.?weight.orValue(0) >= 1 && p.?weight.orValue(0) <= 100)",
        message: "AL006 preferred-weight-range: a preferred node affinity weight is outside 1..100",
    },
    Check {
        rule: "AL007",
        expression: "variables.containers.all(c, !has(c.resources) || !has(c.resources.requests) || c.resources.requests.all(r, !(r.contains('/') && !r.startsWith('kubernetes.io/') && !r.split('/')[0].endsWith('.kubernetes.io')) || (has(c.resources.limits) && r in c.resources.limits && quantity(string(c.resources.limits[r])).compareTo(quantity(string(c.resources.requests[r]))) == 0)))",
        message: "AL007 extended-resource-limits: a container requests an extended resource (a GPU) without an equal limit",
    },
];

/// Why `--namespace-selector` cannot become the binding's `namespaceSelector`.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceSelectorError {
    #[error(transparent)]
    Syntax(#[from] placekit_core::syntax::SyntaxError),
    #[error("{0}: a namespace selector has no Gt/Lt (use =, !=, in, notin, exists)")]
    Comparison(String),
}

/// A namespace selector (kubectl's `-l` syntax) as the binding's
/// `matchResources.namespaceSelector` (flow YAML), so a rollout can start with a few
/// namespaces. `Gt`/`Lt` have no metav1.LabelSelector form.
pub fn namespace_selector(selector: &str) -> Result<String, NamespaceSelectorError> {
    use placekit_core::syntax::{LabelSelector, SelectorOperator as Op};
    let parsed = LabelSelector::parse(selector)?;
    let mut expressions = Vec::new();
    for r in &parsed.requirements {
        let operator = match r.operator {
            Op::Equals | Op::DoubleEquals | Op::In => "In",
            Op::NotEquals | Op::NotIn => "NotIn",
            Op::Exists => "Exists",
            Op::DoesNotExist => "DoesNotExist",
            Op::GreaterThan | Op::LessThan => {
                return Err(NamespaceSelectorError::Comparison(r.to_string()));
            }
        };
        let mut e = serde_json::json!({"key": r.key, "operator": operator});
        if !r.values.is_empty() {
            e["values"] = serde_json::json!(r.values);
        }
        expressions.push(e);
    }
    Ok(serde_json::json!({ "matchExpressions": expressions }).to_string())
}

/// The policy and its binding as YAML (two documents); `namespaces` (from
/// [`namespace_selector`]) limits the binding to some namespaces.
///
/// Long on purpose: most of it is the policy's CEL, one expression per rule, kept in one
/// place so the policy reads as it is installed.
pub fn policy_yaml(actions: &[Action], namespaces: Option<&str>, exemptions: Exemptions) -> String {
    let actions: Vec<&str> = actions.iter().map(|a| a.as_str()).collect();
    let exempting = match exemptions {
        Exemptions::Annotation => format!(
            "# Exempt one workload with the annotation {IGNORE_ANNOTATION}: \"AL001\" on the object or its
# pod template (the linter honours the same annotation): generated with
# --allow-ignore-annotation, so whoever may create a workload may exempt it."
        ),
        Exemptions::AdminOnly => format!(
            "# The annotation {IGNORE_ANNOTATION} exempts nothing here: its author is the
# workload's. Leave namespaces out with --namespace-selector, or regenerate with
# --allow-ignore-annotation to let workloads exempt themselves."
        ),
    };
    let mut out = format!(
        "# kubectl affinity-lint policy: {rules} enforced by the API server.
{exempting}
# Apply with:
#   kubectl affinity-lint policy | kubectl apply -f -
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {POLICY_NAME}
  labels:
    app.kubernetes.io/managed-by: kubectl-affinity-lint
spec:
  failurePolicy: Fail
  # Judged: what anyone creates, updates that change the pod template, and pod updates
  # that change node affinity or nodeSelector (allowed while a pod has scheduling gates:
  # gated, patched, ungated is a way around a CREATE-only check).
  # Not judged (threat model): an object with a controller ownerReference that the
  # kube-controller-manager creates (`system:kube-controller-manager`, or its controllers'
  # service accounts in kube-system): its owner was judged, and a workload older than the
  # policy must keep creating its pods. The exemption keys on who sends the request, never
  # on the ownerReference alone, which any client can write (a made-up ReplicaSet owner
  # does not exempt a person's pod); operators in other namespaces are judged like people.
  # Updates that leave the template alone (scaling, labels, finalizers) are not judged, so
  # objects older than the policy keep working.
  matchConditions:
  - name: not-created-by-the-controller-manager
    expression: >-
      !(object.metadata.?ownerReferences.orValue([]).exists(r, r.?controller.orValue(false)) &&
        (request.userInfo.username == 'system:kube-controller-manager' ||
         request.userInfo.username.startsWith('system:serviceaccount:kube-system:')))
  - name: template-created-or-changed
    expression: >-
      request.operation == 'CREATE' ||
      (object.kind == 'Pod' ?
         object.spec.?affinity.orValue({{}}) != oldObject.spec.?affinity.orValue({{}}) ||
         object.spec.?nodeSelector.orValue({{}}) != oldObject.spec.?nodeSelector.orValue({{}}) :
       object.kind == 'PodTemplate' ? object.template != oldObject.template :
       object.kind == 'CronJob' ? object.spec.jobTemplate.spec.template != oldObject.spec.jobTemplate.spec.template :
       object.spec.template != oldObject.spec.template)
  matchConstraints:
    resourceRules:
    - apiGroups: [\"\"]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [pods, podtemplates, replicationcontrollers]
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments, statefulsets, daemonsets, replicasets]
    - apiGroups: [batch]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [jobs, cronjobs]
  variables:
  # The pod template (metadata + spec) of any of the kinds above; a Pod is its own.
  - name: template
    expression: >-
      object.kind == 'Pod' ? object :
      object.kind == 'PodTemplate' ? object.template :
      object.kind == 'CronJob' ? object.spec.jobTemplate.spec.template :
      object.spec.template
  - name: spec
    expression: variables.template.?spec.orValue({{}})
{ignored}  - name: requiredTerms
    expression: >-
      variables.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])
  # Deprecated well-known labels and the labels that replaced them count as one key, and so
  # do the labels different providers publish one property under (AL001's table).
  - name: keyAliases
    expression: >-
      {aliases}
  # The keys each required term constrains.
  - name: termKeys
    expression: >-
      variables.requiredTerms.map(t, t.?matchExpressions.orValue([]).map(e,
        e.key in variables.keyAliases ? variables.keyAliases[e.key] : e.key))
  - name: preferredTerms
    expression: >-
      variables.spec.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([])
  - name: containers
    expression: >-
      variables.spec.?containers.orValue([]) + variables.spec.?initContainers.orValue([])
  # An OR of alternative evidence (each term one presence check) is meant, as in the linter.
  - name: alternativeEvidence
    expression: >-
      variables.requiredTerms.all(t, t.?matchExpressions.orValue([]).size() == 1 &&
        t.?matchFields.orValue([]).size() == 0 &&
        (t.matchExpressions[0].operator == 'Exists' ||
         (t.matchExpressions[0].operator == 'In' &&
          (t.matchExpressions[0].key.startsWith('feature.node.kubernetes.io/') ||
           t.matchExpressions[0].key.endsWith('.present') ||
           t.matchExpressions[0].key.endsWith('/present') ||
           t.matchExpressions[0].?values.orValue([]).all(v, v in ['true', 'True', 'TRUE', '1', 'yes', 'enabled', 'present'])))))
  validations:
",
        rules = POLICY_RULES.join(", "),
        aliases = key_aliases(),
        ignored = match exemptions {
            Exemptions::Annotation => format!(
                "  # The rules the annotation exempts: ids separated by commas, spaces or semicolons, as
  # the linter reads them.
  - name: ignored
    expression: >-
      (object.metadata.?annotations[?'{IGNORE_ANNOTATION}'].orValue('') + ',' +
       variables.template.?metadata.?annotations[?'{IGNORE_ANNOTATION}'].orValue(''))
      .upperAscii().replace(' ', ',').replace(';', ',').replace('\\t', ',').replace('\\n', ',').split(',')
"
            ),
            Exemptions::AdminOnly => String::new(),
        },
    );
    for check in CHECKS {
        let rule = check.rule;
        let (unless, exempt) = match exemptions {
            Exemptions::Annotation => (
                format!("'{rule}' in variables.ignored ||\n      "),
                format!("exempt with the annotation {IGNORE_ANNOTATION}: {rule}"),
            ),
            Exemptions::AdminOnly => (
                String::new(),
                "only the cluster admin can exempt a workload".to_string(),
            ),
        };
        out.push_str(&format!(
            "  - expression: >-
      {unless}{expression}
    messageExpression: >-
      '{message} (' + object.kind + ' ' + object.metadata.?name.orValue(object.metadata.?generateName.orValue('')) +
      '; kubectl affinity-lint rules {rule}; {exempt})'
    reason: Invalid
",
            expression = check.expression,
            message = check.message,
        ));
    }
    out.push_str(&format!(
        "---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {POLICY_NAME}
  labels:
    app.kubernetes.io/managed-by: kubectl-affinity-lint
spec:
  policyName: {POLICY_NAME}
  validationActions: [{}]
",
        actions.join(", ")
    ));
    // Without a selector, every namespace but the control plane's own.
    let selector = namespaces.map(str::to_string).unwrap_or_else(|| {
        serde_json::json!({"matchExpressions": [{
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system"],
        }]})
        .to_string()
    });
    out.push_str(&format!(
        "  matchResources:\n    namespaceSelector: {selector}\n"
    ));
    out
}

/// The linter's label aliases and equivalent label sources as a CEL map literal.
fn key_aliases() -> String {
    let entries: Vec<String> = crate::affinity::key_equivalences()
        .iter()
        .map(|(key, canonical)| format!("'{key}': '{canonical}'"))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_document;

    #[test]
    fn the_policy_is_two_documents_of_valid_yaml_naming_every_rule() {
        let selector = namespace_selector("team in (ml,infra),!legacy").unwrap();
        let text = policy_yaml(
            &[Action::Deny, Action::Audit],
            Some(&selector),
            Exemptions::Annotation,
        );
        let docs: Vec<&str> = text.split("\n---\n").collect();
        assert_eq!(docs.len(), 2);
        let policy = parse_document(docs[0], 0).unwrap().unwrap().to_json();
        let binding = parse_document(docs[1], 0).unwrap().unwrap().to_json();
        assert_eq!(policy["kind"], "ValidatingAdmissionPolicy");
        assert_eq!(
            binding["spec"]["validationActions"],
            serde_json::json!(["Deny", "Audit"])
        );
        assert_eq!(
            binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"],
            serde_json::json!([
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "team", "operator": "In", "values": ["infra", "ml"]}
            ])
        );
        assert!(namespace_selector("size>3").is_err());
        let validations = policy["spec"]["validations"].as_array().unwrap();
        assert_eq!(validations.len(), POLICY_RULES.len());
        for (v, rule) in validations.iter().zip(POLICY_RULES) {
            assert!(v["messageExpression"].as_str().unwrap().contains(rule));
            assert!(
                v["expression"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("'{rule}' in variables.ignored"))
            );
        }
    }
}

#[cfg(test)]
mod exemption_tests {
    use super::*;
    use crate::yaml::parse_document;

    /// The annotation is the workload author's to write: by default it exempts nothing,
    /// and the policy says who can exempt.
    #[test]
    fn the_annotation_exempts_only_when_the_admin_opted_in() {
        let text = policy_yaml(&[Action::Deny], None, Exemptions::AdminOnly);
        let policy = parse_document(text.split("\n---\n").next().unwrap(), 0)
            .unwrap()
            .unwrap()
            .to_json();
        let spec = &policy["spec"];
        assert!(
            !spec["variables"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["name"] == "ignored"),
            "{text}"
        );
        for v in spec["validations"].as_array().unwrap() {
            let expression = v["expression"].as_str().unwrap();
            assert!(!expression.contains("ignored"), "{expression}");
            assert!(
                v["messageExpression"]
                    .as_str()
                    .unwrap()
                    .contains("only the cluster admin can exempt a workload")
            );
        }
        assert!(!text.contains(&format!("'{IGNORE_ANNOTATION}'")), "{text}");
    }
}
