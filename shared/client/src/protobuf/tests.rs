//! Pages encoded by kube-rs's `k8s-pb` (the generated types of k8s.io/api's protobuf)
//! decode into the JSON kube-apiserver shows for the same objects, and into the same read
//! model as that JSON: every field number of the schema is checked against k8s-pb's.

use std::collections::BTreeMap;

use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message as _;
use serde_json::json;

use super::*;

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn quantities(entries: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity { string: s(v) }))
        .collect()
}

/// `k8s\0` and a `runtime.Unknown` holding `raw`, as kube-apiserver answers.
fn envelope(kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s("v1"),
            kind: s(kind),
        }),
        raw: Some(raw),
        content_encoding: s(""),
        content_type: s(""),
    };
    [MAGIC.to_vec(), unknown.encode_to_vec()].concat()
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> core::NodeSelectorRequirement {
    core::NodeSelectorRequirement {
        key: s(key),
        operator: s(operator),
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

/// A pod with every field the schema lists set, and fields it does not list (env, volumes,
/// a hostname) that must be skipped; zero strings written as Go writes them.
fn rich_pod() -> core::Pod {
    let selector = meta::LabelSelector {
        match_labels: map(&[("app", "llm")]),
        match_expressions: vec![meta::LabelSelectorRequirement {
            key: s("tier"),
            operator: s("Exists"),
            values: vec![],
        }],
    };
    core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: s("llm-0"),
            generate_name: s(""),
            namespace: s("ml"),
            self_link: s(""),
            uid: s("u-1"),
            resource_version: s("42"),
            generation: Some(0),
            creation_timestamp: Some(meta::Time {
                seconds: Some(1_767_225_600),
                nanos: Some(0),
            }),
            deletion_timestamp: Some(meta::Time {
                seconds: Some(1_767_225_600),
                nanos: Some(0),
            }),
            labels: map(&[("app", "llm")]),
            annotations: map(&[("note", "x")]),
            owner_references: vec![meta::OwnerReference {
                api_version: s("apps/v1"),
                kind: s("ReplicaSet"),
                name: s("llm-abc"),
                uid: s("u-0"),
                controller: Some(true),
                block_owner_deletion: None,
            }],
            managed_fields: vec![meta::ManagedFieldsEntry {
                manager: s("kubectl"),
                ..Default::default()
            }],
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            volumes: vec![
                core::Volume {
                    name: s("data"),
                    volume_source: Some(core::VolumeSource {
                        persistent_volume_claim: Some(core::PersistentVolumeClaimVolumeSource {
                            claim_name: s("model-cache"),
                            read_only: Some(false),
                        }),
                        ..Default::default()
                    }),
                },
                core::Volume {
                    name: s("scratch"),
                    volume_source: Some(core::VolumeSource {
                        empty_dir: Some(core::EmptyDirVolumeSource::default()),
                        ..Default::default()
                    }),
                },
                core::Volume {
                    name: s("tmp"),
                    volume_source: Some(core::VolumeSource {
                        ephemeral: Some(core::EphemeralVolumeSource::default()),
                        ..Default::default()
                    }),
                },
                core::Volume {
                    name: s("secrets"),
                    volume_source: Some(core::VolumeSource {
                        csi: Some(core::CSIVolumeSource {
                            driver: s("secrets-store.csi.k8s.io"),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                },
            ],
            containers: vec![core::Container {
                name: s("server"),
                image: s("vllm:1"),
                ports: vec![core::ContainerPort {
                    name: s("http"),
                    host_port: Some(8000),
                    container_port: Some(8000),
                    protocol: s("TCP"),
                    host_ip: s(""),
                }],
                env: vec![core::EnvVar {
                    name: s("A"),
                    value: s("B"),
                    ..Default::default()
                }],
                resources: Some(core::ResourceRequirements {
                    limits: quantities(&[("nvidia.com/gpu", "2")]),
                    requests: quantities(&[("cpu", "500m"), ("nvidia.com/gpu", "2")]),
                    claims: vec![],
                }),
                ..Default::default()
            }],
            init_containers: vec![core::Container {
                name: s("proxy"),
                image: s(""),
                restart_policy: s("Always"),
                resources: Some(core::ResourceRequirements::default()),
                ..Default::default()
            }],
            node_selector: map(&[("pool", "gpu")]),
            service_account_name: s(""),
            node_name: s("gpu-1"),
            host_network: Some(true),
            hostname: s("ignored"),
            affinity: Some(core::Affinity {
                node_affinity: Some(core::NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(core::NodeSelector {
                        node_selector_terms: vec![
                            core::NodeSelectorTerm {
                                match_expressions: vec![requirement(
                                    "gpu",
                                    "In",
                                    &["a100", "h100"],
                                )],
                                match_fields: vec![],
                            },
                            core::NodeSelectorTerm {
                                match_expressions: vec![],
                                match_fields: vec![requirement("metadata.name", "In", &["gpu-1"])],
                            },
                        ],
                    }),
                    preferred_during_scheduling_ignored_during_execution: vec![
                        core::PreferredSchedulingTerm {
                            weight: Some(5),
                            preference: Some(core::NodeSelectorTerm {
                                match_expressions: vec![requirement("zone", "NotIn", &["z"])],
                                match_fields: vec![],
                            }),
                        },
                    ],
                }),
                pod_affinity: None,
                pod_anti_affinity: Some(core::PodAntiAffinity {
                    required_during_scheduling_ignored_during_execution: vec![
                        core::PodAffinityTerm {
                            label_selector: Some(selector.clone()),
                            namespaces: vec!["ml".into()],
                            topology_key: s("kubernetes.io/hostname"),
                            namespace_selector: None,
                            match_label_keys: vec!["pod-template-hash".into()],
                            mismatch_label_keys: vec![],
                        },
                    ],
                    preferred_during_scheduling_ignored_during_execution: vec![
                        core::WeightedPodAffinityTerm {
                            weight: Some(10),
                            pod_affinity_term: Some(core::PodAffinityTerm {
                                label_selector: None,
                                namespaces: vec![],
                                topology_key: s("zone"),
                                namespace_selector: Some(meta::LabelSelector::default()),
                                match_label_keys: vec![],
                                mismatch_label_keys: vec![],
                            }),
                        },
                    ],
                }),
            }),
            scheduler_name: s("default-scheduler"),
            tolerations: vec![
                core::Toleration {
                    key: s("dedicated"),
                    operator: s("Equal"),
                    value: s("llm"),
                    effect: s("NoSchedule"),
                    toleration_seconds: None,
                },
                core::Toleration {
                    key: s("node.kubernetes.io/not-ready"),
                    operator: s("Exists"),
                    value: s(""),
                    effect: s("NoExecute"),
                    toleration_seconds: Some(0),
                },
            ],
            priority_class_name: s(""),
            priority: Some(0),
            preemption_policy: s("PreemptLowerPriority"),
            overhead: quantities(&[("cpu", "100m")]),
            topology_spread_constraints: vec![core::TopologySpreadConstraint {
                max_skew: Some(1),
                topology_key: s("topology.kubernetes.io/zone"),
                when_unsatisfiable: s("DoNotSchedule"),
                label_selector: Some(selector),
                min_domains: Some(2),
                node_affinity_policy: s("Honor"),
                node_taints_policy: None,
                match_label_keys: vec!["pod-template-hash".into()],
            }],
            scheduling_gates: vec![core::PodSchedulingGate {
                name: s("kueue.x-k8s.io/admission"),
            }],
            resource_claims: vec![core::PodResourceClaim {
                name: s("gpu"),
                resource_claim_name: None,
                resource_claim_template_name: s("one-gpu"),
            }],
            resources: Some(core::ResourceRequirements {
                limits: quantities(&[("memory", "64Gi")]),
                requests: quantities(&[("cpu", "4")]),
                claims: vec![],
            }),
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            phase: s("Running"),
            conditions: vec![core::PodCondition {
                r#type: s("PodScheduled"),
                status: s("False"),
                reason: s("Unschedulable"),
                message: s("0/3 nodes are available: 3 Insufficient nvidia.com/gpu."),
                ..Default::default()
            }],
            host_ip: s("10.0.0.1"),
            nominated_node_name: s(""),
            resource_claim_statuses: vec![core::PodResourceClaimStatus {
                name: s("gpu"),
                resource_claim_name: s("llm-0-gpu-x"),
            }],
            extended_resource_claim_status: Some(core::PodExtendedResourceClaimStatus {
                request_mappings: vec![core::ContainerExtendedResourceRequest {
                    container_name: s("server"),
                    resource_name: s("example.com/gpu"),
                    request_name: s("container-0-request-0"),
                }],
                resource_claim_name: s("llm-0-extended"),
            }),
            ..Default::default()
        }),
    }
}

/// What kube-apiserver shows of [`rich_pod`] in JSON, for the fields the schema lists.
fn rich_pod_json() -> serde_json::Value {
    let selector = json!({"matchLabels": {"app": "llm"},
        "matchExpressions": [{"key": "tier", "operator": "Exists"}]});
    json!({
        "metadata": {
            "name": "llm-0", "namespace": "ml", "uid": "u-1", "resourceVersion": "42",
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "llm"}, "annotations": {"note": "x"},
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "llm-abc", "uid": "u-0", "controller": true}]
        },
        "spec": {
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "model-cache"}},
                {"name": "scratch"},
                {"name": "tmp", "ephemeral": {}},
                {"name": "secrets", "csi": {"driver": "secrets-store.csi.k8s.io"}}
            ],
            "containers": [{"name": "server", "image": "vllm:1",
                "ports": [{"name": "http", "hostPort": 8000, "containerPort": 8000, "protocol": "TCP"}],
                "resources": {
                "limits": {"nvidia.com/gpu": "2"},
                "requests": {"cpu": "500m", "nvidia.com/gpu": "2"}}}],
            "initContainers": [{"name": "proxy", "restartPolicy": "Always", "resources": {}}],
            "nodeSelector": {"pool": "gpu"},
            "nodeName": "gpu-1",
            "hostNetwork": true,
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "h100"]}]},
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}]}
                    ]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z"]}]}}]
                },
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector,
                        "namespaces": ["ml"], "topologyKey": "kubernetes.io/hostname",
                        "matchLabelKeys": ["pod-template-hash"]}],
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10,
                        "podAffinityTerm": {"topologyKey": "zone", "namespaceSelector": {}}}]
                }
            },
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 0}
            ],
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "overhead": {"cpu": "100m"},
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector, "minDomains": 2,
                "nodeAffinityPolicy": "Honor", "matchLabelKeys": ["pod-template-hash"]}],
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            "resources": {"limits": {"memory": "64Gi"}, "requests": {"cpu": "4"}}
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}],
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "llm-0-gpu-x"}],
            "extendedResourceClaimStatus": {"resourceClaimName": "llm-0-extended",
                "requestMappings": [{"containerName": "server", "resourceName": "example.com/gpu",
                    "requestName": "container-0-request-0"}]}
        }
    })
}

fn rich_node() -> core::Node {
    core::Node {
        metadata: Some(meta::ObjectMeta {
            name: s("gpu-1"),
            namespace: s(""),
            labels: map(&[("nvidia.com/gpu.product", "A100"), ("pool", "")]),
            ..Default::default()
        }),
        spec: Some(core::NodeSpec {
            pod_cidr: s("10.1.0.0/24"),
            provider_id: s("aws:///i-1"),
            unschedulable: Some(false),
            taints: vec![
                core::Taint {
                    key: s("dedicated"),
                    value: s("llm"),
                    effect: s("NoSchedule"),
                    time_added: None,
                },
                core::Taint {
                    key: s("node.kubernetes.io/unreachable"),
                    value: s(""),
                    effect: s("NoExecute"),
                    time_added: Some(meta::Time {
                        seconds: Some(1_767_225_600),
                        nanos: Some(0),
                    }),
                },
            ],
            ..Default::default()
        }),
        status: Some(core::NodeStatus {
            capacity: quantities(&[("nvidia.com/gpu", "8"), ("cpu", "96")]),
            allocatable: quantities(&[("nvidia.com/gpu", "8"), ("cpu", "95500m")]),
            conditions: vec![core::NodeCondition {
                r#type: s("Ready"),
                status: s("True"),
                reason: s("KubeletReady"),
                ..Default::default()
            }],
            images: vec![core::ContainerImage {
                names: vec!["vllm:1".into()],
                size_bytes: Some(1 << 30),
            }],
            ..Default::default()
        }),
    }
}

fn rich_node_json() -> serde_json::Value {
    json!({
        "metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.product": "A100", "pool": ""}},
        "spec": {"providerID": "aws:///i-1", "taints": [
            {"key": "dedicated", "value": "llm", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
             "timeAdded": "2026-01-01T00:00:00Z"}
        ]},
        "status": {
            "capacity": {"cpu": "96", "nvidia.com/gpu": "8"},
            "allocatable": {"cpu": "95500m", "nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    })
}

fn pod_page(pods: Vec<core::Pod>, continue_token: &str) -> Vec<u8> {
    let list = core::PodList {
        metadata: Some(meta::ListMeta {
            self_link: s(""),
            resource_version: s("1234"),
            r#continue: s(continue_token),
            remaining_item_count: None,
        }),
        items: pods,
    };
    envelope("PodList", list.encode_to_vec())
}

#[test]
fn a_pod_encoded_by_k8s_pb_decodes_to_the_json_the_api_server_shows() {
    let body = pod_page(vec![rich_pod()], "next");
    let page: Page<serde_json::Value> = decode_page(&body).unwrap();
    assert_eq!(page.continue_token.as_deref(), Some("next"));
    assert_eq!(page.resource_version, "1234");
    assert_eq!(page.items, vec![rich_pod_json()]);
}

#[test]
fn a_node_encoded_by_k8s_pb_decodes_to_the_json_the_api_server_shows() {
    let list = core::NodeList {
        metadata: Some(meta::ListMeta {
            resource_version: s("7"),
            r#continue: s(""),
            ..Default::default()
        }),
        items: vec![rich_node()],
    };
    let body = envelope("NodeList", list.encode_to_vec());
    let page: Page<serde_json::Value> = decode_page(&body).unwrap();
    assert_eq!(page.continue_token, None, "an empty token is the last page");
    assert_eq!(page.items, vec![rich_node_json()]);
}

/// The read model reads the same from both encodings (and, in this debug build, every
/// field its types declare is in the schema).
#[test]
fn the_read_model_reads_protobuf_as_it_reads_json() {
    use placekit_core::model::{Node, Pod, PodPlacement};
    let body = pod_page(vec![rich_pod()], "");
    let from_protobuf: Page<Pod> = decode_page(&body).unwrap();
    let from_json: Pod = serde_json::from_value(rich_pod_json()).unwrap();
    assert_eq!(
        format!("{:?}", from_protobuf.items[0]),
        format!("{from_json:?}")
    );
    let placement: Page<PodPlacement> = decode_page(&body).unwrap();
    let from_json: PodPlacement = serde_json::from_value(rich_pod_json()).unwrap();
    assert_eq!(
        format!("{:?}", placement.items[0]),
        format!("{from_json:?}")
    );
    let list = core::NodeList {
        metadata: None,
        items: vec![rich_node()],
    };
    let body = envelope("NodeList", list.encode_to_vec());
    let from_protobuf: Page<Node> = decode_page(&body).unwrap();
    let from_json: Node = serde_json::from_value(rich_node_json()).unwrap();
    assert_eq!(
        format!("{:?}", from_protobuf.items[0]),
        format!("{from_json:?}")
    );
}

/// A required list the wire lacks (no node selector terms) is given empty, as JSON shows
/// it; the scheduler's typed selector then reads.
#[test]
fn a_field_json_always_shows_is_given_when_the_wire_lacks_it() {
    let mut pod = rich_pod();
    let spec = pod.spec.as_mut().unwrap();
    spec.affinity = Some(core::Affinity {
        node_affinity: Some(core::NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(core::NodeSelector {
                node_selector_terms: vec![],
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
    let body = pod_page(vec![pod], "");
    let page: Page<placekit_core::model::Pod> = decode_page(&body).unwrap();
    let affinity = page.items[0].spec.affinity.as_ref().unwrap();
    let required = affinity
        .node_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap();
    assert!(required.node_selector_terms.is_empty());
}

#[test]
fn broken_pages_are_errors_that_say_where() {
    let body = pod_page(vec![rich_pod()], "");
    // Cut inside the first item.
    let cut = &body[..body.len() - 40];
    let err = decode_page::<placekit_core::model::Pod>(cut).unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
    let err = decode_page::<placekit_core::model::Pod>(b"{\"kind\": \"PodList\"}").unwrap_err();
    assert!(err.to_string().contains("k8s\\0"), "{err}");
    let status = envelope("Status", core::Pod::default().encode_to_vec());
    let err = decode_page::<placekit_core::model::Pod>(&status).unwrap_err();
    assert!(err.to_string().contains("\"Status\""), "{err}");
    // A string that is not UTF-8, in the pod's name.
    let mut pod = rich_pod();
    pod.metadata.as_mut().unwrap().name = s("\u{7f}llm");
    let mut body = pod_page(vec![pod], "");
    let at = body.windows(4).position(|w| w == b"\x7fllm").unwrap();
    body[at] = 0xff;
    let err = decode_page::<placekit_core::model::Pod>(&body).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("PodList item 1: Pod.metadata: ObjectMeta.name: "),
        "{err}"
    );
}

#[test]
fn an_error_answered_in_protobuf_is_its_status() {
    let status = meta::Status {
        status: s("Failure"),
        message: s("pods is forbidden: User \"viewer\" cannot list resource \"pods\""),
        reason: s("Forbidden"),
        code: Some(403),
        ..Default::default()
    };
    let body = envelope("Status", status.encode_to_vec());
    let decoded = decode_status(&body).unwrap();
    assert_eq!(decoded.code, 403);
    assert_eq!(decoded.reason, "Forbidden");
    assert!(decoded.message.starts_with("pods is forbidden"));
}

#[test]
fn every_message_fits_the_decoders_bookkeeping() {
    for message in schema::ALL {
        assert!(message.fields.len() <= 64, "{}", message.name);
        let numbers: Vec<u32> = message.fields.iter().map(|f| f.number).collect();
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(numbers, sorted, "{}: numbers in order, once", message.name);
    }
}

#[test]
fn only_pods_and_nodes_of_the_core_group_are_listed_in_protobuf() {
    assert!(lists_in_protobuf("/api/v1/pods"));
    assert!(lists_in_protobuf("/api/v1/namespaces/ml/pods"));
    assert!(lists_in_protobuf("/api/v1/nodes"));
    assert!(!lists_in_protobuf("/api/v1/namespaces/ml/events"));
    assert!(!lists_in_protobuf("/apis/kueue.x-k8s.io/v1beta1/workloads"));
    assert!(!lists_in_protobuf("/api/v1/namespaces//pods"));
}

/// k8s-openapi's whole `ObjectMeta` reads from the schema (what the dependents scan keeps
/// of each pod), its creation time as JSON shows it and a zero time as absent.
#[test]
fn k8s_openapis_object_meta_reads_from_protobuf() {
    #[derive(serde::Deserialize)]
    struct Scheduling {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    }
    let mut pod = rich_pod();
    pod.metadata.as_mut().unwrap().deletion_timestamp = Some(meta::Time::default());
    let body = pod_page(vec![pod], "");
    let page: Page<Scheduling> = decode_page(&body).unwrap();
    let meta = &page.items[0].metadata;
    assert_eq!(meta.name.as_deref(), Some("llm-0"));
    assert_eq!(
        serde_json::to_value(&meta.creation_timestamp).unwrap(),
        json!("2026-01-01T00:00:00Z")
    );
    assert!(meta.deletion_timestamp.is_none());
    assert!(meta.managed_fields.is_none(), "left out on purpose");
    assert_eq!(
        meta.owner_references.as_ref().unwrap()[0].controller,
        Some(true)
    );
}

/// The continue token is read from the first bytes of a page, once they hold the list's
/// metadata, and not before.
#[test]
fn the_continue_token_is_read_from_the_start_of_a_page() {
    let body = pod_page(
        vec![rich_pod(), rich_pod()],
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ",
    );
    let whole = continue_token(&body).unwrap();
    assert_eq!(whole.as_deref(), Some("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"));
    let known_at = (0..body.len())
        .find(|n| continue_token_of_prefix(&body[..*n]).is_some())
        .unwrap();
    assert!(known_at < 80, "{known_at} of {} bytes", body.len());
    assert_eq!(continue_token_of_prefix(&body[..known_at]), Some(whole));
    let last = pod_page(vec![rich_pod()], "");
    assert_eq!(continue_token_of_prefix(&last), Some(None));
    assert_eq!(continue_token_of_prefix(b"{\"kind\""), None);
}
