//! Just enough of the Kubernetes protobuf encoding to read what kubectl sends only as
//! protobuf: `SelfSubjectAccessReview` (`kubectl auth can-i`) here, the objects of its
//! generators (`kubectl create <kind>`, `kubectl run`) in [`objects`]. Answers are JSON,
//! which kubectl accepts (it asks for `application/vnd.kubernetes.protobuf,application/json`),
//! except lists of pods and nodes asked for in protobuf first: [`lists`] encodes those, as
//! client-go's informers (and placekit) read them from kube-apiserver.

pub mod lists;
pub mod objects;

/// The magic prefix of Kubernetes protobuf envelopes.
const MAGIC: &[u8] = b"k8s\0";

fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(out);
        }
    }
    None
}

/// The length-delimited fields of a message, as (field number, bytes); other wire types are
/// skipped.
fn fields(buf: &[u8]) -> Option<Vec<(u64, &[u8])>> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                varint(buf, &mut pos)?;
            }
            1 => pos += 8,
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                out.push((field, buf.get(pos..end)?));
                pos = end;
            }
            5 => pos += 4,
            _ => return None,
        }
    }
    Some(out)
}

fn field(buf: &[u8], number: u64) -> Option<&[u8]> {
    fields(buf)?
        .into_iter()
        .find(|(n, _)| *n == number)
        .map(|(_, b)| b)
}

fn string(buf: &[u8], number: u64) -> String {
    field(buf, number)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default()
}

/// The resource attributes of a protobuf `SelfSubjectAccessReview`, as the JSON the server
/// works with: `{"spec":{"resourceAttributes":{...}}}`.
pub fn decode_self_subject_access_review(body: &[u8]) -> Option<serde_json::Value> {
    let envelope = body.strip_prefix(MAGIC)?;
    // runtime.Unknown: 1 typeMeta, 2 raw.
    let raw = field(envelope, 2)?;
    // SelfSubjectAccessReview: 2 spec; spec: 1 resourceAttributes.
    let spec = field(raw, 2)?;
    let attrs = field(spec, 1).unwrap_or_default();
    // ResourceAttributes: 1 namespace, 2 verb, 3 group, 4 version, 5 resource, 6 subresource, 7 name.
    Some(serde_json::json!({
        "spec": {"resourceAttributes": {
            "namespace": string(attrs, 1),
            "verb": string(attrs, 2),
            "group": string(attrs, 3),
            "version": string(attrs, 4),
            "resource": string(attrs, 5),
            "subresource": string(attrs, 6),
            "name": string(attrs, 7),
        }}
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(field: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(field << 3) | 2, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn decodes_what_kubectl_sends() {
        let attrs = [ld(2, b"patch"), ld(5, b"nodes")].concat();
        let spec = ld(1, &attrs);
        let review = [ld(1, b""), ld(2, &spec)].concat();
        let envelope = [
            ld(
                1,
                &[
                    ld(1, b"authorization.k8s.io/v1"),
                    ld(2, b"SelfSubjectAccessReview"),
                ]
                .concat(),
            ),
            ld(2, &review),
        ]
        .concat();
        let body = [MAGIC, &envelope].concat();
        let v = decode_self_subject_access_review(&body).unwrap();
        assert_eq!(v["spec"]["resourceAttributes"]["verb"], "patch");
        assert_eq!(v["spec"]["resourceAttributes"]["resource"], "nodes");
    }

    #[test]
    fn garbage_is_none_not_a_panic() {
        for body in [
            &b""[..],
            b"k8s\0",
            b"k8s\0\xff\xff\xff",
            b"{}",
            b"k8s\0\x12\x7f",
        ] {
            assert!(decode_self_subject_access_review(body).is_none() || body.len() > 4);
        }
    }
}
