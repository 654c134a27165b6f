//! Reading from the API server: target nodes (one paged list, or one GET per named node),
//! paged lists into minimal view types, the pods on nodes, RBAC checks and the cluster's identity. Every list is paged; nothing here loops
//! per object over the API except reading named nodes, with bounded concurrency.

use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, ListParams, PostParams};

use crate::bounded::MAX_RESPONSE_BYTES;
use crate::connect::Connection;
use crate::error::ClientError;
use crate::paging::{MAX_PAGES, PageError};
use crate::protobuf;
use crate::targets::Targets;
use placekit_core::cluster::ClusterIdentity;
use placekit_core::model::Pod;
use placekit_core::plan::NodeState;

fn api_error(e: kube::Error, doing: &str) -> ClientError {
    ClientError::from_api(e, doing)
}

/// Page size of node lists (and of the workload lists built on [`list_pages`]).
pub const PAGE: u32 = 500;

/// Reads the target nodes: one GET per named node (bounded concurrency) or one paged list.
/// Named nodes that do not exist are an error listing all of them.
pub async fn fetch_node_objects(
    client: &kube::Client,
    targets: &Targets,
) -> Result<Vec<Node>, ClientError> {
    let api: Api<Node> = Api::all(client.clone());
    match targets {
        Targets::Names(names) => {
            let mut found = Vec::new();
            let mut missing = Vec::new();
            for (name, node) in get_nodes(client, names.clone()).await? {
                match node {
                    Some(node) => found.push(node),
                    None => missing.push(name),
                }
            }
            if !missing.is_empty() {
                return Err(ClientError::NodesNotFound(missing));
            }
            Ok(found)
        }
        Targets::Selector(selector) => {
            list_all(&api, Some(&selector.to_string()), "listing nodes").await
        }
        Targets::All => list_all(&api, None, "listing nodes").await,
    }
}

/// [`fetch_node_objects`], as the states plans are made from.
pub async fn fetch_nodes(
    client: &kube::Client,
    targets: &Targets,
) -> Result<Vec<NodeState>, ClientError> {
    fetch_node_objects(client, targets)
        .await?
        .iter()
        .map(node_state)
        .collect()
}

/// A node's plan state, or an error naming the unreadable node.
pub fn node_state(node: &Node) -> Result<NodeState, ClientError> {
    NodeState::from_node(node).map_err(|source| ClientError::UnreadableNode {
        node: node.metadata.name.clone().unwrap_or_default(),
        source,
    })
}

/// Lists every object with `limit`/`continue` paging.
pub async fn list_all<K>(
    api: &Api<K>,
    label_selector: Option<&str>,
    doing: &str,
) -> Result<Vec<K>, ClientError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    list_all_paged(api, label_selector, doing, PAGE).await
}

/// [`list_all`] with pages of `page_size` objects.
async fn list_all_paged<K>(
    api: &Api<K>,
    label_selector: Option<&str>,
    doing: &str,
    page_size: u32,
) -> Result<Vec<K>, ClientError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut params = ListParams::default().limit(page_size);
    if let Some(s) = label_selector.filter(|s| !s.is_empty()) {
        params = params.labels(s);
    }
    let mut out = Vec::new();
    list_pages(api, params, doing, |page| out.extend(page)).await?;
    Ok(out)
}

/// Hands every page of a list to `on_page`, so what is kept is the caller's choice and
/// memory stays proportional to one page.
pub async fn list_pages<K>(
    api: &Api<K>,
    mut params: ListParams,
    doing: &str,
    mut on_page: impl FnMut(Vec<K>),
) -> Result<(), ClientError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    loop {
        let page = api.list(&params).await.map_err(|e| api_error(e, doing))?;
        on_page(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => return Ok(()),
        }
    }
}

/// Asks the API server whether the current user may `verb` `resource` (SelfSubjectAccessReview).
pub async fn check_permission(
    client: &kube::Client,
    verb: &str,
    resource: &str,
    group: &str,
) -> Result<(), ClientError> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_string()),
                resource: Some(resource.to_string()),
                group: Some(group.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = api
        .create(&PostParams::default(), &review)
        .await
        .map_err(|e| api_error(e, &format!("checking permission to {verb} {resource}")))?;
    if answer.status.is_some_and(|s| s.allowed) {
        Ok(())
    } else {
        Err(ClientError::Denied {
            verb: verb.to_string(),
            resource: resource.to_string(),
            group: group.to_string(),
        })
    }
}

/// Every value each of `keys` has on the cluster's nodes: one label-selected paged list
/// per key (only the nodes that carry it), reading labels alone.
pub async fn label_values(
    client: &kube::Client,
    keys: &[&str],
) -> Result<std::collections::BTreeMap<String, std::collections::BTreeSet<String>>, ClientError> {
    #[derive(serde::Deserialize)]
    struct Labelled {
        #[serde(default)]
        metadata: LabelsOnly,
    }
    #[derive(Default, serde::Deserialize)]
    struct LabelsOnly {
        #[serde(default)]
        labels: std::collections::BTreeMap<String, String>,
    }
    let mut out = std::collections::BTreeMap::new();
    for key in keys {
        let mut values = std::collections::BTreeSet::new();
        for_each_page(
            client,
            "/api/v1/nodes",
            None,
            Some(key),
            500,
            |page: Vec<Labelled>| {
                values.extend(
                    page.into_iter()
                        .filter_map(|n| n.metadata.labels.get(*key).cloned()),
                );
            },
        )
        .await?;
        out.insert(key.to_string(), values);
    }
    Ok(out)
}

/// A page of a list read into a minimal view type.
#[derive(Debug, serde::Deserialize)]
struct ViewList<T> {
    #[serde(default = "Vec::new")]
    items: Vec<T>,
    #[serde(default)]
    metadata: ViewListMeta,
}

#[derive(Debug, Default, serde::Deserialize)]
struct ViewListMeta {
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
}

/// Percent-encodes a query value.
fn encode_query(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Pages through a collection (`/api/v1/pods`, `/api/v1/nodes`...) reading each item into a
/// minimal view type `T` and handing every page to `on_page`, so memory stays proportional
/// to one page whatever the cluster's size. Returns the number of list requests made.
pub async fn for_each_page<T: serde::de::DeserializeOwned>(
    client: &kube::Client,
    collection: &str,
    field_selector: Option<&str>,
    label_selector: Option<&str>,
    page_size: u32,
    on_page: impl FnMut(Vec<T>),
) -> Result<usize, ClientError> {
    pages(
        client,
        collection,
        field_selector,
        label_selector,
        page_size,
        on_page,
    )
    .await
    .map(|(requests, _)| requests)
    .map_err(|e| e.into_client_error(&format!("listing {}", described(collection))))
}

/// [`for_each_page`], returning the list's resourceVersion for [`watch`] to start from.
pub async fn for_each_page_at<T: serde::de::DeserializeOwned>(
    client: &kube::Client,
    collection: &str,
    field_selector: Option<&str>,
    label_selector: Option<&str>,
    page_size: u32,
    on_page: impl FnMut(Vec<T>),
) -> Result<String, ClientError> {
    pages(
        client,
        collection,
        field_selector,
        label_selector,
        page_size,
        on_page,
    )
    .await
    .map(|(_, version)| version)
    .map_err(|e| e.into_client_error(&format!("listing {}", described(collection))))
}

/// A watch of a collection from `resource_version` (a list's), with bookmarks, each change
/// read into the view type `T` as it comes. The server ends a watch after a while: the
/// stream then ends, and the caller watches again from the last version it saw; a version
/// too old for the server (410 Gone) is an error the caller answers with a new list.
pub async fn watch<T: Clone + serde::de::DeserializeOwned>(
    client: &kube::Client,
    collection: &str,
    field_selector: Option<&str>,
    label_selector: Option<&str>,
    resource_version: &str,
) -> Result<
    impl futures::Stream<Item = Result<kube::core::WatchEvent<T>, ClientError>> + use<T>,
    ClientError,
> {
    use futures::StreamExt as _;
    let mut uri = format!(
        "{collection}?watch=1&allowWatchBookmarks=true&resourceVersion={}",
        encode_query(resource_version)
    );
    if let Some(f) = field_selector.filter(|f| !f.is_empty()) {
        uri.push_str(&format!("&fieldSelector={}", encode_query(f)));
    }
    if let Some(l) = label_selector.filter(|l| !l.is_empty()) {
        uri.push_str(&format!("&labelSelector={}", encode_query(l)));
    }
    let doing = format!("watching {}", described(collection));
    let request = http::Request::get(&uri)
        .body(Vec::new())
        .map_err(|e| api_error(kube::Error::HttpError(e), &doing))?;
    let events = client
        .request_events::<T>(request)
        .await
        .map_err(|e| api_error(e, &doing))?;
    Ok(events.map(
        move |event: Result<kube::core::WatchEvent<T>, kube::Error>| {
            event.map_err(|e| api_error(e, &doing))
        },
    ))
}

/// The pause before a watch is started again: a watch the server ends after its own timeout
/// restarts at once; one cut short (a proxy that closes long requests) waits 1 s, then twice
/// as long each time in a row, up to 30 s, so a client never restarts in a tight loop.
#[derive(Debug)]
pub struct WatchRestart {
    pause: std::time::Duration,
    started: tokio::time::Instant,
}

impl Default for WatchRestart {
    fn default() -> Self {
        WatchRestart {
            pause: Self::FIRST,
            started: tokio::time::Instant::now(),
        }
    }
}

impl WatchRestart {
    /// A watch that ends sooner than this was cut short.
    const QUICK_END: std::time::Duration = std::time::Duration::from_secs(5);
    const FIRST: std::time::Duration = std::time::Duration::from_secs(1);
    const MAX: std::time::Duration = std::time::Duration::from_secs(30);

    /// Marks a watch started.
    pub fn started(&mut self) {
        self.started = tokio::time::Instant::now();
    }

    /// Waits as long as the watch that just ended calls for.
    pub async fn ended(&mut self) {
        if self.started.elapsed() < Self::QUICK_END {
            tokio::time::sleep(self.pause).await;
            self.pause = (self.pause * 2).min(Self::MAX);
        } else {
            self.pause = Self::FIRST;
        }
    }
}

/// How an optional collection's list went.
#[derive(Debug)]
pub enum Listed {
    /// Read, in this many requests.
    Read(usize),
    /// The API server does not serve it (404: the API group is absent or disabled).
    NotServed,
    /// RBAC does not allow listing it: what the user is told, once.
    Forbidden(String),
}

/// [`for_each_page`] over a collection the cluster may not serve or the user may not be
/// allowed to list (DRA's `resource.k8s.io/v1`, custom resources): those two answers are
/// not errors but a [`Listed`] the caller reports and goes on from.
pub async fn for_each_page_if_served<T: serde::de::DeserializeOwned>(
    client: &kube::Client,
    collection: &str,
    page_size: u32,
    on_page: impl FnMut(Vec<T>),
) -> Result<Listed, ClientError> {
    match pages(client, collection, None, None, page_size, on_page).await {
        Ok((n, _)) => Ok(Listed::Read(n)),
        Err(PageError::Api(kube::Error::Api(s))) if s.code == 404 => Ok(Listed::NotServed),
        Err(PageError::Api(kube::Error::Api(s))) if s.code == 403 => Ok(Listed::Forbidden(
            format!("cannot list {}: {}", described(collection), s.message),
        )),
        Err(e) => Err(e.into_client_error(&format!("listing {}", described(collection)))),
    }
}

impl PageError {
    fn into_client_error(self, doing: &str) -> ClientError {
        match self {
            PageError::Api(e) => api_error(e, doing),
            source => ClientError::Paging {
                doing: doing.to_string(),
                source,
            },
        }
    }
}

/// Pages through a list: the number of requests made, and the list's resourceVersion (what
/// a watch of the same collection starts from, so that no change between the list and the
/// watch is lost).
///
/// The next page is asked for as soon as a page's continue token is read, before its items
/// are decoded: the server encodes and sends page N+1 while page N is decoded and folded,
/// so a list costs about what the server takes to answer it. Two pages are in memory at
/// most.
async fn pages<T: serde::de::DeserializeOwned>(
    client: &kube::Client,
    collection: &str,
    field_selector: Option<&str>,
    label_selector: Option<&str>,
    page_size: u32,
    mut on_page: impl FnMut(Vec<T>),
) -> Result<(usize, String), PageError> {
    let mut base = format!("{collection}?limit={page_size}");
    if let Some(f) = field_selector.filter(|f| !f.is_empty()) {
        base.push_str(&format!("&fieldSelector={}", encode_query(f)));
    }
    if let Some(l) = label_selector.filter(|l| !l.is_empty()) {
        base.push_str(&format!("&labelSelector={}", encode_query(l)));
    }
    let accept = protobuf::lists_in_protobuf(collection).then_some(protobuf::ACCEPT);
    let fetch = |continue_token: Option<&str>| {
        let mut uri = base.clone();
        if let Some(c) = continue_token {
            uri.push_str(&format!("&continue={}", encode_query(c)));
        }
        let client = client.clone();
        let (sender, early_token) = tokio::sync::oneshot::channel();
        Prefetch {
            task: tokio::spawn(async move {
                let mut request = http::Request::get(&uri);
                if let Some(accept) = accept {
                    request = request.header(http::header::ACCEPT, accept);
                }
                let request = request
                    .body(Vec::new())
                    .map_err(|e| PageError::Api(kube::Error::HttpError(e)))?;
                bounded_body(&client, request, Some(sender)).await
            }),
            early_token,
        }
    };
    let mut current = fetch(None);
    let mut asked = 1;
    let mut last_token: Option<String> = None;
    let mut requests = 0;
    loop {
        // The next page is asked for at the first of: the start of this page's body
        // (protobuf), or its whole body decoded (JSON, or anything unexpected).
        let mut next = None;
        let mut ask = |token: Option<String>, next: &mut Option<Prefetch>| match token {
            Some(c) if last_token.as_ref() == Some(&c) => Err(PageError::RepeatedToken),
            Some(_) if asked == MAX_PAGES => Err(PageError::TooManyPages),
            Some(c) => {
                *next = Some(fetch(Some(&c)));
                asked += 1;
                last_token = Some(c);
                Ok(())
            }
            None => Ok(()),
        };
        let early = (&mut current.early_token).await.ok().flatten();
        let asked_early = early.is_some();
        ask(early, &mut next)?;
        let answer = current.answer().await?;
        requests += 1;
        // Counted before a single item is built: kube-apiserver honours `limit` on the
        // paged, consistent reads made here.
        let items = answer.item_count()?;
        if items > page_size as usize {
            return Err(PageError::TooManyItems {
                asked: page_size,
                got: items,
            });
        }
        let page = answer.decode::<T>()?;
        drop(answer);
        if !asked_early {
            ask(page.continue_token, &mut next)?;
        }
        on_page(page.items);
        match next {
            Some(following) => current = following,
            None => return Ok((requests, page.resource_version)),
        }
    }
}

/// A page being fetched: its answer, and its continue token as soon as the start of the
/// body holds it. Dropped (the command stopped, or a page failed), its request is cancelled.
struct Prefetch {
    task: tokio::task::JoinHandle<Result<Answer, PageError>>,
    early_token: tokio::sync::oneshot::Receiver<Option<String>>,
}

impl Prefetch {
    async fn answer(&mut self) -> Result<Answer, PageError> {
        match (&mut self.task).await {
            Ok(answer) => answer,
            Err(e) => Err(PageError::Api(kube::Error::Service(Box::new(e)))),
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Answer {
    /// How many items the page holds, counted without building them (a JSON item is
    /// skipped as `IgnoredAny`, which takes no memory).
    fn item_count(&self) -> Result<usize, PageError> {
        if self.is_protobuf {
            protobuf::count_items(&self.body).map_err(PageError::NotAProtobufList)
        } else {
            let page: ViewList<serde::de::IgnoredAny> =
                serde_json::from_slice(&self.body).map_err(PageError::NotAList)?;
            Ok(page.items.len())
        }
    }

    /// The page, its items read into the view type. Decided by what the server answered:
    /// one that does not speak protobuf (a proxy, an older or test server) answers JSON.
    fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<protobuf::Page<T>, PageError> {
        if self.is_protobuf {
            protobuf::decode_page(&self.body).map_err(PageError::NotAProtobufList)
        } else {
            let page: ViewList<T> =
                serde_json::from_slice(&self.body).map_err(PageError::NotAList)?;
            Ok(protobuf::Page {
                items: page.items,
                continue_token: page.metadata.continue_.filter(|c| !c.is_empty()),
                resource_version: page.metadata.resource_version.unwrap_or_default(),
            })
        }
    }
}

/// An answer's body, and whether it is protobuf (by its `Content-Type`).
struct Answer {
    body: bytes::Bytes,
    is_protobuf: bool,
}

/// A request's answer body, at most [`MAX_RESPONSE_BYTES`]; an error status as kube reports
/// it (a `Status` in JSON or protobuf, or the text of a proxy's page).
async fn bounded_body(
    client: &kube::Client,
    request: http::Request<Vec<u8>>,
    mut early_token: Option<tokio::sync::oneshot::Sender<Option<String>>>,
) -> Result<Answer, PageError> {
    use http_body_util::BodyExt as _;
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .map_err(PageError::Api)?;
    let status = response.status();
    let is_protobuf = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or_default().trim() == protobuf::MEDIA_TYPE);
    if !status.is_success() || !is_protobuf {
        early_token = None;
    }
    let mut limited = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE_BYTES);
    let mut body = bytes::BytesMut::new();
    let mut next_look = 0;
    while let Some(frame) = limited.frame().await {
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                return Err(PageError::TooLarge);
            }
            Err(e) => {
                return Err(PageError::Api(match e.downcast::<kube::Error>() {
                    Ok(kube) => *kube,
                    Err(other) => kube::Error::Service(other),
                }));
            }
        };
        body.extend_from_slice(&data);
        // The token is looked for when the body has doubled since the last look (linear
        // work in all), and not past the first bytes where kube-apiserver writes it.
        if body.len() >= next_look
            && let Some(sender) = early_token.take()
        {
            match protobuf::continue_token_of_prefix(&body) {
                Some(token) => {
                    let _ = sender.send(token);
                }
                None if body.len() >= protobuf::TOKEN_PREFIX_BYTES => {
                    let _ = sender.send(None);
                }
                None => {
                    early_token = Some(sender);
                    next_look = body.len().saturating_mul(2).max(body.len() + 256);
                }
            }
        }
    }
    let body = body.freeze();
    if status.is_client_error() || status.is_server_error() {
        if is_protobuf && let Ok(answer) = protobuf::decode_status(&body) {
            return Err(PageError::Api(kube::Error::Api(
                answer.with_code(status.as_u16()).boxed(),
            )));
        }
        let text = String::from_utf8_lossy(&body);
        let answer = serde_json::from_str::<kube::core::Status>(&text).unwrap_or_else(|_| {
            kube::core::Status::failure(text.trim(), "Failed to parse error data")
                .with_code(status.as_u16())
        });
        return Err(PageError::Api(kube::Error::Api(answer.boxed())));
    }
    Ok(Answer { body, is_protobuf })
}

/// A collection path as users say it: `/api/v1/nodes` -> `nodes`,
/// `/api/v1/namespaces/ml/pods` -> `pods in namespace ml`.
fn described(collection: &str) -> String {
    let parts: Vec<&str> = collection.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        [.., "namespaces", ns, resource] => format!("{resource} in namespace {ns}"),
        [.., resource] => (*resource).to_string(),
        [] => collection.to_string(),
    }
}

/// Pods per list page for pod scans (a handful of requests for 150,000 pods).
pub const POD_PAGE: u32 = 10_000;
/// Above this many target nodes, pods are listed once for all instead of per node.
const PER_NODE_POD_LISTS: usize = 10;

/// The active (not Succeeded/Failed) pods bound to `nodes`: one field-selected list per node
/// for a few nodes, else one paged list of all active pods.
pub async fn active_pods_on(
    client: &kube::Client,
    nodes: &[String],
) -> Result<Vec<Pod>, ClientError> {
    let mut pods = Vec::new();
    if nodes.len() <= PER_NODE_POD_LISTS {
        for node in nodes {
            let selector =
                format!("spec.nodeName={node},status.phase!=Succeeded,status.phase!=Failed");
            for_each_page(
                client,
                "/api/v1/pods",
                Some(&selector),
                None,
                POD_PAGE,
                |page: Vec<Pod>| pods.extend(page),
            )
            .await?;
        }
    } else {
        for_each_page(
            client,
            "/api/v1/pods",
            Some("status.phase!=Succeeded,status.phase!=Failed"),
            None,
            POD_PAGE,
            |page: Vec<Pod>| {
                pods.extend(
                    page.into_iter()
                        .filter(|p| p.spec.node_name.as_ref().is_some_and(|n| nodes.contains(n))),
                )
            },
        )
        .await?;
    }
    Ok(pods)
}

/// The connection's cluster identity completed with the `kube-system` namespace's uid when
/// the user may read it (a recreated cluster at the same URL has another one). A refusal
/// or an error leaves it out: the identity then rests on the server URL and CA.
/// Whether the namespace exists (an empty answer from a namespace that does not is not "no
/// pods").
pub async fn namespace_exists(client: &kube::Client, namespace: &str) -> Result<bool, ClientError> {
    let api: Api<Namespace> = Api::all(client.clone());
    api.get_opt(namespace)
        .await
        .map(|found| found.is_some())
        .map_err(|e| ClientError::from_api(e, &format!("reading namespace {namespace}")))
}

pub async fn cluster_identity(conn: &Connection) -> ClusterIdentity {
    let api: Api<Namespace> = Api::all(conn.client.clone());
    let uid = api
        .get_opt("kube-system")
        .await
        .ok()
        .flatten()
        .and_then(|ns| ns.metadata.uid);
    ClusterIdentity {
        kube_system_uid: uid,
        ..conn.cluster.clone()
    }
}

/// [`cluster_identity`] for a context that may not answer: a request that gets no answer,
/// or is refused for bad credentials, is an error; one RBAC forbids still proves the
/// cluster is there (the identity then has no `kube-system` uid).
pub async fn probe_identity(conn: &Connection) -> Result<ClusterIdentity, ClientError> {
    let api: Api<Namespace> = Api::all(conn.client.clone());
    let uid = match api.get_opt("kube-system").await {
        Ok(ns) => ns.and_then(|ns| ns.metadata.uid),
        Err(kube::Error::Api(status)) if status.code == 403 => None,
        Err(e) => {
            return Err(ClientError::from_api(
                e,
                "reading the kube-system namespace",
            ));
        }
    };
    Ok(ClusterIdentity {
        kube_system_uid: uid,
        ..conn.cluster.clone()
    })
}

/// GETs nodes by name, 16 at a time; a node that does not exist is `None`.
async fn get_nodes(
    client: &kube::Client,
    names: Vec<String>,
) -> Result<Vec<(String, Option<Node>)>, ClientError> {
    let api: Api<Node> = Api::all(client.clone());
    futures::stream::iter(names)
        .map(|name| {
            let api = api.clone();
            async move {
                let node = api.get_opt(&name).await;
                (name, node)
            }
        })
        .buffered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|(name, r)| {
            let node = r.map_err(|e| api_error(e, &format!("reading node {name}")))?;
            Ok((name, node))
        })
        .collect()
}

/// Reads nodes by name as plan states; a node that does not exist is `None`.
pub async fn read_nodes(
    client: &kube::Client,
    names: Vec<String>,
) -> Result<Vec<(String, Option<NodeState>)>, ClientError> {
    get_nodes(client, names)
        .await?
        .into_iter()
        .map(|(name, node)| Ok((name, node.as_ref().map(node_state).transpose()?)))
        .collect()
}

/// What the cluster says about the NVIDIA GPU operator, for the checks of a change to one of
/// its keys: the ClusterPolicies (one paged list; absent group, nothing), and the device
/// plugin's config ConfigMap the first names (one field-selected list: the ClusterPolicy's
/// `status.namespace` when the operator wrote it, else every namespace). What cannot be
/// read is said in the second value and the checks go on without it.
pub async fn gpu_operator_view(
    client: &kube::Client,
) -> Result<
    (
        placekit_core::label_controllers::GpuOperatorView,
        Vec<String>,
    ),
    ClientError,
> {
    use placekit_core::label_controllers::{DevicePluginConfigs, GpuOperatorView};
    use serde_json::Value;
    let mut view = GpuOperatorView::default();
    let mut warnings = Vec::new();
    let mut policies: Vec<Value> = Vec::new();
    match for_each_page_if_served(
        client,
        "/apis/nvidia.com/v1/clusterpolicies",
        100,
        |page: Vec<Value>| policies.extend(page),
    )
    .await?
    {
        Listed::Forbidden(message) => {
            warnings.push(format!(
                "{message} (clusterpolicies.nvidia.com: the GPU operator's reactions to its labels are not checked)"
            ));
            return Ok((view, warnings));
        }
        Listed::NotServed | Listed::Read(_) => {}
    }
    let Some(policy) = policies.first() else {
        return Ok((view, warnings));
    };
    let text = |p: &str| {
        policy
            .pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    view.cluster_policy = text("/metadata/name");
    let Some(config_map) = text("/spec/devicePlugin/config/name") else {
        return Ok((view, warnings));
    };
    let default = text("/spec/devicePlugin/config/default");
    let collection = match text("/status/namespace") {
        Some(ns) => format!("/api/v1/namespaces/{ns}/configmaps"),
        None => "/api/v1/configmaps".to_string(),
    };
    let mut found: Vec<(String, std::collections::BTreeSet<String>)> = Vec::new();
    let listed = pages(
        client,
        &collection,
        Some(&format!("metadata.name={config_map}")),
        None,
        100,
        |page: Vec<Value>| {
            for cm in page {
                let ns = cm
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let keys = cm["data"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k.clone())
                    .collect();
                found.push((ns, keys));
            }
        },
    )
    .await;
    view.device_plugin_configs = match (listed, found.len()) {
        (Err(PageError::Api(kube::Error::Api(s))), _) if s.code == 403 => {
            DevicePluginConfigs::Unknown(format!(
                "cannot read ConfigMap {config_map}: {}",
                s.message
            ))
        }
        (Err(e), _) => return Err(e.into_client_error("listing the device plugin's ConfigMap")),
        (Ok(_), 0) => DevicePluginConfigs::Unknown(format!("ConfigMap {config_map} not found")),
        (Ok(_), 1) => {
            let (ns, keys) = found.remove(0);
            DevicePluginConfigs::Keys {
                config_map: format!("{ns}/{config_map}"),
                keys,
                default,
            }
        }
        (Ok(_), n) => DevicePluginConfigs::Unknown(format!(
            "{n} ConfigMaps are named {config_map} and the ClusterPolicy does not say its namespace"
        )),
    };
    Ok((view, warnings))
}

/// The Kueue Workload of a pod held by a Kueue gate: the one in its namespace that a
/// pod's owner (or the pod itself, for Kueue's plain-pod integration) owns. One paged list
/// of the namespace's Workloads (the preferred version first); `None` when Kueue is not
/// served, the list is forbidden, or no Workload is the pod's.
pub async fn kueue_workload_of(
    client: &kube::Client,
    namespace: &str,
    owner_uids: &[String],
) -> Result<Option<serde_json::Value>, ClientError> {
    let found = kueue_workloads(client, Some(namespace), |w| {
        owner_references(w).any(|o| {
            o["uid"]
                .as_str()
                .is_some_and(|u| owner_uids.iter().any(|x| x == u))
        })
    })
    .await?;
    Ok(found.and_then(|w| w.into_iter().next()))
}

/// The Kueue Workloads of pods Kueue gates under its pod integrations (plain pods, pod
/// groups, StatefulSets): a Workload the pod owns, per (namespace, pod name) asked for. One
/// paged list in `namespace` or every namespace, keeping only those Workloads. Empty when
/// Kueue is not served or the list is forbidden (the pods still show their gates).
pub async fn kueue_workloads_of_pods(
    client: &kube::Client,
    namespace: Option<&str>,
    pods: &std::collections::BTreeSet<(String, String)>,
) -> Result<std::collections::BTreeMap<(String, String), serde_json::Value>, ClientError> {
    let owned_pods = |w: &serde_json::Value| -> Vec<(String, String)> {
        let namespace = w["metadata"]["namespace"].as_str().unwrap_or_default();
        owner_references(w)
            .filter(|o| o["kind"] == "Pod")
            .filter_map(|o| o["name"].as_str())
            .map(|name| (namespace.to_string(), name.to_string()))
            .filter(|key| pods.contains(key))
            .collect()
    };
    let found = kueue_workloads(client, namespace, |w| !owned_pods(w).is_empty()).await?;
    let mut out = std::collections::BTreeMap::new();
    for w in found.into_iter().flatten() {
        for key in owned_pods(&w) {
            out.entry(key).or_insert_with(|| w.clone());
        }
    }
    Ok(out)
}

fn owner_references(object: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
}

/// The taints the controllers' own objects declare: Karpenter's NodePools (`karpenter.sh/v1`),
/// NFD's NodeFeatureRules (`nfd.k8s-sigs.io/v1alpha1`) and the Node Readiness Controller's
/// NodeReadinessRules (`readiness.node.x-k8s.io/v1alpha1`), one paged list each where served; what may not be listed is said (the owners it would show are then not known).
pub async fn declared_taints(
    client: &kube::Client,
) -> Result<(placekit_core::taint_owners::DeclaredTaints, Vec<String>), ClientError> {
    use placekit_core::taint_owners::DeclaredTaints;
    let mut declared = DeclaredTaints::default();
    let mut unreadable = Vec::new();
    /// Notes what one listed object declares.
    type Add = fn(&mut DeclaredTaints, &serde_json::Value);
    let sources: [(&str, Add, &str); 3] = [
        (
            "/apis/karpenter.sh/v1/nodepools",
            DeclaredTaints::add_nodepool,
            "Karpenter NodePools",
        ),
        (
            "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules",
            DeclaredTaints::add_feature_rule,
            "NodeFeatureRules",
        ),
        (
            "/apis/readiness.node.x-k8s.io/v1alpha1/nodereadinessrules",
            DeclaredTaints::add_readiness_rule,
            "NodeReadinessRules",
        ),
    ];
    for (collection, add, what) in sources {
        let listed =
            for_each_page_if_served(client, collection, 500, |page: Vec<serde_json::Value>| {
                page.iter().for_each(|object| add(&mut declared, object))
            })
            .await?;
        if let Listed::Forbidden(reason) = listed {
            unreadable.push(format!(
                "cannot list {what} ({reason}): the taints they declare for nodes are not known as theirs"
            ));
        }
    }
    Ok((declared, unreadable))
}

/// The Workloads Kueue admitted through topology-aware scheduling with pods on one of
/// `nodes` (the nodes a change taints), read in one paged list of every namespace in the
/// first served version and kept only when on those nodes; `Forbidden` says why they could
/// not be read, `NotServed` that Kueue is not installed.
pub async fn kueue_tas_workloads_on(
    client: &kube::Client,
    nodes: &[String],
) -> Result<(Listed, Vec<placekit_core::kueue_tas::TasWorkload>), ClientError> {
    use placekit_core::kueue_tas::TasWorkload;
    for version in ["v1beta2", "v1beta1"] {
        let mut found = Vec::new();
        let listed = for_each_page_if_served(
            client,
            &format!("/apis/kueue.x-k8s.io/{version}/workloads"),
            500,
            |page: Vec<serde_json::Value>| {
                found.extend(
                    page.iter()
                        .filter_map(TasWorkload::from_workload)
                        .filter(|w| nodes.iter().any(|n| w.on_node(n))),
                );
            },
        )
        .await?;
        if !matches!(listed, Listed::NotServed) {
            return Ok((listed, found));
        }
    }
    Ok((Listed::NotServed, Vec::new()))
}

/// Kueue's Workloads in `namespace` (or all) that `keep` accepts, read page by page in the
/// first served version; `None` when Kueue is not served or the list is forbidden.
async fn kueue_workloads(
    client: &kube::Client,
    namespace: Option<&str>,
    mut keep: impl FnMut(&serde_json::Value) -> bool,
) -> Result<Option<Vec<serde_json::Value>>, ClientError> {
    for version in ["v1beta2", "v1beta1"] {
        let mut found = Vec::new();
        let collection = match namespace {
            Some(ns) => format!("/apis/kueue.x-k8s.io/{version}/namespaces/{ns}/workloads"),
            None => format!("/apis/kueue.x-k8s.io/{version}/workloads"),
        };
        let listed =
            for_each_page_if_served(client, &collection, 500, |page: Vec<serde_json::Value>| {
                found.extend(page.into_iter().filter(|w| keep(w)));
            })
            .await?;
        match listed {
            Listed::Read(_) => return Ok(Some(found)),
            Listed::Forbidden(_) => return Ok(None),
            Listed::NotServed => continue,
        }
    }
    Ok(None)
}

#[cfg(test)]
mod watch_restart_tests {
    use super::WatchRestart;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn a_watch_cut_short_waits_longer_each_time_and_one_that_ran_does_not() {
        let mut restart = WatchRestart::default();
        let mut waited = Vec::new();
        for _ in 0..7 {
            restart.started();
            let before = tokio::time::Instant::now();
            restart.ended().await;
            waited.push(before.elapsed().as_secs());
        }
        assert_eq!(waited, [1, 2, 4, 8, 16, 30, 30]);
        restart.started();
        tokio::time::advance(Duration::from_secs(60)).await;
        let before = tokio::time::Instant::now();
        restart.ended().await;
        assert_eq!(
            before.elapsed(),
            Duration::ZERO,
            "a watch that ran restarts at once"
        );
        restart.started();
        let before = tokio::time::Instant::now();
        restart.ended().await;
        assert_eq!(before.elapsed().as_secs(), 1, "and the pause starts over");
    }
}
