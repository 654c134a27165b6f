//! Lists of pods and nodes in protobuf, for a client that asks for
//! `application/vnd.kubernetes.protobuf` first: `k8s\0`, a `runtime.Unknown` holding the
//! `PodList`/`NodeList` message, each item encoded from the JSON the store keeps through the
//! field tables of [`objects`](super::objects) (the numbers of k8s.io/api's
//! `generated.proto`). A field the tables do not list is left out of the answer: the test
//! server's protobuf lists hold what placekit and kubectl read of pods and nodes, and the
//! differential tests compare both encodings on what the read model keeps.

use serde_json::Value;

use super::MAGIC;
use super::objects::{Field, Msg, NODE, POD, Ty};

/// Kubernetes' protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Whether a request's `Accept` puts protobuf first (kubectl's and client-go's typed
/// clients, placekit's lists).
pub fn wants_protobuf(accept: Option<&str>) -> bool {
    accept
        .and_then(|a| a.split(',').next())
        .is_some_and(|first| first.split(';').next().unwrap_or_default().trim() == MEDIA_TYPE)
}

/// The item message of a kind the test server lists in protobuf.
fn item_message(kind: &str) -> Option<&'static Msg> {
    match kind {
        "Pod" => Some(&POD),
        "Node" => Some(&NODE),
        _ => None,
    }
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
    varint(number << 3 | 2, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

fn varint_field(number: u64, v: u64, out: &mut Vec<u8>) {
    varint(number << 3, out);
    varint(v, out);
}

/// A message from its JSON, the fields in number order as Go writes them.
pub(super) fn encode(msg: &Msg, value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    for field in msg.fields {
        if let Ty::Inline(inner) = field.ty {
            let bytes = encode(inner, value);
            if !bytes.is_empty() {
                bytes_field(field.number, &bytes, &mut out);
            }
            continue;
        }
        let Some(v) = value.get(field.name).filter(|v| !v.is_null()) else {
            continue;
        };
        match (field.ty, v) {
            (Ty::MapStr | Ty::MapBytes | Ty::MapQuantity, Value::Object(entries)) => {
                for (key, val) in entries {
                    let mut entry = Vec::new();
                    bytes_field(1, key.as_bytes(), &mut entry);
                    let text = val.as_str().unwrap_or_default();
                    match field.ty {
                        Ty::MapQuantity => {
                            let mut quantity = Vec::new();
                            bytes_field(1, text.as_bytes(), &mut quantity);
                            bytes_field(2, &quantity, &mut entry);
                        }
                        Ty::MapBytes => {
                            use base64::Engine as _;
                            let raw = base64::engine::general_purpose::STANDARD
                                .decode(text)
                                .unwrap_or_default();
                            bytes_field(2, &raw, &mut entry);
                        }
                        _ => bytes_field(2, text.as_bytes(), &mut entry),
                    }
                    bytes_field(field.number, &entry, &mut out);
                }
            }
            (_, Value::Array(items)) if field.repeated => {
                for item in items {
                    encode_one(field, item, &mut out);
                }
            }
            _ => encode_one(field, v, &mut out),
        }
    }
    out
}

fn encode_one(field: &Field, v: &Value, out: &mut Vec<u8>) {
    match field.ty {
        Ty::Str => bytes_field(field.number, v.as_str().unwrap_or_default().as_bytes(), out),
        // Two's complement: a negative int is ten bytes on the wire, as Go writes it.
        Ty::Int => varint_field(field.number, v.as_i64().unwrap_or_default() as u64, out),
        Ty::Bool => varint_field(
            field.number,
            u64::from(v.as_bool().unwrap_or_default()),
            out,
        ),
        Ty::Msg(m) => bytes_field(field.number, &encode(m, v), out),
        Ty::IntOrString => {
            let mut inner = Vec::new();
            match v {
                Value::String(s) => {
                    varint_field(1, 1, &mut inner);
                    varint_field(2, 0, &mut inner);
                    bytes_field(3, s.as_bytes(), &mut inner);
                }
                other => {
                    varint_field(1, 0, &mut inner);
                    varint_field(2, other.as_i64().unwrap_or_default() as u64, &mut inner);
                    bytes_field(3, b"", &mut inner);
                }
            }
            bytes_field(field.number, &inner, out);
        }
        Ty::Time => {
            let seconds = v
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map_or(0, |t| t.as_second());
            let mut inner = Vec::new();
            varint_field(1, seconds as u64, &mut inner);
            varint_field(2, 0, &mut inner);
            bytes_field(field.number, &inner, out);
        }
        Ty::MapStr | Ty::MapBytes | Ty::MapQuantity | Ty::Inline(_) => {}
    }
}

/// A list page of `kind` (`Pod`, `Node`) in protobuf, `None` for a kind the test server
/// lists only in JSON: `items` are the store's JSON objects, `metadata` the list's
/// (resourceVersion, continue, remainingItemCount).
pub fn list(kind: &str, metadata: &Value, items: &[bytes::Bytes]) -> Option<Vec<u8>> {
    let item = item_message(kind)?;
    let list_kind = format!("{kind}List");
    let mut raw = Vec::new();
    let mut meta = Vec::new();
    bytes_field(1, b"", &mut meta);
    let text = |k: &str| metadata[k].as_str().unwrap_or_default().to_string();
    bytes_field(2, text("resourceVersion").as_bytes(), &mut meta);
    bytes_field(3, text("continue").as_bytes(), &mut meta);
    if let Some(n) = metadata["remainingItemCount"].as_u64() {
        varint_field(4, n, &mut meta);
    }
    bytes_field(1, &meta, &mut raw);
    for bytes in items {
        let object: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        bytes_field(2, &encode(item, &object), &mut raw);
    }
    let mut type_meta = Vec::new();
    bytes_field(1, b"v1", &mut type_meta);
    bytes_field(2, list_kind.as_bytes(), &mut type_meta);
    let mut unknown = Vec::new();
    bytes_field(1, &type_meta, &mut unknown);
    bytes_field(2, &raw, &mut unknown);
    bytes_field(3, b"", &mut unknown);
    bytes_field(4, b"", &mut unknown);
    Some([MAGIC, &unknown].concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the server encodes, its own request decoder reads back as the same JSON.
    #[test]
    fn a_pod_encodes_and_decodes_to_the_same_json() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ml", "labels": {"a": "b"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]},
          "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "image": "i",
              "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
              {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a"]}]}]}}},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]},
          "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        let raw = encode(&POD, &pod);
        let meta = [&[0x0a, 2][..], b"v1", &[0x12, 3], b"Pod"].concat();
        let mut body = MAGIC.to_vec();
        bytes_field(1, &meta, &mut body);
        bytes_field(2, &raw, &mut body);
        let mut decoded = super::super::objects::decode_object(&body).unwrap();
        decoded.as_object_mut().unwrap().remove("apiVersion");
        decoded.as_object_mut().unwrap().remove("kind");
        assert_eq!(decoded, pod);
    }

    #[test]
    fn protobuf_is_what_the_accept_header_puts_first() {
        assert!(wants_protobuf(Some(
            "application/vnd.kubernetes.protobuf, application/json"
        )));
        assert!(!wants_protobuf(Some(
            "application/json, application/vnd.kubernetes.protobuf"
        )));
        assert!(!wants_protobuf(None));
    }
}
