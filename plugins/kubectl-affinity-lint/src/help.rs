//! The long help texts: examples, what each subcommand models and how it was checked.

pub const AFTER_HELP: &str = "\
Examples:
  # A Deployment whose three required conditions were split into OR-ed terms
  kubectl affinity-lint -f examples/llm-inference-split-terms.yaml

  # A chart's rendered output, in CI, as GitHub annotations
  helm template ./chart | kubectl affinity-lint -f - -o github

  # A directory tree, SARIF for code scanning, failing only on errors
  kubectl affinity-lint -f manifests/ -R -o sarif --fail-on error >lint.sarif

  # What a rule checks, why, an example and the fix
  kubectl affinity-lint rules AL001

  # Show the fixes as a diff; apply them (merging split terms is an unsafe fix)
  kubectl affinity-lint -f examples/llm-inference-split-terms.yaml --diff \\
      --unsafe-fixes
  kubectl affinity-lint -f manifests/ -R --fix

  # GitLab code quality report
  kubectl affinity-lint -f manifests/ -R -o gitlab > gl-code-quality-report.json

  # Enforce the single-object rules in the cluster (ValidatingAdmissionPolicy)
  kubectl affinity-lint policy | kubectl apply -f -

  # The same manifests against the live nodes (AL101-AL105: no candidate,
  # typo'd keys, tainted candidates, not enough free GPUs, impossible spread)
  kubectl affinity-lint -f deploy.yaml --cluster
  # ... against every production cluster at once (one report, a CONTEXT each)
  kubectl affinity-lint -f deploy.yaml --contexts 'prod-*'

  # Running pods whose node no longer satisfies their affinity (a constant
  # number of paged list calls, never one call per pod)
  kubectl affinity-lint drift -A -l app=llm-inference
  kubectl affinity-lint drift -A --all-contexts --context-timeout 5s

  # Why is this pod Pending? Every node through the scheduler's filters
  kubectl affinity-lint why-pending llm-inference-0 -n ml -o json

Suppress a rule on one object with the annotation
  affinity-lint.placekit.dev/ignore: \"AL013,AL014\"
on the object or its pod template; configure rules in .affinity-lint.yaml (found upward from \
the first input, or --config):
  rules: {AL014: off, AL010: error}

Exit codes:
  0  no finding at or above --fail-on
  1  findings at or above --fail-on
  2  input errors (unreadable files, broken YAML); other documents are still linted
  3  the cluster was unreachable or forbidden (--cluster, drift, why-pending)
  4  with --contexts/--all-contexts: some contexts could not be read; the
     others' results are printed";

/// `policy --help`.
pub const POLICY_ABOUT: &str = "\
Print a ValidatingAdmissionPolicy (CEL, admissionregistration.k8s.io/v1, Kubernetes 1.30+) \
and its binding that enforce the single-object rules in the cluster: AL001 (required terms \
split over different keys, with the linter's alternative-evidence exception), AL003 (an \
empty term), AL006 (a weight outside 1..100) and AL007 (an extended resource without an \
equal limit), for Pods, PodTemplates and the pod templates of Deployments, StatefulSets, \
DaemonSets, ReplicaSets, ReplicationControllers, Jobs and CronJobs. Messages name the rule. \
The linter's annotation affinity-lint.placekit.dev/ignore exempts nothing from the policy \
unless it is generated with --allow-ignore-annotation: the workload's author writes it, so \
by default only the admin exempts, by leaving namespaces out with --namespace-selector.

Examples:
  # Reject split-term workloads cluster-wide
  kubectl affinity-lint policy | kubectl apply -f -

  # Roll out gently: admit with a warning (kubectl prints it) and audit it
  kubectl affinity-lint policy --action warn,audit | kubectl apply -f -

  # Only in namespaces labelled policy=enforce
  kubectl affinity-lint policy --namespace-selector policy=enforce |
      kubectl apply -f -

  # Let workloads exempt themselves with the linter's ignore annotation
  kubectl affinity-lint policy --allow-ignore-annotation | kubectl apply -f -

  # Remove it
  kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy \\
      affinity-lint.placekit.dev";

/// `drift --help`.
pub const DRIFT_ABOUT: &str = "\
Running pods whose node no longer satisfies their nodeSelector or required node affinity \
(IgnoredDuringExecution: they keep running, new replicas would not land there), or whose \
tolerations no longer cover the node's NoExecute taints (those are evicted), from one node \
list and one paged pod list.

Checked against a real kube-scheduler v1.37.2 in placekit's test suite: after \
changing the labels, taints or cordon of 105 nodes under 168 running pods, drift listed \
exactly the 32 pods whose pinned copy the scheduler refused by node affinity or an \
untolerated taint (168/168 agree; NoSchedule taints and cordons, which do not evict, are not \
drift).";

/// `why-pending --help`: what is modelled, and how well it agrees with the real scheduler.
pub const WHY_PENDING_ABOUT: &str = "\
Explain why a pod is Pending: the evidence a pending-pod investigation gathers (conditions, \
affinity, nodeSelector, tolerations, topology spread, requests, events), every node through \
kube-scheduler's filters in the scheduler's order with each node's first failing filter, \
the FailedScheduling message the scheduler would write (predictedMessage), and a verdict \
with the action to take. A pod that is Pending but already bound to a node \
(spec.nodeName) is reported as scheduled: it waits for the kubelet, not the scheduler. A pod held by spec.schedulingGates (Kueue's admission gate, among others) is reported as held: the scheduler does not consider it until every gate is removed.

Without POD: every pending pod the scheduler has not bound, in the namespace (-A: all namespaces; -l: a label selector), judged against one read of the cluster and grouped by why, one row each (-o wide adds the action, -o json the per-pod verdicts).

With POD and -w: after the report, follow the pod (a watch) and print what the scheduler says each time it changes, and its scheduling gates as they go; stop when it is scheduled (exit 0, naming the node) or deleted (exit 1).

Examples:
  kubectl affinity-lint why-pending llm-inference-0 -n ml
  # Follow it until it is scheduled
  kubectl affinity-lint why-pending llm-inference-0 -n ml -w
  kubectl affinity-lint why-pending -A
  kubectl affinity-lint why-pending -n ml -l app=trainer -o wide

Modelled, in kube-scheduler's order (v1.37 default profile): NodeAffinity's PreFilter \
(required terms that all name nodes with matchFields metadata.name), NodeUnschedulable, \
TaintToleration (NoSchedule and NoExecute), NodeAffinity (nodeSelector and required \
terms), NodePorts (host ports, hostNetwork), NodeResourcesFit (pod-level resources, init \
containers and sidecars, then every missing resource incl. nvidia.com/gpu), the volume \
filters (missing and unbound claims, bound volumes' node affinity and zones, \
WaitForFirstConsumer topology, CSI attach limits), PodTopologySpread (DoNotSchedule \
constraints) and InterPodAffinity, then DynamicResources (DRA, resource.k8s.io v1, \
v1beta2 or v1beta1, whichever the server serves): each claim's state (allocated, pending, \
missing), an allocated claim's node selector, and whether the claims still to allocate \
(and extended resources a DeviceClass serves) can be allocated on the node, as the \
scheduler's allocator decides: the classes' and requests' CEL selectors evaluated per \
device (device.driver, attributes and capacity, quantity(), semver(), the string and list \
functions, cel.bind), firstAvailable alternatives in order, allocationMode All, admin \
access, matchAttribute and distinctAttribute constraints, shared counters of partitionable \
devices and device taints (\"cannot allocate all claims\", with how many matching devices \
are free). A CEL runtime error stops allocation on the node, as it does the scheduler's; \
a selector placekit cannot evaluate (ip(), sets.contains(), ...) is named as not modelled \
and the scheduler's own FailedScheduling message is quoted instead of a prediction. \
Nominated nodes, preemption and gangs (Volcano, KAI, coscheduling, scheduling.k8s.io \
PodGroups) are said; scheduler extenders and custom profiles are not modelled (a pod \
naming another scheduler is that scheduler's); a non-empty namespaceSelector in a pod \
(anti-)affinity term selects no namespace here (placekit does not read namespaces).

Exit codes: 0 when the pod is scheduled or a node fits now, 1 when it cannot be placed now \
(no node fits, a claim is missing, it is gated, or its claims cannot be modelled; without \
POD: when any pending pod cannot), 2 usage, 3 cluster.

Checked against a real kube-scheduler v1.37.2 in placekit's test suite \
(520 generated cases): 520/520 decisions (bound node feasible, unschedulable exactly when \
no node is) and 352/352 per-reason node counts of the FailedScheduling message agree; \
why-pending's predicted message equals the scheduler's for 45/45 sampled pending pods; \
72/72 DRA claims written as the NVIDIA, AMD, Intel and Google TPU drivers' docs write them \
(CEL selectors, firstAvailable, matchAttribute, All) against devices published in their \
drivers' shapes are decided as the scheduler decides them, with the same reason counts.";
