//! A serde `Deserializer` over one protobuf message, driven by its [`schema`](super::schema):
//! the read model's own `Deserialize` types (the same ones the JSON pages feed) take what
//! they declare, field by field, and what they do not ask for is skipped on the wire
//! without being decoded. Strings are borrowed from the page, so only the kept ones are
//! copied.
//!
//! It presents a message as JSON would: names from the schema, zero scalars of `omitempty`
//! fields left out, the occurrences of a repeated field (wherever they are in the message)
//! as one list, map entries as one map, a `Quantity` as its string, a `Time` as RFC 3339.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Visitor};
use serde::forward_to_deserialize_any;

use super::schema::{Field, Kind, Message, Zero};

/// Why a page could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub(crate) String);

impl de::Error for DecodeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        DecodeError(msg.to_string())
    }
}

/// One field's value as read off the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire<'de> {
    Varint(u64),
    Bytes(&'de [u8]),
    /// fixed32 or fixed64: nothing Kubernetes' messages use where the schema looks.
    Fixed,
}

impl Wire<'_> {
    fn is_zero(&self) -> bool {
        matches!(self, Wire::Varint(0) | Wire::Bytes([]))
    }
}

/// Reads the next field of `buf`, advancing it.
pub(crate) fn next_field<'de>(buf: &mut &'de [u8]) -> Result<(u32, Wire<'de>), DecodeError> {
    use prost::encoding::{WireType, decode_key, decode_varint};
    let broken = |e: prost::DecodeError| DecodeError(format!("a broken protobuf message: {e}"));
    let (number, wire_type) = decode_key(buf).map_err(broken)?;
    let skip = |buf: &mut &'de [u8], n: usize| -> Result<Wire<'de>, DecodeError> {
        *buf = buf
            .get(n..)
            .ok_or_else(|| DecodeError("a truncated protobuf message".into()))?;
        Ok(Wire::Fixed)
    };
    let wire = match wire_type {
        WireType::Varint => Wire::Varint(decode_varint(buf).map_err(broken)?),
        WireType::LengthDelimited => {
            let len = usize::try_from(decode_varint(buf).map_err(broken)?)
                .map_err(|_| DecodeError("a protobuf length past memory".into()))?;
            let bytes = buf
                .get(..len)
                .ok_or_else(|| DecodeError("a truncated protobuf message".into()))?;
            *buf = &buf[len..];
            Wire::Bytes(bytes)
        }
        WireType::SixtyFourBit => skip(buf, 8)?,
        WireType::ThirtyTwoBit => skip(buf, 4)?,
        WireType::StartGroup | WireType::EndGroup => {
            return Err(DecodeError(format!(
                "field {number}: protobuf groups are not part of Kubernetes' encoding"
            )));
        }
    };
    Ok((number, wire))
}

/// The string in field `number` of a message (empty when absent).
pub(crate) fn string_field(mut buf: &[u8], number: u32) -> Result<&str, DecodeError> {
    let mut found = "";
    while !buf.is_empty() {
        if let (n, Wire::Bytes(b)) = next_field(&mut buf)?
            && n == number
        {
            found = text(b)?;
        }
    }
    Ok(found)
}

fn text(bytes: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(bytes).map_err(|_| DecodeError("a protobuf string is not UTF-8".into()))
}

/// Whether a `Time` is Go's zero time, which JSON shows as null.
fn is_zero_time(wire: Wire<'_>) -> Result<bool, DecodeError> {
    let Wire::Bytes(mut buf) = wire else {
        return Ok(false);
    };
    while !buf.is_empty() {
        if let (1 | 2, Wire::Varint(v)) = next_field(&mut buf)?
            && v != 0
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What both deserializers answer alike, as JSON would: a value on the wire is present (an
/// `Option` is `Some`), a newtype (k8s-openapi's `Quantity`) is its inner value, and what the
/// reading type ignores is skipped without being decoded.
macro_rules! as_json_shows {
    () => {
        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
            visitor.visit_some(self)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, DecodeError> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(
            self,
            visitor: V,
        ) -> Result<V::Value, DecodeError> {
            visitor.visit_unit()
        }
    };
}

/// A message: what a read-model type deserialises from.
#[derive(Debug)]
pub(crate) struct MessageDe<'de> {
    pub(crate) message: &'static Message,
    pub(crate) bytes: &'de [u8],
}

impl<'de> de::Deserializer<'de> for MessageDe<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_map(Fields::new(self.message, self.bytes))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        // A field the reading type declares that the schema lacks would silently read as
        // absent from protobuf: in debug builds (every test) it is an error instead.
        #[cfg(debug_assertions)]
        if let Some(missing) = fields.iter().find(|f| {
            let listed = |m: &Message| m.fields.iter().any(|s| s.name == **f);
            let inlined = self.message.fields.iter().any(|s| match s.kind {
                Kind::Message(m) if s.inline => listed(m),
                _ => false,
            });
            !listed(self.message) && !inlined && !self.message.left_out.contains(f)
        }) {
            return Err(DecodeError(format!(
                "{name} reads {missing:?}, which the protobuf schema of {} does not list",
                self.message.name
            )));
        }
        let _ = (name, fields);
        self.deserialize_any(visitor)
    }

    as_json_shows!();

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map enum identifier
    }
}

/// What the next value is, once its key was given.
enum Pending<'de> {
    None,
    One(&'static Field, Wire<'de>),
    /// A repeated or map field: every occurrence from `from` (its first) on.
    All(&'static Field, &'de [u8]),
    /// A field JSON always shows that the wire lacked.
    Zero(&'static Field),
}

/// A message's fields as a serde map.
struct Fields<'de> {
    message: &'static Message,
    rest: &'de [u8],
    /// The schema's fields already given (each index one bit).
    given: u64,
    pending: Pending<'de>,
    /// The fields of an inline message being read (a Volume's source), given as this
    /// message's own.
    inner: Option<Box<Fields<'de>>>,
}

impl<'de> Fields<'de> {
    fn new(message: &'static Message, bytes: &'de [u8]) -> Self {
        Fields {
            message,
            rest: bytes,
            given: 0,
            pending: Pending::None,
            inner: None,
        }
    }

    /// The name of the next field to give, its value made pending; `None` when none is
    /// left.
    fn next_key_name(&mut self) -> Result<Option<&'static str>, DecodeError> {
        if let Some(inner) = self.inner.as_mut() {
            if let Some(name) = inner.next_key_name()? {
                return Ok(Some(name));
            }
            self.inner = None;
        }
        while !self.rest.is_empty() {
            let from = self.rest;
            let (number, wire) = next_field(&mut self.rest)?;
            let Some((index, field)) = self.message.field(number) else {
                continue;
            };
            let bit = 1u64 << index;
            if self.given & bit != 0 {
                // A repeated field's later occurrences were read with its first.
                continue;
            }
            if let (true, Kind::Message(m)) = (field.inline, field.kind) {
                self.given |= bit;
                let mut inner = Fields::new(m, Value::bytes(field, wire)?);
                if let Some(name) = inner.next_key_name()? {
                    self.inner = Some(Box::new(inner));
                    return Ok(Some(name));
                }
                continue;
            }
            let scalar = matches!(field.kind, Kind::Str | Kind::Bool | Kind::Int);
            if field.repeated {
                self.pending = Pending::All(field, from);
            } else if field.zero == Zero::Omit && scalar && wire.is_zero()
                || matches!(field.kind, Kind::Time) && is_zero_time(wire)?
            {
                continue;
            } else {
                self.pending = Pending::One(field, wire);
            }
            self.given |= bit;
            return Ok(Some(field.name));
        }
        if let Some((index, field)) = self
            .message
            .fields
            .iter()
            .enumerate()
            .find(|(i, f)| f.zero == Zero::Keep && self.given & (1u64 << i) == 0)
        {
            self.given |= 1u64 << index;
            self.pending = Pending::Zero(field);
            return Ok(Some(field.name));
        }
        Ok(None)
    }
}

impl<'de> de::MapAccess<'de> for Fields<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        match self.next_key_name()? {
            Some(name) => seed
                .deserialize(BorrowedStrDeserializer::new(name))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        if let Some(inner) = self.inner.as_mut() {
            return inner.next_value_seed(seed);
        }
        let value = match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::One(field, wire) => Value::One(field, wire),
            Pending::All(field, from) => Value::All(field, from),
            Pending::Zero(field) => Value::Zero(field),
            Pending::None => return Err(DecodeError("a value asked before its key".into())),
        };
        seed.deserialize(value)
            .map_err(|e| in_field(e, self.message, value_field(&value)))
    }
}

fn value_field(value: &Value<'_>) -> &'static Field {
    match value {
        Value::One(f, _) | Value::All(f, _) | Value::Zero(f) | Value::Element(f, _) => f,
    }
}

/// The error with the field it happened in, outermost first (`Pod.spec: PodSpec.nodeName: …`).
fn in_field(e: DecodeError, message: &Message, field: &Field) -> DecodeError {
    DecodeError(format!("{}.{}: {}", message.name, field.name, e.0))
}

/// One field's value.
#[derive(Clone, Copy)]
enum Value<'de> {
    One(&'static Field, Wire<'de>),
    All(&'static Field, &'de [u8]),
    Zero(&'static Field),
    /// One occurrence of a repeated field.
    Element(&'static Field, Wire<'de>),
}

impl<'de> Value<'de> {
    fn wrong(field: &Field) -> DecodeError {
        DecodeError(format!("{} has the wrong wire type", field.name))
    }

    fn bytes(field: &Field, wire: Wire<'de>) -> Result<&'de [u8], DecodeError> {
        match wire {
            Wire::Bytes(b) => Ok(b),
            _ => Err(Self::wrong(field)),
        }
    }

    fn varint(field: &Field, wire: Wire<'de>) -> Result<u64, DecodeError> {
        match wire {
            Wire::Varint(v) => Ok(v),
            _ => Err(Self::wrong(field)),
        }
    }

    /// The string a scalar stands for in JSON, when it is one.
    fn as_str(&self) -> Result<Option<&'de str>, DecodeError> {
        let (field, wire) = match *self {
            Value::One(f, w) | Value::Element(f, w) => (f, w),
            Value::Zero(f) if matches!(f.kind, Kind::Str) && !f.repeated => return Ok(Some("")),
            _ => return Ok(None),
        };
        Ok(match field.kind {
            Kind::Str => Some(text(Self::bytes(field, wire)?)?),
            _ => None,
        })
    }
}

impl<'de> de::Deserializer<'de> for Value<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let (field, wire) = match self {
            Value::All(field, from) => {
                return if matches!(field.kind, Kind::MapStr | Kind::MapQuantity) {
                    visitor.visit_map(Entries::new(field, from))
                } else {
                    visitor.visit_seq(Occurrences { field, rest: from })
                };
            }
            Value::Zero(field) => {
                return match field.kind {
                    _ if field.repeated => visitor.visit_seq(Occurrences { field, rest: &[] }),
                    Kind::Str => visitor.visit_borrowed_str(""),
                    Kind::Bool => visitor.visit_bool(false),
                    Kind::Int => visitor.visit_i64(0),
                    Kind::Message(m) => visitor.visit_map(Fields::new(m, &[])),
                    Kind::MapStr | Kind::MapQuantity => visitor.visit_map(Entries::new(field, &[])),
                    Kind::Time => visitor.visit_unit(),
                };
            }
            Value::One(field, wire) | Value::Element(field, wire) => (field, wire),
        };
        match field.kind {
            Kind::Str => visitor.visit_borrowed_str(self.as_str()?.unwrap_or_default()),
            Kind::Bool => visitor.visit_bool(Self::varint(field, wire)? != 0),
            // Two's complement on the wire: a negative int32 is sign-extended to 64 bits.
            Kind::Int => visitor.visit_i64(Self::varint(field, wire)? as i64),
            Kind::Message(m) => visitor.visit_map(Fields::new(m, Self::bytes(field, wire)?)),
            Kind::Time => {
                let mut buf = Self::bytes(field, wire)?;
                let mut seconds = 0i64;
                while !buf.is_empty() {
                    if let (1, Wire::Varint(s)) = next_field(&mut buf)? {
                        seconds = s as i64;
                    }
                }
                let time = jiff::Timestamp::from_second(seconds)
                    .map_err(|e| DecodeError(format!("{}: {e}", field.name)))?;
                visitor.visit_string(time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            }
            Kind::MapStr | Kind::MapQuantity => visitor.visit_map(Entries::new(field, &[])),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self {
            Value::One(field, wire) | Value::Element(field, wire)
                if let Kind::Message(message) = field.kind =>
            {
                MessageDe {
                    message,
                    bytes: Self::bytes(field, wire)?,
                }
                .deserialize_struct(name, fields, visitor)
            }
            _ => self.deserialize_any(visitor),
        }
    }

    as_json_shows!();

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.as_str()? {
            Some(s) => BorrowedStrDeserializer::new(s).deserialize_enum(name, variants, visitor),
            None => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier
    }
}

/// The occurrences of a repeated field, as a list.
struct Occurrences<'de> {
    field: &'static Field,
    rest: &'de [u8],
}

impl<'de> Occurrences<'de> {
    fn next(&mut self) -> Result<Option<Wire<'de>>, DecodeError> {
        while !self.rest.is_empty() {
            let (number, wire) = next_field(&mut self.rest)?;
            if number == self.field.number {
                return Ok(Some(wire));
            }
        }
        Ok(None)
    }
}

impl<'de> de::SeqAccess<'de> for Occurrences<'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        match self.next()? {
            Some(wire) => seed.deserialize(Value::Element(self.field, wire)).map(Some),
            None => Ok(None),
        }
    }
}

/// The entries of a map field (1 key, 2 value each), as a map.
struct Entries<'de> {
    entries: Occurrences<'de>,
    value: Option<&'de [u8]>,
}

impl<'de> Entries<'de> {
    fn new(field: &'static Field, from: &'de [u8]) -> Self {
        Entries {
            entries: Occurrences { field, rest: from },
            value: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for Entries<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let field = self.entries.field;
        let Some(wire) = self.entries.next()? else {
            return Ok(None);
        };
        let mut entry = Value::bytes(field, wire)?;
        let (mut key, mut value) = ("", &[][..]);
        while !entry.is_empty() {
            match next_field(&mut entry)? {
                (1, Wire::Bytes(k)) => key = text(k)?,
                (2, Wire::Bytes(v)) => value = v,
                _ => {}
            }
        }
        self.value = Some(value);
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let bytes = self.value.take().unwrap_or_default();
        let text = match self.entries.field.kind {
            Kind::MapQuantity => string_field(bytes, 1)?,
            _ => text(bytes)?,
        };
        seed.deserialize(BorrowedStrDeserializer::new(text))
    }
}
