//! Kubernetes quantities as placekit keeps them: thousandths of a unit in an `i128`, parsed
//! the way the API server parses them and rendered the way kubectl prints them.

/// Parses a Kubernetes quantity (`8`, `500m`, `1.5`, `2k`, `1Gi`, `1e3`) into thousandths
/// of a unit. `None` for anything the API server would reject.
pub fn parse_quantity_milli(s: &str) -> Option<i128> {
    parse_quantity_scaled(s, 1000)
}

/// Parses a Kubernetes quantity into `1/per_unit`ths of a unit (1000: thousandths, as
/// resources are counted; 10^9: billionths, as CEL's quantities compare), rounded up like
/// the API server rounds.
pub fn parse_quantity_scaled(s: &str, per_unit: i128) -> Option<i128> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let (mul_num, mul_den): (i128, i128) = match suffix {
        "" => (1, 1),
        "n" => (1, 1_000_000_000),
        "u" => (1, 1_000_000),
        "m" => (1, 1_000),
        "k" => (1_000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        e if e.starts_with(['e', 'E']) => {
            let exp: u32 = e[1..].parse().ok().filter(|x: &u32| *x <= 18)?;
            (10i128.pow(exp), 1)
        }
        _ => return None,
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    let negative = int_part.starts_with('-');
    let int_digits = int_part.strip_prefix(['+', '-']).unwrap_or(int_part);
    if int_digits.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_digits.chars().all(|c| c.is_ascii_digit())
        || !frac_part.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let frac_digits = frac_part.len().min(18) as u32;
    let scale = 10i128.pow(frac_digits);
    let int_value: i128 = if int_digits.is_empty() {
        0
    } else {
        int_digits.parse().ok()?
    };
    let frac_value: i128 = if frac_digits == 0 {
        0
    } else {
        frac_part[..frac_digits as usize].parse().ok()?
    };
    let scaled = int_value.checked_mul(scale)?.checked_add(frac_value)?;
    // value = scaled / scale * mul_num / mul_den, in 1/per_unit, rounded up like the API server.
    let numerator = scaled.checked_mul(mul_num)?.checked_mul(per_unit)?;
    let denominator = scale.checked_mul(mul_den)?;
    let value = (numerator + denominator - 1).div_euclid(denominator);
    Some(if negative { -value } else { value })
}

/// Renders thousandths as a plain number (`8`, `0.5`).
pub fn format_milli(milli: i128) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        let s = format!("{:.3}", milli as f64 / 1000.0);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Renders thousandths of `resource` in its own units, as kubectl shows quantities:
/// memory-like resources (`memory`, `ephemeral-storage`, `hugepages-*`) with the largest
/// binary suffix that divides them (`32Gi`, `512Mi`, else bytes), cpu in millicores when
/// fractional (`500m`), anything else as a plain number.
pub fn format_quantity(resource: &str, milli: i128) -> String {
    let memory_like = resource == "memory"
        || resource == "ephemeral-storage"
        || resource.starts_with("hugepages-");
    if memory_like && milli % 1000 == 0 {
        let bytes = milli / 1000;
        if bytes != 0 {
            for (suffix, shift) in [
                ("Ei", 60),
                ("Pi", 50),
                ("Ti", 40),
                ("Gi", 30),
                ("Mi", 20),
                ("Ki", 10),
            ] {
                let unit = 1i128 << shift;
                if bytes % unit == 0 {
                    return format!("{}{suffix}", bytes / unit);
                }
            }
        }
        return bytes.to_string();
    }
    if resource == "cpu" && milli % 1000 != 0 {
        return format!("{milli}m");
    }
    format_milli(milli)
}

/// Serialises thousandths as a JSON number of units (an integer when whole).
pub fn units<S: serde::Serializer>(milli: &i128, s: S) -> Result<S::Ok, S::Error> {
    if milli % 1000 == 0 {
        s.serialize_i64((milli / 1000) as i64)
    } else {
        s.serialize_f64(*milli as f64 / 1000.0)
    }
}

/// [`units`], `null` when absent.
pub fn optional_units<S: serde::Serializer>(milli: &Option<i128>, s: S) -> Result<S::Ok, S::Error> {
    match milli {
        Some(m) => units(m, s),
        None => s.serialize_none(),
    }
}

/// A quantity's text as written: the API server always sends a string, a manifest may hold a
/// YAML number (`nvidia.com/gpu: 1`), read as its decimal text.
struct QuantityText(String);

impl<'de> serde::Deserialize<'de> for QuantityText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = QuantityText;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a quantity")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<QuantityText, E> {
                Ok(QuantityText(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<QuantityText, E> {
                Ok(QuantityText(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<QuantityText, E> {
                Ok(QuantityText(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<QuantityText, E> {
                Ok(QuantityText(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<QuantityText, E> {
                Ok(QuantityText(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Deserialises a `resource -> quantity` map whose quantities are strings or numbers, straight
/// into the map (this runs for every container of every listed pod).
pub fn quantity_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = std::collections::BTreeMap<String, String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of quantities")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Self::Value::new())
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut access: A,
        ) -> Result<Self::Value, A::Error> {
            let mut map = Self::Value::new();
            while let Some((key, QuantityText(value))) = access.next_entry()? {
                map.insert(key, value);
            }
            Ok(map)
        }
    }
    d.deserialize_any(Visitor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity_milli("8"), Some(8000));
        assert_eq!(parse_quantity_milli("500m"), Some(500));
        assert_eq!(parse_quantity_milli("1.5"), Some(1500));
        assert_eq!(parse_quantity_milli("2k"), Some(2_000_000));
        assert_eq!(parse_quantity_milli("1Ki"), Some(1_024_000));
        assert_eq!(parse_quantity_milli("1e3"), Some(1_000_000));
        assert_eq!(
            parse_quantity_milli("0.0001"),
            Some(1),
            "rounded up like the API server"
        );
        for bad in ["", "x", "1x", "1.2.3", "--1", "e3"] {
            assert_eq!(parse_quantity_milli(bad), None, "{bad}");
        }
        assert_eq!(format_milli(8000), "8");
        assert_eq!(format_milli(500), "0.5");
        assert_eq!(format_quantity("memory", (32i128 << 30) * 1000), "32Gi");
        assert_eq!(format_quantity("memory", 1_500_000), "1500");
        assert_eq!(
            format_quantity("hugepages-2Mi", (2i128 << 20) * 1000),
            "2Mi"
        );
        assert_eq!(format_quantity("cpu", 500), "500m");
        assert_eq!(format_quantity("cpu", 2000), "2");
        assert_eq!(format_quantity("nvidia.com/gpu", 4000), "4");
    }

    proptest::proptest! {
        #[test]
        fn quantity_parser_never_panics(s in "\\PC{0,20}") {
            let _ = parse_quantity_milli(&s);
        }
    }
}
