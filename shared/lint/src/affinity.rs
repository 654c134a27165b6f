//! Node-affinity helpers shared by the rules: the requirements of a term as written, term
//! satisfiability, and rendering terms the way users read them.

use std::collections::BTreeSet;

use super::yaml::Node;

/// One `matchExpressions` entry as written.
#[derive(Debug, Clone)]
pub struct Req<'a> {
    pub key: String,
    pub op: String,
    pub values: Vec<String>,
    pub node: &'a Node,
}

impl Req<'_> {
    /// `pool In [online]`.
    pub fn render(&self) -> String {
        match self.op.as_str() {
            "Exists" | "DoesNotExist" => format!("{} {}", self.key, self.op),
            _ => format!("{} {} [{}]", self.key, self.op, self.values.join(", ")),
        }
    }

    /// The k8s type, for validation shared with the scheduler helpers.
    pub fn to_k8s(&self) -> k8s_openapi::api::core::v1::NodeSelectorRequirement {
        k8s_openapi::api::core::v1::NodeSelectorRequirement {
            key: self.key.clone(),
            operator: self.op.clone(),
            values: (!self.values.is_empty()).then(|| self.values.clone()),
        }
    }
}

impl<'a> Req<'a> {
    /// Reads one requirement (`key`, `operator`, `values`) as written.
    pub fn from_node(e: &'a Node) -> Self {
        let text = |k: &str| {
            e.get(k)
                .and_then(Node::scalar_text)
                .unwrap_or_default()
                .to_string()
        };
        Req {
            key: text("key"),
            op: text("operator"),
            values: e
                .get("values")
                .map(Node::items)
                .unwrap_or_default()
                .iter()
                .filter_map(|v| v.scalar_text().map(str::to_string))
                .collect(),
            node: e,
        }
    }
}

/// The expressions of a node selector term (or a preferred term's `preference`).
pub fn requirements(term: &Node) -> Vec<Req<'_>> {
    term.get("matchExpressions")
        .map(Node::items)
        .unwrap_or_default()
        .iter()
        .map(Req::from_node)
        .collect()
}

/// The deprecated well-known node labels and the labels that replaced them: a kubelet
/// sets both, and manifests that must run on old and new nodes OR one with the other.
pub const LABEL_ALIASES: &[(&str, &str)] = &[
    ("beta.kubernetes.io/os", "kubernetes.io/os"),
    ("beta.kubernetes.io/arch", "kubernetes.io/arch"),
    (
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
    ),
    (
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    ),
];

/// One property of a node that several providers and discovery agents publish under labels
/// of their own: a term over any of them says the same thing, so an OR across them (a GKE
/// node pool OR a cluster running GPU Feature Discovery) is an OR of sources, not of facts.
#[derive(Debug, Clone, Copy)]
pub struct LabelSource {
    /// What the labels say (`GPU model`).
    pub property: &'static str,
    /// The labels, the first standing for all of them, with who publishes each.
    pub labels: &'static [(&'static str, &'static str)],
}

/// Labels that publish one property from different sources (checked against the providers'
/// and agents' documentation; values differ in spelling between sources, so only the key is
/// shared). Listed in `rules AL001`.
pub const LABEL_SOURCES: &[LabelSource] = &[
    LabelSource {
        property: "GPU model",
        labels: &[
            (
                "nvidia.com/gpu.product",
                "NVIDIA GPU Feature Discovery (any cluster, OpenShift's GPU operator)",
            ),
            ("cloud.google.com/gke-accelerator", "GKE"),
            ("karpenter.k8s.aws/instance-gpu-name", "Karpenter on AWS"),
            ("k8s.amazonaws.com/accelerator", "EKS GPU node groups"),
            ("amd.com/gpu.product-name", "AMD GPU labeller"),
        ],
    },
    LabelSource {
        property: "GPU memory",
        labels: &[
            ("nvidia.com/gpu.memory", "NVIDIA GPU Feature Discovery"),
            ("karpenter.k8s.aws/instance-gpu-memory", "Karpenter on AWS"),
            ("amd.com/gpu.vram", "AMD GPU labeller"),
        ],
    },
    LabelSource {
        property: "GPU count",
        labels: &[
            ("nvidia.com/gpu.count", "NVIDIA GPU Feature Discovery"),
            ("karpenter.k8s.aws/instance-gpu-count", "Karpenter on AWS"),
            ("cloud.google.com/gke-accelerator-count", "GKE"),
        ],
    },
    LabelSource {
        property: "GPU vendor",
        labels: &[
            (
                "karpenter.k8s.aws/instance-gpu-manufacturer",
                "Karpenter on AWS",
            ),
            ("kubernetes.azure.com/accelerator", "AKS GPU node pools"),
        ],
    },
    LabelSource {
        property: "zone",
        labels: &[
            ("topology.kubernetes.io/zone", "kubelet (cloud providers)"),
            ("topology.gke.io/zone", "GKE's Persistent Disk CSI driver"),
            ("topology.ebs.csi.aws.com/zone", "AWS EBS CSI driver"),
            ("topology.disk.csi.azure.com/zone", "Azure Disk CSI driver"),
        ],
    },
    LabelSource {
        property: "capacity type (spot or on-demand)",
        labels: &[
            ("karpenter.sh/capacity-type", "Karpenter"),
            ("eks.amazonaws.com/capacityType", "EKS managed node groups"),
            ("cloud.google.com/gke-spot", "GKE"),
            ("kubernetes.azure.com/scalesetpriority", "AKS"),
        ],
    },
];

/// A key as the label that stands for it, so `beta.kubernetes.io/os` and `kubernetes.io/os`
/// count as one key, and so do the labels of one [`LABEL_SOURCES`] property.
pub fn canonical_key(key: &str) -> &str {
    let key = LABEL_ALIASES
        .iter()
        .find(|(old, _)| *old == key)
        .map_or(key, |(_, new)| new);
    LABEL_SOURCES
        .iter()
        .find(|source| source.labels.iter().any(|(label, _)| *label == key))
        .map_or(key, |source| source.labels[0].0)
}

/// Every key that [`canonical_key`] changes, with what it becomes (for the admission
/// policy's CEL, which must count keys as the linter does).
pub fn key_equivalences() -> Vec<(&'static str, &'static str)> {
    let aliases = LABEL_ALIASES
        .iter()
        .map(|(old, new)| (*old, canonical_key(new)));
    let sources = LABEL_SOURCES.iter().flat_map(|source| {
        source.labels[1..]
            .iter()
            .map(move |(label, _)| (*label, source.labels[0].0))
    });
    aliases
        .chain(sources)
        .filter(|(key, canonical)| key != canonical)
        .collect()
}

/// The keys a term constrains, deprecated labels counted as the labels that replaced them.
pub fn keys(term: &Node) -> BTreeSet<String> {
    requirements(term)
        .into_iter()
        .map(|r| canonical_key(&r.key).to_string())
        .collect()
}

/// Whether the author marked the OR of these terms as meant, with a comment on the
/// `nodeSelectorTerms:` line, on a term, or on the comment lines right above them.
pub fn marked_as_or(object: &super::source::Object<'_>, key_node: &Node, terms: &[Node]) -> bool {
    std::iter::once(key_node)
        .chain(terms)
        .flat_map(|n| object.comments_at(n.line))
        .any(says_or)
}

/// A comment that says the terms are alternatives: `any of`, `either`, `alternative`,
/// `OR-ed`/`ORed`, or `OR` in capitals — unless it is negated ("no alternatives", "not
/// OR-ed") or says the OR is a defect ("FIXME: OR-ed by mistake", "the OR was a bug"; a
/// TODO about something else, "any of: A100 or H100 (TODO: add B200)", still marks it).
pub fn says_or(comment: &str) -> bool {
    let words: Vec<&str> = comment
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    const DEFECT: &[&str] = &[
        "fixme",
        "bug",
        "bugs",
        "buggy",
        "mistake",
        "mistakes",
        "mistaken",
        "mistakenly",
        "wrong",
        "wrongly",
        "accident",
        "accidental",
        "accidentally",
        "broken",
        "incorrect",
        "incorrectly",
        "unintended",
        "unintentional",
    ];
    if words
        .iter()
        .any(|w| DEFECT.contains(&w.to_ascii_lowercase().as_str()))
    {
        return false;
    }
    let negated = |i: usize| {
        words[i.saturating_sub(2)..i].iter().any(|w| {
            ["no", "not", "never", "without", "none"].contains(&w.to_ascii_lowercase().as_str())
        })
    };
    words.iter().enumerate().any(|(i, w)| {
        let lower = w.to_ascii_lowercase();
        (*w == "OR"
            || ["ored", "or-ed", "either"].contains(&lower.as_str())
            || lower.starts_with("alternative"))
            && !negated(i)
    }) || words.windows(2).enumerate().any(|(i, p)| {
        p[0].eq_ignore_ascii_case("any") && p[1].eq_ignore_ascii_case("of") && !negated(i)
    })
}

/// A pod spec's `affinity`, or the spec itself when it is an operator's placement block
/// that holds `nodeAffinity`, `podAffinity` and `podAntiAffinity` directly beside
/// `tolerations` (ScyllaDB's racks, Rook's Ceph daemons): no pod spec has them at its top.
pub fn affinity_of(spec: &Node) -> Option<&Node> {
    spec.get("affinity").or_else(|| {
        ["nodeAffinity", "podAffinity", "podAntiAffinity"]
            .iter()
            .any(|k| spec.get(k).is_some())
            .then_some(spec)
    })
}

/// The node at `path` inside a pod spec's affinity ([`affinity_of`]).
pub fn in_affinity<'a>(spec: &'a Node, path: &[&str]) -> Option<&'a Node> {
    affinity_of(spec)?.path(path)
}

/// The required `nodeSelectorTerms` of a pod spec, with the `nodeSelectorTerms` key node.
pub fn required_terms(spec: &Node) -> Option<(&Node, &[Node])> {
    let selector = in_affinity(
        spec,
        &[
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ],
    )?;
    let (key, terms) = selector.entry("nodeSelectorTerms")?;
    Some((key, terms.items()))
}

/// The preferred terms of a pod spec: (entry, weight node, preference).
pub fn preferred_terms(spec: &Node) -> Vec<(&Node, Option<&Node>, Option<&Node>)> {
    in_affinity(
        spec,
        &[
            "nodeAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ],
    )
    .map(Node::items)
    .unwrap_or_default()
    .iter()
    .map(|p| (p, p.get("weight"), p.get("preference")))
    .collect()
}

/// Why a conjunction of requirements can hold on no node, if it cannot. Requirements with
/// invalid shapes are ignored here (AL004 reports them).
pub fn contradiction(reqs: &[(&str, &str, &[String])]) -> Option<String> {
    let mut by_key: std::collections::BTreeMap<&str, Vec<(&str, &[String])>> = Default::default();
    for (k, op, values) in reqs {
        by_key.entry(k).or_default().push((op, values));
    }
    for (key, ops) in by_key {
        let mut allowed: Option<BTreeSet<&str>> = None;
        let mut forbidden: BTreeSet<&str> = BTreeSet::new();
        let (mut exists, mut absent) = (false, false);
        let (mut lower, mut upper) = (i64::MIN, i64::MAX);
        for (op, values) in &ops {
            match *op {
                // `In` without values is a shape error (AL004), not a contradiction.
                "In" if values.is_empty() => {}
                "In" => {
                    exists = true;
                    let set: BTreeSet<&str> = values.iter().map(String::as_str).collect();
                    allowed = Some(match allowed {
                        Some(a) => a.intersection(&set).copied().collect(),
                        None => set,
                    });
                }
                "NotIn" => forbidden.extend(values.iter().map(String::as_str)),
                "Exists" => exists = true,
                "DoesNotExist" => absent = true,
                "Gt" => {
                    exists = true;
                    if let Some(v) = values.first().and_then(|v| v.parse::<i64>().ok()) {
                        lower = lower.max(v.saturating_add(1));
                    }
                }
                "Lt" => {
                    exists = true;
                    if let Some(v) = values.first().and_then(|v| v.parse::<i64>().ok()) {
                        upper = upper.min(v.saturating_sub(1));
                    }
                }
                _ => {}
            }
        }
        if exists && absent {
            return Some(format!("{key} must both exist and not exist"));
        }
        if let Some(allowed) = &allowed {
            let left: Vec<&&str> = allowed
                .iter()
                .filter(|v| !forbidden.contains(**v))
                .collect();
            if left.is_empty() {
                return Some(format!(
                    "no value of {key} is both allowed (In) and not excluded (NotIn)"
                ));
            }
            if lower != i64::MIN || upper != i64::MAX {
                let numeric_ok = left
                    .iter()
                    .any(|v| v.parse::<i64>().is_ok_and(|n| n >= lower && n <= upper));
                if !numeric_ok {
                    return Some(format!("no allowed value of {key} is in the Gt/Lt range"));
                }
            }
        }
        if lower > upper {
            return Some(format!("the Gt/Lt range of {key} is empty"));
        }
    }
    None
}

/// A term's requirements as the plain tuples [`contradiction`] takes.
pub fn tuples<'a>(reqs: &'a [Req<'a>]) -> Vec<(&'a str, &'a str, &'a [String])> {
    reqs.iter()
        .map(|r| (r.key.as_str(), r.op.as_str(), r.values.as_slice()))
        .collect()
}

/// A term as `a In [x] AND b In [y]`.
pub fn render_term(reqs: &[Req<'_>]) -> String {
    if reqs.is_empty() {
        return "(empty term)".into();
    }
    reqs.iter()
        .map(Req::render)
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// YAML for one merged term holding all `reqs`, indented for `nodeSelectorTerms:`.
pub fn merged_term_yaml(reqs: &[Req<'_>]) -> String {
    let mut out = String::from("nodeSelectorTerms:\n- matchExpressions:\n");
    for r in reqs {
        out.push_str(&format!("  - key: {}\n    operator: {}\n", r.key, r.op));
        if !r.values.is_empty() {
            out.push_str(&format!("    values: [{}]\n", r.values.join(", ")));
        }
    }
    out
}

/// A metav1.LabelSelector as written (`matchLabels` + `matchExpressions`), owned so facts
/// about it outlive the document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub match_labels: Vec<(String, String)>,
    /// (key, operator, values).
    pub expressions: Vec<(String, String, Vec<String>)>,
}

impl LabelSelector {
    pub fn from_node(selector: &Node) -> Self {
        LabelSelector {
            match_labels: selector
                .get("matchLabels")
                .map(Node::string_map)
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            expressions: selector
                .get("matchExpressions")
                .map(Node::items)
                .unwrap_or_default()
                .iter()
                .map(|e| {
                    let text = |k: &str| {
                        e.get(k)
                            .and_then(Node::as_str)
                            .unwrap_or_default()
                            .to_string()
                    };
                    let values = e
                        .get("values")
                        .map(Node::items)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(Node::scalar_text)
                        .map(str::to_string)
                        .collect();
                    (text("key"), text("operator"), values)
                })
                .collect(),
        }
    }

    /// Whether it selects `labels`.
    pub fn selects<K: AsRef<str>, V: AsRef<str>>(&self, labels: &[(K, V)]) -> bool {
        self.may_select(labels, |_| false)
    }

    /// Whether it may select pods with `labels` plus labels someone else adds under the
    /// keys `added` accepts (a controller's `job-name`, `pod-template-hash`...): a
    /// requirement on such a key that the labels lack is given the benefit of the doubt.
    /// The matching itself is the scheduler's ([`placekit_core::scheduling::label_selector_matches`]).
    /// Whether the selector names any key the pods carry: one of `labels`, or one their
    /// controller adds (`added`).
    pub fn names_any_key<K: AsRef<str>, V: AsRef<str>>(
        &self,
        labels: &[(K, V)],
        added: impl Fn(&str) -> bool,
    ) -> bool {
        self.match_labels
            .iter()
            .map(|(k, _)| k)
            .chain(self.expressions.iter().map(|(k, _, _)| k))
            .any(|key| added(key) || labels.iter().any(|(k, _)| k.as_ref() == key))
    }

    pub fn may_select<K: AsRef<str>, V: AsRef<str>>(
        &self,
        labels: &[(K, V)],
        added: impl Fn(&str) -> bool,
    ) -> bool {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
        let labels: std::collections::BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string()))
            .collect();
        let judged = |key: &str| labels.contains_key(key) || !added(key);
        let selector = meta::LabelSelector {
            match_labels: Some(
                self.match_labels
                    .iter()
                    .filter(|(k, _)| judged(k))
                    .cloned()
                    .collect(),
            ),
            match_expressions: Some(
                self.expressions
                    .iter()
                    // `NotIn`/`DoesNotExist` hold without the key anyway.
                    .filter(|(k, op, _)| judged(k) || !matches!(op.as_str(), "In" | "Exists"))
                    .map(|(key, operator, values)| meta::LabelSelectorRequirement {
                        key: key.clone(),
                        operator: operator.clone(),
                        values: (!values.is_empty()).then(|| values.clone()),
                    })
                    .collect(),
            ),
        };
        placekit_core::scheduling::label_selector_matches(Some(&selector), &labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn contradictions() {
        let a = v(&["a"]);
        let b = v(&["b"]);
        let one = v(&["1"]);
        let five = v(&["5"]);
        let none: Vec<String> = vec![];
        assert!(contradiction(&[("k", "In", &a), ("k", "In", &b)]).is_some());
        assert!(contradiction(&[("k", "In", &a), ("k", "NotIn", &a)]).is_some());
        assert!(contradiction(&[("k", "Exists", &none), ("k", "DoesNotExist", &none)]).is_some());
        assert!(contradiction(&[("k", "Gt", &five), ("k", "Lt", &one)]).is_some());
        assert!(contradiction(&[("k", "In", &a), ("j", "In", &b)]).is_none());
        assert!(contradiction(&[("k", "Gt", &one), ("k", "Lt", &five)]).is_none());
        assert!(contradiction(&[("k", "NotIn", &a), ("k", "DoesNotExist", &none)]).is_none());
    }
}
