//! What the API server does to a write before it reaches storage, in its order: decode the
//! body (types of the label and annotation maps, `null` strings), default the object (nodes,
//! namespaces, pods, services, taints), validate it. [`crate::store::Store`] calls these;
//! they keep no state.

use serde_json::{Value, json};

use crate::apimachinery::field::go_json;
use crate::apimachinery::{
    is_qualified_name, is_valid_label_value, name_is_dns_label, name_is_dns_subdomain,
};
use crate::patch::PatchType;
use crate::resources::Resource;
use crate::status::{ApiError, FieldError, FieldValue};

pub(crate) fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// How Go's JSON decoder names the type of a value in its errors.
pub(crate) fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// What the API server's decoder does to a create or update body before anything else:
/// refuse what is not an object or has wrongly typed fields, and read `null` strings as
/// empty.
pub(crate) fn decode_body(resource: &Resource, obj: &mut Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request is not a JSON object",
        ));
    }
    if let Some(e) = decode_error(obj) {
        return Err(ApiError::cannot_decode(resource, &e));
    }
    null_strings_to_empty(obj);
    Ok(())
}

/// What decoding the object into its Go type says about a label or annotation map of the
/// wrong type (the only fields whose types the test server checks).
pub(crate) fn decode_error(obj: &Value) -> Option<String> {
    for field in ["labels", "annotations"] {
        match &obj["metadata"][field] {
            Value::Null => {}
            Value::Object(map) => {
                if let Some(bad) = map.values().find(|v| !v.is_string() && !v.is_null()) {
                    return Some(format!(
                        "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type string",
                        go_json_kind(bad)
                    ));
                }
            }
            other => {
                return Some(format!(
                    "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type map[string]string",
                    go_json_kind(other)
                ));
            }
        }
    }
    None
}

/// A `null` in a `map[string]string` decodes as the empty string.
pub(crate) fn null_strings_to_empty(obj: &mut Value) {
    for field in ["labels", "annotations"] {
        if let Some(map) = obj["metadata"][field].as_object_mut() {
            for v in map.values_mut() {
                if v.is_null() {
                    *v = json!("");
                }
            }
        }
    }
}

/// Go's `%v` of a decoded JSON value (`map[k:v]`, `[a b]`, `<nil>`), as the strategic
/// merge patch error quotes the patch.
pub(crate) fn go_sprint(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(go_sprint).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(m) => format!(
            "map[{}]",
            m.iter()
                .map(|(k, v)| format!("{k}:{}", go_sprint(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// The 422 of a patch whose result does not decode: `patch: Invalid value: "<result>"`.
pub(crate) fn patch_invalid(value: String, detail: String) -> ApiError {
    ApiError::invalid_kind(
        "",
        "",
        "",
        vec![FieldError::invalid("patch", &value, detail)],
    )
}

/// The 400 of a patch body the handler cannot decode.
pub(crate) fn patch_decode_error(patch_type: PatchType, body: &Value) -> Option<ApiError> {
    let err = |kind: &str, target: &str| {
        Some(ApiError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {kind} into Go value of type {target}"
        )))
    };
    match (patch_type, body) {
        (PatchType::Json, Value::Array(ops)) => {
            let bad = ops.iter().find(|op| !op.is_object())?;
            err(go_json_kind(bad), "handlers.jsonPatchOp")
        }
        (PatchType::Json, Value::Null) => None,
        (PatchType::Json, other) => err(go_json_kind(other), "[]handlers.jsonPatchOp"),
        (PatchType::Merge, Value::Object(_) | Value::Null) => None,
        (PatchType::Merge, other) => err(go_json_kind(other), "map[string]interface {}"),
        (PatchType::Strategic, _) => None,
    }
}

/// A resource list's numbers as the strings a `resource.Quantity` serialises to.
pub(crate) fn quantities_as_strings(list: &mut Value) {
    if let Some(map) = list.as_object_mut() {
        for value in map.values_mut() {
            if let Value::Number(n) = value {
                *value = Value::String(n.to_string());
            }
        }
    }
}

/// What kube-apiserver adds to a pod on create: `SetDefaults_Pod`/`PodSpec`/`Container`, the
/// DefaultTolerationSeconds and Priority admission plugins, and the pod strategy's
/// `PrepareForCreate` (generation 1, phase Pending, the QoS class).
pub(crate) fn default_new_pod(obj: &mut Value) {
    if obj["metadata"]["generation"].is_null() {
        obj["metadata"]["generation"] = json!(1);
    }
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    for (field, value) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
        ("schedulerName", json!("default-scheduler")),
        ("enableServiceLinks", json!(true)),
        ("priority", json!(0)),
        ("preemptionPolicy", json!("PreemptLowerPriority")),
    ] {
        if spec[field].is_null() {
            spec[field] = value;
        }
    }
    for list in ["initContainers", "containers"] {
        let containers = spec.get_mut(list).and_then(Value::as_array_mut);
        for c in containers.into_iter().flatten() {
            default_container(c);
        }
    }
    // DefaultTolerationSeconds: pods ride out a short node outage instead of being evicted
    // at once, unless they already say how long they tolerate it.
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
        let tolerated = tolerations.iter().any(|t| {
            let effect = t["effect"].as_str().unwrap_or_default();
            let operator = t["operator"].as_str().unwrap_or("Equal");
            let key_matches = match t["key"].as_str().unwrap_or_default() {
                "" => operator == "Exists",
                k => k == key,
            };
            key_matches && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            let mut list = tolerations;
            list.push(
                json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}),
            );
            spec["tolerations"] = Value::Array(list);
        }
    }
    let qos = qos_class(spec);
    // The real server starts every new pod's status afresh; fixtures create pods Running on
    // a node (no kubelet here would), so a given status is kept.
    if obj["status"]["phase"].is_null() {
        obj["status"]["phase"] = json!("Pending");
    }
    if obj["status"]["qosClass"].is_null() {
        obj["status"]["qosClass"] = json!(qos);
    }
    // The pod strategy marks a gated pod so that nobody waits for the scheduler.
    let gated = obj["spec"]["schedulingGates"]
        .as_array()
        .is_some_and(|g| !g.is_empty());
    if gated && obj["status"]["conditions"].is_null() {
        obj["status"]["conditions"] = json!([{
            "type": "PodScheduled", "status": "False", "lastProbeTime": null,
            "lastTransitionTime": now(), "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }]);
    }
}

/// `SetDefaults_Container`: pull policy from the tag, termination message, ports' protocol,
/// and requests defaulted from limits.
pub(crate) fn default_container(c: &mut Value) {
    let image = c["image"].as_str().unwrap_or_default();
    let name_part = image.rsplit('/').next().unwrap_or_default();
    let tag = name_part.split_once(':').map(|(_, t)| t);
    if c["imagePullPolicy"].is_null() {
        let policy = if !image.contains('@') && tag.is_none_or(|t| t == "latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c["imagePullPolicy"] = json!(policy);
    }
    if c["terminationMessagePath"].is_null() {
        c["terminationMessagePath"] = json!("/dev/termination-log");
    }
    if c["terminationMessagePolicy"].is_null() {
        c["terminationMessagePolicy"] = json!("File");
    }
    let ports = c.get_mut("ports").and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten() {
        if port["protocol"].is_null() {
            port["protocol"] = json!("TCP");
        }
    }
    if !c["resources"].is_object() {
        c["resources"] = json!({});
    }
    let resources = &mut c["resources"];
    if let Some(limits) = resources["limits"].as_object().cloned() {
        for (name, quantity) in limits {
            if resources["requests"][&name].is_null() {
                resources["requests"][&name] = quantity;
            }
        }
    }
}

/// `GetPodQOS` over CPU and memory: BestEffort without any request or limit, Guaranteed when
/// every container limits both and requests what it limits, Burstable otherwise.
pub(crate) fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|l| spec[*l].as_array().into_iter().flatten())
        .collect();
    // Quantities may still be numbers here (`cpu: 1`); zero in any spelling is no request.
    let nonzero = |q: &Value| match q {
        Value::String(s) => s.chars().any(|c| c.is_ascii_digit() && c != '0'),
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        _ => false,
    };
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        for r in ["cpu", "memory"] {
            let request = &c["resources"]["requests"][r];
            let limit = &c["resources"]["limits"][r];
            any |= nonzero(request) || nonzero(limit);
            if !nonzero(limit) || (nonzero(request) && request != limit) {
                guaranteed = false;
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// Defaulting and Go's serialisation of the typed object: what the real server's answer
/// holds that the request did not (node status structs, namespace finalizers and phase, the
/// namespace name label) and what it leaves out (empty maps and lists marked `omitempty`).
/// `old` is the stored object on an update, whose status (and for namespaces, finalizers)
/// an update of the main resource cannot change.
/// `SetDefaults_Service` and the service strategy on create: the type, session affinity,
/// port protocols and target ports, the traffic and IP family policies, an empty status.
/// The cluster IP is allocated by the store.
pub(crate) fn default_new_service(obj: &mut Value) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    if spec["type"].as_str().is_none_or(str::is_empty) {
        spec["type"] = json!("ClusterIP");
    }
    let external_name = spec["type"] == "ExternalName";
    if spec["sessionAffinity"].as_str().is_none_or(str::is_empty) {
        spec["sessionAffinity"] = json!("None");
    }
    for port in spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if port["protocol"].as_str().is_none_or(str::is_empty) {
            port["protocol"] = json!("TCP");
        }
        if port["targetPort"].is_null() || port["targetPort"] == json!(0) {
            port["targetPort"] = port["port"].clone();
        }
    }
    if !external_name {
        if spec["internalTrafficPolicy"].is_null() {
            spec["internalTrafficPolicy"] = json!("Cluster");
        }
        if spec["ipFamilies"].is_null() {
            spec["ipFamilies"] = json!(["IPv4"]);
        }
        if spec["ipFamilyPolicy"].is_null() {
            spec["ipFamilyPolicy"] = json!("SingleStack");
        }
    }
    obj["status"] = json!({"loadBalancer": {}});
}

/// A node's defaults and its fields as Go encodes them (status, nodeInfo, taints).
fn default_node(obj: &mut Value) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    if !obj["status"].is_object() {
        obj["status"] = json!({});
    }
    let status = &mut obj["status"];
    if !status["daemonEndpoints"].is_object() {
        status["daemonEndpoints"] = json!({});
    }
    if !status["daemonEndpoints"]["kubeletEndpoint"].is_object() {
        status["daemonEndpoints"]["kubeletEndpoint"] = json!({});
    }
    if status["daemonEndpoints"]["kubeletEndpoint"]["Port"].is_null() {
        status["daemonEndpoints"]["kubeletEndpoint"]["Port"] = json!(0);
    }
    for field in ["capacity", "allocatable"] {
        if let Some(list) = status.get_mut(field) {
            quantities_as_strings(list);
        }
    }
    // `SetDefaults_NodeStatus`: allocatable defaults to the capacity.
    if status["allocatable"].is_null() && status["capacity"].is_object() {
        status["allocatable"] = status["capacity"].clone();
    }
    if !status["nodeInfo"].is_object() {
        status["nodeInfo"] = json!({});
    }
    for field in [
        "machineID",
        "systemUUID",
        "bootID",
        "kernelVersion",
        "osImage",
        "containerRuntimeVersion",
        "kubeletVersion",
        "kubeProxyVersion",
        "operatingSystem",
        "architecture",
    ] {
        if status["nodeInfo"][field].is_null() {
            status["nodeInfo"][field] = json!("");
        }
    }
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conditions.iter_mut().filter(|c| c.is_object()) {
            for t in ["lastHeartbeatTime", "lastTransitionTime"] {
                if c.get(t).is_none() {
                    c[t] = Value::Null;
                }
            }
        }
    }
    // Go's encoding of a Taint: an empty value is omitted and timeAdded is a
    // metav1.Time, written in UTC to the second.
    let taints = obj
        .get_mut("spec")
        .and_then(|spec| spec.get_mut("taints"))
        .and_then(Value::as_array_mut);
    for taint in taints.into_iter().flatten() {
        let Some(t) = taint.as_object_mut() else {
            continue;
        };
        if t.get("value").is_some_and(|v| v == "" || v.is_null()) {
            t.remove("value");
        }
        match t
            .get("timeAdded")
            .map(|v| v.as_str().map(str::parse::<jiff::Timestamp>))
        {
            Some(Some(Ok(at))) => {
                let seconds = jiff::Timestamp::from_second(at.as_second()).unwrap_or(at);
                t.insert(
                    "timeAdded".into(),
                    json!(seconds.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
                );
            }
            Some(None) => {
                t.remove("timeAdded");
            }
            _ => {}
        }
    }
    if obj["spec"]["taints"]
        .as_array()
        .is_some_and(|t| t.is_empty())
        && let Some(spec) = obj["spec"].as_object_mut()
    {
        spec.remove("taints");
    }
}

/// A namespace's name label, and its finalizers: set on create, kept from the stored
/// object on update.
fn default_namespace(obj: &mut Value, old: Option<&Value>) {
    let name = obj["metadata"]["name"].clone();
    obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    match old {
        Some(old) => {
            obj["spec"]["finalizers"] = old["spec"]["finalizers"].clone();
            if obj["spec"]["finalizers"].is_null()
                && let Some(spec) = obj["spec"].as_object_mut()
            {
                spec.remove("finalizers");
            }
        }
        None => {
            obj["status"] = json!({"phase": "Active"});
            let finalizers = &mut obj["spec"]["finalizers"];
            if !finalizers.is_array() {
                *finalizers = json!([]);
            }
            let list = finalizers.as_array_mut().expect("array");
            if !list.iter().any(|f| f == "kubernetes") {
                list.push(json!("kubernetes"));
            }
        }
    }
}

pub(crate) fn default_object(resource: &Resource, obj: &mut Value, old: Option<&Value>) {
    let kind = resource.kind;
    if let Some(old) = old
        && matches!(kind, "Node" | "Pod" | "Namespace")
    {
        match old.get("status") {
            Some(status) => obj["status"] = status.clone(),
            None => {
                if let Some(m) = obj.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    match kind {
        "Service" if old.is_none() => default_new_service(obj),
        "Node" => default_node(obj),
        "Namespace" => default_namespace(obj, old),
        "Pod" => {
            if old.is_none() {
                default_new_pod(obj);
            }
            // Quantities are strings on the wire: `nvidia.com/gpu: 4` is read as "4".
            // (`get_mut`, not indexing: indexing would add the missing fields as null.)
            for containers in ["containers", "initContainers"] {
                let list = obj
                    .get_mut("spec")
                    .and_then(|spec| spec.get_mut(containers))
                    .and_then(Value::as_array_mut);
                for c in list.into_iter().flatten() {
                    for field in ["requests", "limits"] {
                        if let Some(resources) =
                            c.get_mut("resources").and_then(|r| r.get_mut(field))
                        {
                            quantities_as_strings(resources);
                        }
                    }
                }
            }
        }
        "ConfigMap" => {
            for field in ["data", "binaryData"] {
                if obj[field].as_object().is_some_and(|m| m.is_empty())
                    && let Some(m) = obj.as_object_mut()
                {
                    m.remove(field);
                }
            }
        }
        _ => {}
    }
    if let Some(meta) = obj["metadata"].as_object_mut() {
        for field in ["labels", "annotations"] {
            if meta
                .get(field)
                .is_some_and(|v| v.is_null() || v.as_object().is_some_and(|m| m.is_empty()))
            {
                meta.remove(field);
            }
        }
    }
}

/// A taint as the duplicate-taint error prints it: Go's JSON of the internal type, whose
/// fields have no JSON names.
pub(crate) fn render_taint(t: &Value) -> String {
    let s = |k: &str| go_json(t[k].as_str().unwrap_or_default());
    let time_added = match t["timeAdded"].as_str() {
        Some(time) => go_json(time),
        None => "null".into(),
    };
    format!(
        "{{\"Key\":{},\"Value\":{},\"Effect\":{},\"TimeAdded\":{time_added}}}",
        s("key"),
        s("value"),
        s("effect")
    )
}

/// A resource quantity in billionths, for comparing requests and limits (`1`, `500m`,
/// `2Gi`, `1e3`).
pub(crate) fn parse_quantity(q: &Value) -> Option<i128> {
    let text = match q {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let (negative, number) = match number.strip_prefix('-') {
        Some(n) => (true, n),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let digits = format!("{int}{frac}");
    let mut value: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let mut exp10: i32 = -(frac.len() as i32) + 9;
    let mut binary: u32 = 0;
    match suffix {
        "" => {}
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        "Ki" => binary = 10,
        "Mi" => binary = 20,
        "Gi" => binary = 30,
        "Ti" => binary = 40,
        "Pi" => binary = 50,
        "Ei" => binary = 60,
        s if s.starts_with(['e', 'E']) => exp10 += s[1..].parse::<i32>().ok()?,
        _ => return None,
    }
    value = value.checked_shl(binary)?;
    while exp10 > 0 {
        value = value.checked_mul(10)?;
        exp10 -= 1;
    }
    while exp10 < 0 {
        value /= 10;
        exp10 += 1;
    }
    Some(if negative { -value } else { value })
}

/// `helper.IsOvercommitAllowed`: native resources (no domain, or a `kubernetes.io` one)
/// other than huge pages may request less than their limit; extended resources such as
/// `nvidia.com/gpu` may not.
pub(crate) fn overcommit_allowed(resource_name: &str) -> bool {
    let native = match resource_name.split_once('/') {
        None => true,
        Some((domain, _)) => domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"),
    };
    native && !resource_name.starts_with("hugepages-")
}

/// `validateResourceRequirements` for the requests and limits of one container.
/// The parts of `ValidatePodSpec` a hand-written or generated pod gets wrong: init
/// containers (their names unique among all containers), then app containers — name, image,
/// ports, resources, pull policy — then the restart and DNS policies.
pub(crate) fn validate_pod_spec(spec: &Value, errs: &mut Vec<FieldError>) {
    let list = |field: &str| {
        spec[field]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let (init, app) = (list("initContainers"), list("containers"));
    let app_names: Vec<&str> = app.iter().filter_map(|c| c["name"].as_str()).collect();
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in init.iter().enumerate() {
        let name = c["name"].as_str().unwrap_or_default();
        let taken = app_names.contains(&name) || seen.contains(&name);
        validate_container(c, &format!("spec.initContainers[{i}]"), taken, errs);
        seen.push(name);
    }
    if app.is_empty() {
        errs.push(FieldError::required("spec.containers", ""));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in app.iter().enumerate() {
        let name = c["name"].as_str().unwrap_or_default();
        validate_container(
            c,
            &format!("spec.containers[{i}]"),
            seen.contains(&name),
            errs,
        );
        seen.push(name);
    }
    let policy = |field: &str, supported: &[&str], errs: &mut Vec<FieldError>| {
        if let Some(value) = spec[field].as_str()
            && !supported.contains(&value)
        {
            errs.push(FieldError::not_supported(
                format!("spec.{field}"),
                FieldValue::Str(value.to_string()),
                supported,
            ));
        }
    };
    policy("restartPolicy", &["Always", "OnFailure", "Never"], errs);
    policy(
        "dnsPolicy",
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        errs,
    );
}

/// One container, as `validateContainerCommon` checks it, then whether its name is
/// `taken` by another container.
pub(crate) fn validate_container(c: &Value, path: &str, taken: bool, errs: &mut Vec<FieldError>) {
    let name = c["name"].as_str().unwrap_or_default();
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    } else {
        for msg in name_is_dns_label(name, false) {
            errs.push(FieldError::invalid(format!("{path}.name"), name, msg));
        }
    }
    let image = c["image"].as_str().unwrap_or_default();
    if image.is_empty() {
        errs.push(FieldError::required(format!("{path}.image"), ""));
    } else if image.trim() != image {
        errs.push(FieldError::invalid(
            format!("{path}.image"),
            image,
            "must not have leading or trailing whitespace",
        ));
    }
    for (i, port) in c["ports"].as_array().into_iter().flatten().enumerate() {
        let at = format!("{path}.ports[{i}]");
        match port["containerPort"].as_i64().unwrap_or(0) {
            0 => errs.push(FieldError::required(format!("{at}.containerPort"), "")),
            p if !(1..=65535).contains(&p) => errs.push(FieldError::invalid_rendered(
                format!("{at}.containerPort"),
                p.to_string(),
                "must be between 1 and 65535, inclusive",
            )),
            _ => {}
        }
        if let Some(protocol) = port["protocol"].as_str()
            && !["SCTP", "TCP", "UDP"].contains(&protocol)
        {
            errs.push(FieldError::not_supported(
                format!("{at}.protocol"),
                FieldValue::Str(protocol.to_string()),
                &["SCTP", "TCP", "UDP"],
            ));
        }
    }
    validate_container_resources(c, path, errs);
    if let Some(policy) = c["imagePullPolicy"].as_str()
        && !["Always", "IfNotPresent", "Never"].contains(&policy)
    {
        errs.push(FieldError::not_supported(
            format!("{path}.imagePullPolicy"),
            FieldValue::Str(policy.to_string()),
            &["Always", "IfNotPresent", "Never"],
        ));
    }
    // Uniqueness is checked after the rest of the container.
    if taken {
        errs.push(FieldError::duplicate(
            format!("{path}.name"),
            crate::apimachinery::field::go_quote(name),
            "",
        ));
    }
}

pub(crate) fn validate_container_resources(
    container: &Value,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    let resources = &container["resources"];
    let limits = resources["limits"].as_object();
    let Some(requests) = resources["requests"].as_object() else {
        return;
    };
    let shown = |q: &Value| match q {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for (name, quantity) in requests {
        match limits.and_then(|l| l.get(name)) {
            Some(limit) => {
                let (q, l) = (parse_quantity(quantity), parse_quantity(limit));
                if !overcommit_allowed(name) && q != l {
                    errs.push(FieldError::invalid(
                        format!("{path}.resources.requests"),
                        &shown(quantity),
                        format!("must be equal to {name} limit of {}", shown(limit)),
                    ));
                } else if let (Some(q), Some(l)) = (q, l)
                    && q > l
                {
                    errs.push(FieldError::invalid(
                        format!("{path}.resources.requests"),
                        &shown(quantity),
                        format!(
                            "must be less than or equal to {name} limit of {}",
                            shown(limit)
                        ),
                    ));
                }
            }
            None if !overcommit_allowed(name) => errs.push(FieldError::required(
                format!("{path}.resources.limits"),
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
}

/// Field errors the API server raises for this object, in its order: metadata (generated
/// name on create, name, labels, annotations), then node taints and pod container resources.
/// Errors are reported once even where the real server's create and update validations
/// overlap.
pub fn validate(resource: &Resource, obj: &Value, create: bool) -> Result<(), Vec<FieldError>> {
    let mut errs = Vec::new();
    let meta = &obj["metadata"];
    let name_fn = if resource.kind == "Namespace" {
        name_is_dns_label
    } else {
        name_is_dns_subdomain
    };
    if create && let Some(prefix) = meta["generateName"].as_str().filter(|p| !p.is_empty()) {
        for msg in name_fn(prefix, true) {
            errs.push(FieldError::invalid("metadata.generateName", prefix, msg));
        }
    }
    let name = meta["name"].as_str().unwrap_or_default();
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_fn(name, false) {
            errs.push(FieldError::invalid("metadata.name", name, msg));
        }
    }
    if resource.kind == "Service" {
        let spec = &obj["spec"];
        let needs_ports = spec["type"] != "ExternalName" && spec["clusterIP"] != "None";
        let ports = spec["ports"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if needs_ports && ports.is_empty() {
            errs.push(FieldError::required("spec.ports", ""));
        }
        // Ports of a multi-port service are told apart by name.
        if ports.len() > 1 {
            for (i, port) in ports.iter().enumerate() {
                if port["name"].as_str().is_none_or(str::is_empty) {
                    errs.push(FieldError::required(format!("spec.ports[{i}].name"), ""));
                }
            }
        }
    }
    if let Some(labels) = meta["labels"].as_object() {
        for (k, v) in labels {
            for msg in is_qualified_name(k) {
                errs.push(FieldError::invalid("metadata.labels", k, msg));
            }
            let v = v.as_str().unwrap_or_default();
            for msg in is_valid_label_value(v) {
                errs.push(FieldError::invalid("metadata.labels", v, msg));
            }
        }
    }
    if let Some(annotations) = meta["annotations"].as_object() {
        for k in annotations.keys() {
            // "QualifiedName except that case doesn't matter".
            for msg in is_qualified_name(&k.to_lowercase()) {
                errs.push(FieldError::invalid("metadata.annotations", k, msg));
            }
        }
    }
    if resource.kind == "Node"
        && let Some(taints) = obj["spec"]["taints"].as_array()
    {
        // `ValidateNode` passes `metadata` as the parent path of the taints.
        let mut seen: Vec<(String, String)> = Vec::new();
        for (i, t) in taints.iter().enumerate() {
            let key = t["key"].as_str().unwrap_or_default();
            let value = t["value"].as_str().unwrap_or_default();
            let effect = t["effect"].as_str().unwrap_or_default();
            for msg in is_qualified_name(key) {
                errs.push(FieldError::invalid(
                    format!("metadata.taints[{i}].key"),
                    key,
                    msg,
                ));
            }
            let value_errs = is_valid_label_value(value);
            if !value_errs.is_empty() {
                errs.push(FieldError::invalid(
                    format!("metadata.taints[{i}].value"),
                    value,
                    value_errs.join(";"),
                ));
            }
            match effect {
                "NoSchedule" | "PreferNoSchedule" | "NoExecute" => {}
                "" => errs.push(FieldError::required(
                    format!("metadata.taints[{i}].effect"),
                    "",
                )),
                other => errs.push(FieldError::not_supported(
                    format!("metadata.taints[{i}].effect"),
                    FieldValue::Str(other.into()),
                    &["NoSchedule", "PreferNoSchedule", "NoExecute"],
                )),
            }
            let slot = (key.to_string(), effect.to_string());
            if seen.contains(&slot) {
                errs.push(FieldError::duplicate(
                    format!("metadata.taints[{i}]"),
                    render_taint(t),
                    "taints must be unique by key and effect pair",
                ));
                continue;
            }
            seen.push(slot);
        }
    }
    if resource.kind == "Pod" {
        validate_pod_spec(&obj["spec"], &mut errs);
    }
    let mut unique: Vec<FieldError> = Vec::new();
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    if unique.is_empty() {
        Ok(())
    } else {
        Err(unique)
    }
}
