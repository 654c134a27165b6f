//! The test API server's own behaviour over HTTP, through `kube::Client`: preconditions,
//! JSON Patch `test`, dryRun, pagination, fault injection, concurrent writers, counters
//! and a cluster of 5,000 nodes and 150,000 pods.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use placekit_testserver::{
    ADMIN_TOKEN, ConcurrentWrite, Fault, FaultAction, Generator, ServerConfig, TestServer,
};
use serde_json::json;

const FIXTURE: &str = include_str!("../fixtures/gpu-cluster.yaml");

async fn server() -> TestServer {
    TestServer::start(ServerConfig::default().with_fixture_yaml(FIXTURE))
        .await
        .unwrap()
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other}"),
    }
}

fn json_patch(value: serde_json::Value) -> Patch<()> {
    Patch::Json(serde_json::from_value(value).unwrap())
}

#[tokio::test]
async fn stale_resource_version_is_409_on_patch_and_put() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client(ADMIN_TOKEN));
    let read = nodes.get("gpu-a100-1").await.unwrap();
    nodes
        .patch(
            "gpu-a100-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
        )
        .await
        .unwrap();
    let stale_rv = read.metadata.resource_version.clone().unwrap();
    let err = api_error(
        nodes
            .patch(
                "gpu-a100-1",
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"resourceVersion": stale_rv, "labels": {"x": "2"}}}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    let err = api_error(
        nodes
            .replace("gpu-a100-1", &PostParams::default(), &read)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on nodes \"gpu-a100-1\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(
        server.object("nodes", None, "gpu-a100-1").unwrap()["metadata"]["labels"]["x"],
        "1"
    );
}

#[tokio::test]
async fn failed_json_patch_test_is_422_and_nothing_changes() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client(ADMIN_TOKEN));
    let before = server.object("nodes", None, "gpu-a100-1").unwrap();
    let patch = json_patch(json!([
        {"op": "test", "path": "/metadata/labels/accelerator.example.com~1gpu-family", "value": "h100"},
        {"op": "replace", "path": "/metadata/labels/accelerator.example.com~1gpu-family", "value": "b200"}
    ]));
    let err = api_error(
        nodes
            .patch("gpu-a100-1", &PatchParams::default(), &patch)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(server.object("nodes", None, "gpu-a100-1").unwrap(), before);

    // `test` against null passes for a missing key, as on a real API server.
    let absent = json_patch(json!([
        {"op": "test", "path": "/metadata/labels/new.example.com~1k", "value": null},
        {"op": "add", "path": "/metadata/labels/new.example.com~1k", "value": "v"}
    ]));
    nodes
        .patch("gpu-a100-1", &PatchParams::default(), &absent)
        .await
        .unwrap();
    assert_eq!(
        server.object("nodes", None, "gpu-a100-1").unwrap()["metadata"]["labels"]["new.example.com/k"],
        "v"
    );
}

#[tokio::test]
async fn dry_run_leaves_nothing_behind() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client(ADMIN_TOKEN));
    let before = server.object("nodes", None, "cpu-1").unwrap();
    let params = PatchParams {
        dry_run: true,
        ..Default::default()
    };
    let answer = nodes
        .patch(
            "cpu-1",
            &params,
            &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        answer.metadata.labels.unwrap()["x"],
        "1",
        "the answer shows the result"
    );
    assert_eq!(server.object("nodes", None, "cpu-1").unwrap(), before);
    let bad = nodes
        .patch(
            "cpu-1",
            &params,
            &Patch::Merge(json!({"metadata": {"labels": {"bad key": "1"}}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(bad).code, 422, "dry run still validates");
}

#[tokio::test]
async fn pagination_returns_every_item_exactly_once() {
    let server = TestServer::start(ServerConfig::default().with_generator(Generator {
        nodes: 53,
        pods: 0,
        gpus_per_node: 8,
    }))
    .await
    .unwrap();
    let nodes: Api<Node> = Api::all(server.client(ADMIN_TOKEN));
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(7).labels("pool=online");
    loop {
        let page = nodes.list(&params).await.unwrap();
        names.extend(page.items.iter().map(|n| n.metadata.name.clone().unwrap()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => break,
        }
    }
    let expected: Vec<String> = (0..26).map(|i| format!("gpu-node-{i:05}")).collect();
    assert_eq!(names, expected);
    assert_eq!(server.count("list", "nodes"), 4);
}

#[tokio::test]
async fn faults_fire_exactly_where_asked() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client(ADMIN_TOKEN));
    server.inject(Fault::new(
        "patch",
        "nodes",
        3,
        FaultAction::Status {
            code: 500,
            retry_after_seconds: None,
        },
    ));
    server.inject(Fault::new("get", "nodes", 2, FaultAction::Drop));
    server.inject(Fault::new(
        "list",
        "pods",
        1,
        FaultAction::Status {
            code: 429,
            retry_after_seconds: Some(7),
        },
    ));
    let merge = |v: &str| Patch::Merge(json!({"metadata": {"labels": {"n": v}}}));
    let mut results = Vec::new();
    for i in 0..5 {
        results.push(
            nodes
                .patch("cpu-1", &PatchParams::default(), &merge(&i.to_string()))
                .await
                .map_err(|e| api_error(e).code),
        );
    }
    assert_eq!(
        results
            .iter()
            .map(|r| r.as_ref().err().copied())
            .collect::<Vec<_>>(),
        vec![None, None, Some(500), None, None]
    );

    assert!(nodes.get("cpu-1").await.is_ok());
    match nodes.get("cpu-1").await {
        Err(kube::Error::Api(s)) => panic!("expected a dropped connection, got {s:?}"),
        Err(_) => {}
        Ok(_) => panic!("the second get should have been dropped"),
    }
    assert!(nodes.get("cpu-1").await.is_ok());

    let pods: Api<Pod> = Api::all(server.client(ADMIN_TOKEN));
    // As kube-apiserver's priority-and-fairness filter answers: plain text, no Status (the
    // Retry-After header carries the wait; see `retry_after_header_is_sent`).
    let err = api_error(pods.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(err.code, 429);
    assert!(
        err.message
            .contains("Too many requests, please try again later."),
        "{err:?}"
    );
    assert!(pods.list(&ListParams::default()).await.is_ok());
    assert_eq!(server.count("patch", "nodes"), 5);
    assert_eq!(server.count("get", "nodes"), 3);
    assert_eq!(server.count("list", "pods"), 2);
}

#[tokio::test]
async fn retry_after_header_is_sent() {
    let server = server().await;
    server.inject(Fault::new(
        "get",
        "nodes",
        1,
        FaultAction::Status {
            code: 429,
            retry_after_seconds: Some(3),
        },
    ));
    let client = server.client(ADMIN_TOKEN);
    let request = http::Request::get("/api/v1/nodes/cpu-1")
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
}

#[tokio::test]
async fn concurrent_writer_lands_between_read_and_write() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client(ADMIN_TOKEN));
    server.concurrent_write(ConcurrentWrite::new(
        "nodes",
        "gpu-a100-2",
        json!({"metadata": {"labels": {"ops.example.com.node-restriction.kubernetes.io/llm-pool": "batch"}}}),
    ));
    let patch = json_patch(json!([
        {"op": "test", "path": "/metadata/labels/ops.example.com.node-restriction.kubernetes.io~1llm-pool", "value": "online"},
        {"op": "replace", "path": "/metadata/labels/ops.example.com.node-restriction.kubernetes.io~1llm-pool", "value": "training"}
    ]));
    let err = api_error(
        nodes
            .patch("gpu-a100-2", &PatchParams::default(), &patch)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    let labels = &server.object("nodes", None, "gpu-a100-2").unwrap()["metadata"]["labels"];
    assert_eq!(
        labels["ops.example.com.node-restriction.kubernetes.io/llm-pool"], "batch",
        "the other writer's value survives"
    );
}

#[tokio::test]
async fn unknown_token_is_401_and_read_only_user_is_403() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client("wrong-token"));
    let err = api_error(nodes.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (401, "Unauthorized"));
    let viewer: Api<Node> = Api::all(server.client(placekit_testserver::READONLY_TOKEN));
    assert!(viewer.list(&ListParams::default()).await.is_ok());
    let err = api_error(
        viewer
            .patch("cpu-1", &PatchParams::default(), &Patch::Merge(json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
}

#[tokio::test]
async fn bad_label_selector_is_400_with_the_parser_message() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client(ADMIN_TOKEN));
    let err = api_error(
        nodes
            .list(&ListParams::default().labels("a in"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "unable to parse requirement: found '' expected: '('"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_nodes_and_150k_pods_list_in_pages() {
    let started = std::time::Instant::now();
    let server = TestServer::start(ServerConfig::default().with_generator(Generator {
        nodes: 5_000,
        pods: 150_000,
        gpus_per_node: 8,
    }))
    .await
    .unwrap();
    eprintln!(
        "loaded 5,000 nodes and 150,000 pods in {:?}",
        started.elapsed()
    );
    let pods: Api<Pod> = Api::all(server.client(ADMIN_TOKEN));
    let mut count = 0;
    let mut params = ListParams::default().limit(5_000);
    loop {
        let page = pods.list_metadata(&params).await.unwrap();
        count += page.items.len();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => break,
        }
    }
    assert_eq!(count, 150_000);
    assert_eq!(server.count("list", "pods"), 30);
    let on_node: Api<Pod> = Api::all(server.client(ADMIN_TOKEN));
    let some = on_node
        .list(&ListParams::default().fields("spec.nodeName=gpu-node-00042"))
        .await
        .unwrap();
    assert_eq!(some.items.len(), 30);
    eprintln!("total {:?}", started.elapsed());
}
