//! The workloads that carry node constraints, as the checks of a change and `dependents`
//! judge them: the core kinds, the custom resources the cluster serves and the pods of other
//! controllers, folded into the linter's [`Workload`](placekit_lint::dependents::Workload)s.
//! It lives above the client (which reads pages and knows no linter) and below the
//! commands that judge what it returns.

use crate::error::CommandError;
use kube::api::{Api, ListParams};
use placekit_client::api::{
    Listed, PAGE, POD_PAGE, for_each_page, for_each_page_if_served, list_pages,
};

/// Lists every workload that can carry node constraints (Deployments, StatefulSets,
/// DaemonSets, ReplicaSets, Jobs, CronJobs and bare Pods) in `namespace` or all namespaces.
/// Objects a listed kind controls are skipped (their owner is listed); pods of any other
/// controller (a RayCluster, a PyTorchJob, ...) are judged by their own spec under their
/// owner's name, one per owner and distinct constraints. A kind the user may
/// not list is reported as a warning, not an error: the lookup shows what it can see.
/// `bare_pods_on`: keep only the bare pods that are not bound yet or bound to one of these
/// nodes (a bare pod matters only for its node; the checks of a change pass the changed
/// nodes, so what is kept stays small on a cluster of 150,000 pods).
///
/// Long on purpose: the core kinds, the custom resources the cluster serves and the pods of
/// other controllers are three paged reads whose results fold into one list; the
/// projections themselves are `placekit_lint::podspec`'s.
pub async fn list_workloads(
    client: &kube::Client,
    namespace: Option<&str>,
    bare_pods_on: Option<&[String]>,
) -> Result<(Vec<placekit_lint::dependents::Workload>, Vec<String>), CommandError> {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
    use k8s_openapi::api::batch::v1::{CronJob, Job};
    use placekit_lint::dependents::{Workload, controlled_by_listed_kind, has_controller};

    fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }

    // Custom resources first: what they own (a JobSet's Jobs, a LeaderWorkerSet's
    // StatefulSets, a RayCluster's pods) is judged through their templates.
    let custom = list_custom_workloads(client, namespace).await?;
    let mut workloads = custom.workloads;
    let mut warnings = custom.warnings;
    let read_owner = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        placekit_lint::dependents::controller(meta).is_some_and(|o| {
            custom.read.contains(&(
                o.kind.clone(),
                meta.namespace.clone().unwrap_or_default(),
                o.name.clone(),
            ))
        })
    };
    // Pods of controllers placekit does not list (custom resources), grouped by owner as
    // the pages come (200 workers with one spec are one workload, whatever the page).
    let mut owned_pods = placekit_lint::dependents::OwnerGroups::default();
    // Whether any core list was allowed: when none is (no credentials sent, an identity
    // with no read access), there is nothing to answer from, and "no dependents" would lie.
    let mut listed_any = false;
    let mut first_forbidden: Option<String> = None;
    macro_rules! collect {
        ($kind:ty, $name:literal, |$o:ident| $spec:expr) => {
            match list_pages(
                &api::<$kind>(client, namespace),
                ListParams::default().limit(PAGE),
                concat!("listing ", $name),
                |items: Vec<$kind>| {
                    for $o in items {
                        // Judged through the owner's template, which is listed too.
                        if controlled_by_listed_kind(&$o.metadata) || read_owner(&$o.metadata) {
                            continue;
                        }
                        if let Some(spec) = $spec.map(placekit_lint::dependents::scheduling_only) {
                            workloads.push(Workload {
                                kind: <$kind as k8s_openapi::Resource>::KIND.to_string(),
                                namespace: $o.metadata.namespace.clone().unwrap_or_default(),
                                name: $o.metadata.name.clone().unwrap_or_default(),
                                pod_spec: spec,
                                used_by: Vec::new(),
                            });
                        }
                    }
                },
            )
            .await
            {
                Ok(()) => listed_any = true,
                Err(e) if e.is_forbidden() => {
                    let m = crate::error::client_message(&e);
                    first_forbidden.get_or_insert_with(|| m.clone());
                    warnings.push(format!("cannot list {}: {m}", $name))
                }
                Err(e) => return Err(e.into()),
            }
        };
    }
    collect!(Deployment, "deployments", |o| o.spec.template.spec);
    collect!(StatefulSet, "statefulsets", |o| o.spec.template.spec);
    collect!(DaemonSet, "daemonsets", |o| o.spec.template.spec);
    collect!(ReplicaSet, "replicasets", |o| o
        .spec
        .template
        .and_then(|t| t.spec));
    collect!(Job, "jobs", |o| o.spec.and_then(|s| s.template.spec));
    collect!(CronJob, "cronjobs", |o| o
        .spec
        .job_template
        .spec
        .and_then(|j| j.template.spec));
    // Pods are the bulk (150,000 on a large cluster): read into a view of the fields the
    // checks use, page by page, without managedFields, containers or status.
    #[derive(serde::Deserialize)]
    struct PodScheduling {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        #[serde(default)]
        spec: SchedulingSpec,
    }
    #[derive(Default, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct SchedulingSpec {
        node_selector: Option<std::collections::BTreeMap<String, String>>,
        affinity: Option<k8s_openapi::api::core::v1::Affinity>,
        tolerations: Option<Vec<k8s_openapi::api::core::v1::Toleration>>,
        node_name: Option<String>,
    }
    let collection = match namespace {
        Some(ns) => format!("/api/v1/namespaces/{ns}/pods"),
        None => "/api/v1/pods".to_string(),
    };
    let listed = for_each_page(
        client,
        &collection,
        Some("status.phase!=Succeeded,status.phase!=Failed"),
        None,
        POD_PAGE,
        |page: Vec<PodScheduling>| {
            for pod in page {
                let meta = pod.metadata;
                if controlled_by_listed_kind(&meta) || read_owner(&meta) {
                    continue;
                }
                let spec = k8s_openapi::api::core::v1::PodSpec {
                    node_selector: pod.spec.node_selector,
                    affinity: pod.spec.affinity,
                    tolerations: pod.spec.tolerations,
                    node_name: pod.spec.node_name,
                    ..Default::default()
                };
                if has_controller(&meta) {
                    owned_pods.add(&meta, spec);
                } else if bare_pods_on
                    .is_none_or(|nodes| spec.node_name.as_ref().is_none_or(|n| nodes.contains(n)))
                {
                    workloads.push(Workload {
                        kind: "Pod".to_string(),
                        namespace: meta.namespace.unwrap_or_default(),
                        name: meta.name.unwrap_or_default(),
                        pod_spec: spec,
                        used_by: Vec::new(),
                    });
                }
            }
        },
    )
    .await;
    match listed {
        Ok(_) => listed_any = true,
        Err(e) if e.is_forbidden() => {
            let m = crate::error::client_message(&e);
            first_forbidden.get_or_insert_with(|| m.clone());
            warnings.push(format!("cannot list pods: {m}"))
        }
        Err(e) => return Err(e.into()),
    }
    if let (false, Some(m)) = (listed_any, first_forbidden) {
        return Err(CommandError::Forbidden(format!(
            "{m}; no workload or pod could be listed, so nothing that depends on the nodes was checked"
        )));
    }
    workloads.extend(owned_pods.into_workloads());
    Ok((workloads, warnings))
}

/// The templates of the custom resources placekit understands, as far as the cluster serves
/// them and RBAC lets them be listed.
struct CustomWorkloads {
    workloads: Vec<placekit_lint::dependents::Workload>,
    /// Every custom resource read, as (kind, namespace, name): what they control is judged
    /// through them.
    read: std::collections::BTreeSet<(String, String, String)>,
    warnings: Vec<String>,
}

/// Lists the custom resources of [`placekit_lint::podspec::KNOWN_GROUPS`] that the API serves:
/// one discovery request for the groups, one per served version of a known group, then a
/// paged list per kind (each kind once, in the group's preferred version first). An absent
/// group costs nothing; a forbidden list is said once and skipped.
async fn list_custom_workloads(
    client: &kube::Client,
    namespace: Option<&str>,
) -> Result<CustomWorkloads, CommandError> {
    let mut out = CustomWorkloads {
        workloads: Vec::new(),
        read: Default::default(),
        warnings: Vec::new(),
    };
    // Objects that select nodes outside any pod template (a Kueue ResourceFlavor, a Volcano
    // Queue) are read whole and judged once every list is in: a flavor's Topology and
    // ClusterQueues may come after it.
    let mut held = placekit_lint::selectors::HeldSelectors::default();
    let groups = match client.list_api_groups().await {
        Ok(g) => g,
        Err(kube::Error::Api(s)) if matches!(s.code, 403 | 404) => return Ok(out),
        Err(e) => {
            return Err(CommandError::from_api(
                e,
                "reading the API groups (discovery)",
            ));
        }
    };
    for group in groups.groups {
        let Some((_, kinds)) = placekit_lint::podspec::KNOWN_GROUPS
            .iter()
            .find(|(name, _)| *name == group.name)
        else {
            continue;
        };
        let mut versions: Vec<String> = group
            .preferred_version
            .iter()
            .map(|v| v.group_version.clone())
            .collect();
        versions.extend(group.versions.iter().map(|v| v.group_version.clone()));
        versions.dedup();
        let mut done: std::collections::BTreeSet<String> = Default::default();
        for group_version in versions.iter().filter(|v| !v.is_empty()) {
            let resources = match client.list_api_group_resources(group_version).await {
                Ok(r) => r,
                Err(kube::Error::Api(s)) if matches!(s.code, 403 | 404) => continue,
                Err(e) => {
                    return Err(CommandError::from_api(
                        e,
                        &format!("reading the resources of {group_version}"),
                    ));
                }
            };
            for resource in resources.resources {
                if resource.name.contains('/')
                    || !kinds.contains(&resource.kind.as_str())
                    || !done.insert(resource.kind.clone())
                {
                    continue;
                }
                let collection = match namespace.filter(|_| resource.namespaced) {
                    Some(ns) => format!("/apis/{group_version}/namespaces/{ns}/{}", resource.name),
                    None => format!("/apis/{group_version}/{}", resource.name),
                };
                // Each page is judged as it arrives and dropped: memory holds one page of
                // objects and what is kept of them, not the whole list.
                let (read, workloads) = (&mut out.read, &mut out.workloads);
                let selects =
                    placekit_lint::selectors::holds_selection(&group.name, &resource.kind);
                let listed = for_each_page_if_served(client, &collection, 500, |page| {
                    for object in page {
                        if selects {
                            held.keep(&group.name, &resource.kind, &object);
                            continue;
                        }
                        keep_custom_resource(
                            object,
                            &resource.kind,
                            group_version,
                            read,
                            workloads,
                        );
                    }
                })
                .await?;
                if let Listed::Forbidden(message) = listed {
                    out.warnings.push(if selects {
                        format!(
                            "{message} ({}.{}: the nodes they select are not checked)",
                            resource.name, group.name
                        )
                    } else {
                        format!(
                            "{message} ({}.{}: their pod templates are not checked; their running pods are)",
                            resource.name, group.name
                        )
                    });
                    continue;
                }
            }
        }
    }
    let held = held.into_workloads(&mut out.workloads);
    out.workloads.extend(held);
    Ok(out)
}

/// What is kept of one listed custom resource: its identity, and its templates unless a
/// custom resource placekit reads controls it (a RayCluster a RayJob made is judged through
/// the RayJob).
fn keep_custom_resource(
    mut object: serde_json::Value,
    kind: &str,
    group_version: &str,
    read: &mut std::collections::BTreeSet<(String, String, String)>,
    workloads: &mut Vec<placekit_lint::dependents::Workload>,
) {
    // The API list omits kind/apiVersion on items: the template table keys on them.
    object["kind"] = kind.into();
    object["apiVersion"] = group_version.into();
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    read.insert((
        kind.to_string(),
        text("/metadata/namespace"),
        text("/metadata/name"),
    ));
    let controlled = object
        .pointer("/metadata/ownerReferences")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                // An owner that only holds selection (a TrainJob's JobSet) is not read as a
                // template: what it made is judged by its own.
                let group = r["apiVersion"]
                    .as_str()
                    .and_then(|v| v.split_once('/'))
                    .map(|(g, _)| g)
                    .unwrap_or_default();
                r["controller"] == true
                    && r["kind"].as_str().is_some_and(|k| {
                        !placekit_lint::selectors::holds_selection(group, k)
                            && placekit_lint::podspec::KNOWN_GROUPS
                                .iter()
                                .any(|(_, ks)| ks.contains(&k))
                    })
            })
        });
    if !controlled {
        workloads.extend(placekit_lint::dependents::custom_resource_workloads(
            &object,
        ));
    }
}
