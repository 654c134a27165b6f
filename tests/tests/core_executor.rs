//! The core library's write path against the test API server: plans become conditional
//! JSON Patches, the executor retries what is transient and journals every outcome, a
//! concurrent change is a conflict, and the rollback planner restores exactly.

use placekit_client::interrupt::Interrupt;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use placekit_client::executor::{ExecutorConfig, KubeNodeWriter, WriteItem, execute};
use placekit_core::plan::{ChangeRequest, NodePlan, NodeState, plan_node};
use placekit_core::rollback::{NodeRollback, plan_node_rollback};
use placekit_core::snapshot::{OutcomeKind, Snapshot, SnapshotHeader, write_snapshot};
use placekit_core::syntax::parse_label_changes;
use placekit_testserver::{
    ADMIN_TOKEN, ConcurrentWrite, Fault, FaultAction, Generator, ServerConfig, TestServer,
};
use serde_json::json;

async fn cluster(nodes: usize) -> TestServer {
    TestServer::start(ServerConfig::default().with_generator(Generator {
        nodes,
        pods: 0,
        gpus_per_node: 8,
    }))
    .await
    .unwrap()
}

async fn read_nodes(client: &kube::Client) -> Vec<NodeState> {
    let api: Api<Node> = Api::all(client.clone());
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| NodeState::from_node(n).unwrap())
        .collect()
}

fn set_family(nodes: &[NodeState], value: &str) -> Vec<NodePlan> {
    let request = ChangeRequest {
        labels: parse_label_changes(&[
            format!("accelerator.example.com/gpu-family={value}"),
            "placekit.example.com/touched=yes".into(),
        ])
        .unwrap(),
        overwrite: true,
        ..Default::default()
    };
    nodes.iter().map(|n| plan_node(n, &request)).collect()
}

fn items(plans: &[NodePlan]) -> Vec<WriteItem> {
    plans.iter().map(WriteItem::from_plan).collect()
}

fn fast() -> ExecutorConfig {
    ExecutorConfig {
        base_backoff: std::time::Duration::from_millis(5),
        ..Default::default()
    }
}

#[tokio::test]
async fn fault_on_the_third_write_fails_only_that_node_and_rollback_restores_the_rest() {
    let server = cluster(10).await;
    let client = server.client(ADMIN_TOKEN);
    let before = read_nodes(&client).await;
    let plans = set_family(&before, "b200");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.jsonl");
    let header = SnapshotHeader::new(
        "test",
        "0",
        "placekit-test",
        &placekit_core::snapshot::ClusterIdentity {
            server: server.url(),
            ..Default::default()
        },
        vec![],
        "set",
        &plans,
    );
    let mut journal = write_snapshot(&path, &header).unwrap();

    // A 500 on the 3rd patch, then a dropped connection on its retry: with two attempts,
    // that node fails and the nine others are applied.
    server.inject(Fault::new(
        "patch",
        "nodes",
        3,
        FaultAction::Status {
            code: 500,
            retry_after_seconds: None,
        },
    ));
    server.inject(Fault::new("patch", "nodes", 4, FaultAction::Drop));
    let writer = KubeNodeWriter::new(client.clone(), "placekit");
    let config = ExecutorConfig {
        concurrency: 1,
        max_attempts: 2,
        ..fast()
    };
    let stop = Interrupt::default();
    let outcomes = execute(
        &writer,
        &items(&plans),
        &config,
        Some(&mut journal),
        &stop,
        |_| {},
    )
    .await
    .outcomes;
    drop(journal);
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.kind == OutcomeKind::Failed)
        .map(|o| o.node.as_str())
        .collect();
    assert_eq!(failed, vec!["gpu-node-00002"]);
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| o.kind == OutcomeKind::Applied)
            .count(),
        9
    );

    let snapshot = Snapshot::load(&path).unwrap();
    assert_eq!(
        snapshot.outcome_of("gpu-node-00002"),
        Some(OutcomeKind::Failed)
    );
    assert_eq!(snapshot.records.len(), 10, "every outcome journaled");

    // Rollback restores exactly the nine.
    let now = read_nodes(&client).await;
    let mut rollback_items = Vec::new();
    for node in &snapshot.header.nodes {
        let current = now.iter().find(|n| n.name == node.name);
        match plan_node_rollback(node, snapshot.outcome_of(&node.name), current, false) {
            NodeRollback::Restore { plan, conflicts } => {
                assert!(conflicts.is_empty());
                if !plan.is_noop() {
                    rollback_items.push(WriteItem::from_plan(&plan));
                }
            }
            NodeRollback::NothingApplied { node, .. } => assert_eq!(node, "gpu-node-00002"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(rollback_items.len(), 9);
    let outcomes = execute(&writer, &rollback_items, &fast(), None, &stop, |_| {})
        .await
        .outcomes;
    assert!(outcomes.iter().all(|o| o.kind == OutcomeKind::Applied));
    let restored = read_nodes(&client).await;
    for (b, r) in before.iter().zip(&restored) {
        assert_eq!(b.labels, r.labels, "{}", b.name);
    }
}

#[tokio::test]
async fn a_concurrent_change_to_a_touched_key_is_a_conflict_and_survives() {
    let server = cluster(3).await;
    let client = server.client(ADMIN_TOKEN);
    let plans = set_family(&read_nodes(&client).await, "b200");
    server.concurrent_write(ConcurrentWrite::new(
        "nodes",
        "gpu-node-00001",
        json!({"metadata": {"labels": {"accelerator.example.com/gpu-family": "h200"}}}),
    ));
    let writer = KubeNodeWriter::new(client.clone(), "placekit");
    let stop = Interrupt::default();
    let outcomes = execute(&writer, &items(&plans), &fast(), None, &stop, |_| {})
        .await
        .outcomes;
    let kinds: Vec<OutcomeKind> = outcomes.iter().map(|o| o.kind).collect();
    assert_eq!(
        kinds,
        vec![
            OutcomeKind::Applied,
            OutcomeKind::Conflict,
            OutcomeKind::Applied
        ]
    );
    assert_eq!(
        outcomes[1].attempts, 1,
        "a failed precondition is never retried"
    );
    let labels = &server.object("nodes", None, "gpu-node-00001").unwrap()["metadata"]["labels"];
    assert_eq!(labels["accelerator.example.com/gpu-family"], "h200");
    assert!(
        labels.get("placekit.example.com/touched").is_none(),
        "nothing of the plan was applied"
    );
}

#[tokio::test]
async fn an_unrelated_concurrent_label_change_is_not_a_conflict() {
    let server = cluster(1).await;
    let client = server.client(ADMIN_TOKEN);
    let plans = set_family(&read_nodes(&client).await, "b200");
    server.concurrent_write(ConcurrentWrite::new(
        "nodes",
        "gpu-node-00000",
        json!({"metadata": {"labels": {"unrelated": "x"}}, "status": {"phase": "heartbeat"}}),
    ));
    let writer = KubeNodeWriter::new(client.clone(), "placekit");
    let stop = Interrupt::default();
    let outcomes = execute(&writer, &items(&plans), &fast(), None, &stop, |_| {})
        .await
        .outcomes;
    assert_eq!(outcomes[0].kind, OutcomeKind::Applied);
    let labels = &server.object("nodes", None, "gpu-node-00000").unwrap()["metadata"]["labels"];
    assert_eq!(labels["accelerator.example.com/gpu-family"], "b200");
    assert_eq!(labels["placekit.example.com/touched"], "yes");
    assert_eq!(labels["unrelated"], "x");
}

#[tokio::test]
async fn retry_after_is_honoured_and_dry_run_writes_nothing() {
    let server = cluster(2).await;
    let client = server.client(ADMIN_TOKEN);
    let plans = set_family(&read_nodes(&client).await, "b200");
    server.inject(Fault::new(
        "patch",
        "nodes",
        1,
        FaultAction::Status {
            code: 429,
            retry_after_seconds: Some(1),
        },
    ));
    let writer = KubeNodeWriter::new(client.clone(), "placekit");
    let stop = Interrupt::default();
    let started = std::time::Instant::now();
    let config = ExecutorConfig {
        dry_run: true,
        concurrency: 1,
        ..fast()
    };
    let outcomes = execute(&writer, &items(&plans), &config, None, &stop, |_| {})
        .await
        .outcomes;
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert_eq!(outcomes[0].attempts, 2);
    assert!(outcomes.iter().all(|o| o.kind == OutcomeKind::Applied));
    let labels = &server.object("nodes", None, "gpu-node-00000").unwrap()["metadata"]["labels"];
    assert_eq!(
        labels["accelerator.example.com/gpu-family"], "a100",
        "dry run persisted nothing"
    );
}

#[tokio::test]
async fn a_forbidden_write_fails_without_retry() {
    let server = cluster(1).await;
    let plans = set_family(&read_nodes(&server.client(ADMIN_TOKEN)).await, "b200");
    let writer = KubeNodeWriter::new(
        server.client(placekit_testserver::READONLY_TOKEN),
        "placekit",
    );
    let stop = Interrupt::default();
    let outcomes = execute(&writer, &items(&plans), &fast(), None, &stop, |_| {})
        .await
        .outcomes;
    assert_eq!(
        (outcomes[0].kind, outcomes[0].attempts),
        (OutcomeKind::Failed, 1)
    );
    assert!(
        outcomes[0]
            .message
            .as_deref()
            .unwrap()
            .contains("cannot patch resource \"nodes\"")
    );
}

#[tokio::test]
async fn a_write_whose_answer_was_lost_is_recognised_as_applied() {
    let server = cluster(2).await;
    let client = server.client(ADMIN_TOKEN);
    let plans = set_family(&read_nodes(&client).await, "b200");
    // The first write is applied, but the connection drops before the answer.
    server.inject(Fault::new("patch", "nodes", 1, FaultAction::LoseAnswer));
    let writer = KubeNodeWriter::new(client.clone(), "placekit");
    let stop = Interrupt::default();
    let config = ExecutorConfig {
        concurrency: 1,
        ..fast()
    };
    let outcomes = execute(&writer, &items(&plans), &config, None, &stop, |_| {})
        .await
        .outcomes;
    assert_eq!(outcomes[0].kind, OutcomeKind::Applied, "{:?}", outcomes[0]);
    assert_eq!(outcomes[0].attempts, 2);
    assert!(
        outcomes[0]
            .message
            .as_deref()
            .unwrap()
            .contains("answer was lost")
    );
    assert_eq!(outcomes[1].kind, OutcomeKind::Applied);

    // A real conflict after a transient failure stays a conflict.
    let server = cluster(1).await;
    let client = server.client(ADMIN_TOKEN);
    let plans = set_family(&read_nodes(&client).await, "b200");
    server.inject(Fault::new(
        "patch",
        "nodes",
        1,
        FaultAction::Status {
            code: 503,
            retry_after_seconds: None,
        },
    ));
    server.concurrent_write(ConcurrentWrite {
        nth: 1,
        ..ConcurrentWrite::new(
            "nodes",
            "gpu-node-00000",
            json!({"metadata": {"labels": {"accelerator.example.com/gpu-family": "h200"}}}),
        )
    });
    let writer = KubeNodeWriter::new(client.clone(), "placekit");
    let outcomes = execute(&writer, &items(&plans), &fast(), None, &stop, |_| {})
        .await
        .outcomes;
    assert_eq!(outcomes[0].kind, OutcomeKind::Conflict);
}
