//! `why-pending` on a pod Kueue holds, on the real control plane with Kueue's real Workload
//! CRD (`../shared/crds`): the pod carries Kueue's admission gate, the Workload its
//! plain-pod integration makes is owned by the pod, and its `QuotaReserved` condition says
//! why it waits. No Kueue runs: the Workload's status is written as Kueue writes it.

use std::process::Command;

use placekit_testserver::crds::Kubectl;
use placekit_testserver::process::Bounded as _;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: pk-kueue-trainer
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  schedulingGates: [{name: kueue.x-k8s.io/admission}]
  containers:
  - name: train
    image: pytorch/pytorch
    resources: {limits: {nvidia.com/gpu: "8"}}
"#;

const WAITING: &str = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed";

#[test]
fn why_pending_says_what_kueue_holds_a_gated_pod_for() {
    let suite = "why-pending on a Kueue-gated pod on the real control plane";
    let Some((kubectl, crds)) = Kubectl::for_suite(suite) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    kubectl.install_crds(&crds, &["kueue.x-k8s.io_workloads.yaml"]);
    let pod = dir.path().join("pod.yaml");
    std::fs::write(&pod, POD).unwrap();
    let pod = pod.display().to_string();
    kubectl.delete_now(&pod, true);
    kubectl.must(&["create", "-f", &pod]);
    let uid = kubectl.must(&[
        "get",
        "pod",
        "pk-kueue-trainer",
        "-n",
        "default",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    // The Workload Kueue's plain-pod integration makes: owned by the pod.
    let workload = serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "pod-pk-kueue-trainer-1a2b3", "namespace": "default",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "pk-kueue-trainer", "uid": uid, "controller": true}]},
        "spec": {"queueName": "team-a", "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"containers": [{"name": "train", "image": "pytorch/pytorch",
                "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}]}
    });
    let workload_file = dir.path().join("workload.json");
    std::fs::write(&workload_file, workload.to_string()).unwrap();
    let workload_file = workload_file.display().to_string();
    kubectl.create_when_served(&workload_file, || kubectl.delete_now(&workload_file, true));
    let status = serde_json::json!({"status": {"conditions": [{
        "type": "QuotaReserved", "status": "False", "reason": "Pending", "message": WAITING,
        "lastTransitionTime": "2026-12-03T10:00:00Z"}]}});
    kubectl.must(&[
        "patch",
        "workloads.kueue.x-k8s.io",
        "pod-pk-kueue-trainer-1a2b3",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);

    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-affinity_lint"))
            .args(args)
            .env("KUBECONFIG", kubectl.kubeconfig())
            .env("HOME", dir.path())
            .env("NO_COLOR", "1")
            .bounded_output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let text = run(&["why-pending", "pk-kueue-trainer", "-n", "default"]);
    let json = run(&[
        "why-pending",
        "pk-kueue-trainer",
        "-n",
        "default",
        "-o",
        "json",
    ]);
    kubectl.delete_now(&workload_file, false);
    kubectl.delete_now(&pod, false);

    let (code, out, err) = text;
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("kueue.x-k8s.io/admission")
            && out.contains(
                "Workload default/pod-pk-kueue-trainer-1a2b3 (LocalQueue team-a) is not admitted"
            )
            && out.contains(WAITING),
        "{out}"
    );
    let (code, out, err) = json;
    assert_eq!(code, 1, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["workload"]["name"], "pod-pk-kueue-trainer-1a2b3");
    assert_eq!(report["workload"]["conditions"][0]["message"], WAITING);
}
