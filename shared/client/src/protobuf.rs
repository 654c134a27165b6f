//! The high-volume lists (pods, nodes) read in Kubernetes' protobuf encoding, as client-go's
//! informers read them: a third of JSON's bytes, less of the server's time encoding them,
//! and decoded straight into the read model's own types.
//!
//! An answer is `k8s\0` and a `runtime.Unknown` (its type, and the list message as bytes),
//! decoded in one place here; each item is handed to the read model's `Deserialize` through
//! [`de`], driven by the field numbers of [`schema`]. No Kubernetes object is built whole:
//! what the read model does not keep is skipped on the wire.
//!
//! Why not kube-rs's `k8s-pb` generated types: decoding into them builds every field of
//! every pod (env, volumes, probes, managedFields) as owned strings and vectors, then a
//! second copy into the read model; a 10,000-pod page would cost what the JSON page costs.
//! k8s-pb stays the source of the facts: the tests check every field number of [`schema`]
//! against its messages, and decode pages k8s-pb encoded. `prost` reads the wire format.
//!
//! JSON stays the answer to everything else, and the fallback: a server (or proxy) that
//! answers a protobuf request in JSON is read as JSON, by its `Content-Type`.

pub(crate) mod de;
pub(crate) mod schema;
#[cfg(test)]
mod tests;

pub use de::DecodeError;
use de::{MessageDe, Wire, next_field, string_field};

/// Kubernetes' protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What a list of pods or nodes asks for: protobuf, else JSON (kubectl's own `Accept`).
pub const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// The magic number before every protobuf answer.
const MAGIC: &[u8] = b"k8s\0";

/// Whether a collection is listed in protobuf: the core group's pods (all, or one
/// namespace's) and nodes. Custom resources have no protobuf encoding; the rest are small.
pub fn lists_in_protobuf(collection: &str) -> bool {
    let path = collection.split('?').next().unwrap_or_default();
    match path
        .trim_end_matches('/')
        .split('/')
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["", "api", "v1", "nodes" | "pods"] => true,
        ["", "api", "v1", "namespaces", ns, "pods"] => !ns.is_empty(),
        _ => false,
    }
}

/// One page of a list.
#[derive(Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// The continue token; `None` on the last page.
    pub continue_token: Option<String>,
    pub resource_version: String,
}

/// The type and the message of an envelope.
fn envelope(body: &[u8]) -> Result<(&str, &[u8]), DecodeError> {
    let mut unknown = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| DecodeError("the answer does not start with k8s\\0".into()))?;
    let (mut kind, mut raw) = ("", &[][..]);
    while !unknown.is_empty() {
        match next_field(&mut unknown)? {
            // runtime.TypeMeta: 1 apiVersion, 2 kind.
            (1, Wire::Bytes(type_meta)) => kind = string_field(type_meta, 2)?,
            (2, Wire::Bytes(bytes)) => raw = bytes,
            (3, Wire::Bytes(encoding)) if !encoding.is_empty() => {
                return Err(DecodeError(format!(
                    "the answer's content encoding {:?} is not one placekit reads",
                    String::from_utf8_lossy(encoding)
                )));
            }
            _ => {}
        }
    }
    Ok((kind, raw))
}

/// Decodes a list page (`PodList`, `NodeList`), each item into `T`.
pub fn decode_page<'de, T: serde::Deserialize<'de>>(
    body: &'de [u8],
) -> Result<Page<T>, DecodeError> {
    let (kind, mut list) = envelope(body)?;
    let item = match kind {
        "PodList" => &schema::POD,
        "NodeList" => &schema::NODE,
        other => {
            return Err(DecodeError(format!(
                "the answer is a {other:?}, not a list placekit reads in protobuf"
            )));
        }
    };
    let mut page = Page {
        items: Vec::new(),
        continue_token: None,
        resource_version: String::new(),
    };
    while !list.is_empty() {
        match next_field(&mut list)? {
            // ListMeta: 2 resourceVersion, 3 continue.
            (1, Wire::Bytes(meta)) => {
                page.resource_version = string_field(meta, 2)?.to_string();
                page.continue_token =
                    Some(string_field(meta, 3)?.to_string()).filter(|c| !c.is_empty());
            }
            (2, Wire::Bytes(bytes)) => {
                let decoded = T::deserialize(MessageDe {
                    message: item,
                    bytes,
                })
                .map_err(|e| {
                    DecodeError(format!("{kind} item {}: {}", page.items.len() + 1, e.0))
                })?;
                page.items.push(decoded);
            }
            _ => {}
        }
    }
    Ok(page)
}

/// The continue token of any protobuf list page, without decoding its items (what a
/// benchmark's floor reads).
pub fn continue_token(body: &[u8]) -> Result<Option<String>, DecodeError> {
    let (_, mut list) = envelope(body)?;
    while !list.is_empty() {
        if let (1, Wire::Bytes(meta)) = next_field(&mut list)? {
            return Ok(Some(string_field(meta, 3)?.to_string()).filter(|c| !c.is_empty()));
        }
    }
    Ok(None)
}

/// How far into a page's body its continue token is looked for: kube-apiserver writes the
/// envelope's type and the list's metadata first, a few hundred bytes; a prefix that holds
/// no token by then is not its layout, and the whole body decides.
pub const TOKEN_PREFIX_BYTES: usize = 64 * 1024;

/// How many items a protobuf list page holds, counted from its fields without decoding one.
pub fn count_items(body: &[u8]) -> Result<usize, DecodeError> {
    let (_, mut list) = envelope(body)?;
    let mut items = 0;
    while !list.is_empty() {
        if let (2, _) = next_field(&mut list)? {
            items += 1;
        }
    }
    Ok(items)
}

/// The continue token of a protobuf list page from the first bytes of its body, as soon as
/// they hold the list's metadata (Go writes it before the items): `None` while more bytes
/// are needed, or when the prefix is not what kube-apiserver writes (the whole body then
/// decides). The next page can be asked for while this one is still arriving.
pub fn continue_token_of_prefix(prefix: &[u8]) -> Option<Option<String>> {
    /// A field's number and its length-delimited bytes' start and length, if whole.
    fn length_delimited(buf: &[u8]) -> Option<(u32, usize, usize)> {
        let mut rest = buf;
        let (number, wire_type) = prost::encoding::decode_key(&mut rest).ok()?;
        if wire_type != prost::encoding::WireType::LengthDelimited {
            return None;
        }
        let len = usize::try_from(prost::encoding::decode_varint(&mut rest).ok()?).ok()?;
        Some((number, buf.len() - rest.len(), len))
    }
    let mut unknown = prefix.strip_prefix(MAGIC)?;
    loop {
        let (number, start, len) = length_delimited(unknown)?;
        if number == 2 {
            // The list message: its first field is the ListMeta, whole or not yet.
            let list = &unknown[start..];
            let (number, start, len) = length_delimited(list)?;
            if number != 1 {
                return Some(None);
            }
            let meta = list.get(start..start + len)?;
            let token = string_field(meta, 3).ok()?;
            return Some(Some(token.to_string()).filter(|t| !t.is_empty()));
        }
        unknown = unknown.get(start + len..)?;
    }
}

/// An error answered in protobuf: its `Status`.
pub fn decode_status(body: &[u8]) -> Result<kube::core::Status, DecodeError> {
    #[derive(serde::Deserialize)]
    struct Status {
        #[serde(default)]
        status: String,
        #[serde(default)]
        message: String,
        #[serde(default)]
        reason: String,
        #[serde(default)]
        code: u16,
    }
    let (kind, raw) = envelope(body)?;
    if kind != "Status" {
        return Err(DecodeError(format!("an error answered as a {kind:?}")));
    }
    let status = <Status as serde::Deserialize>::deserialize(MessageDe {
        message: &schema::STATUS,
        bytes: raw,
    })?;
    let mut out = if status.status == "Success" {
        kube::core::Status::success()
    } else {
        kube::core::Status::failure(&status.message, &status.reason)
    };
    out = out.with_code(status.code);
    Ok(out)
}
