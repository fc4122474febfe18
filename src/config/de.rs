//! Custom deserialisers for the configuration schema.
//!
//! Resource quantities are base-10 integers written as YAML numbers or strings
//! (the reference reads them as strings and parses them as integers), so a
//! visitor accepts both and rejects units, fractions and negative values.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// One resource quantity.
struct Quantity(i64);

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Quantity, D::Error> {
        d.deserialize_any(QuantityVisitor)
    }
}

struct QuantityVisitor;

fn non_negative<E: de::Error>(v: i64) -> Result<Quantity, E> {
    if v < 0 {
        Err(E::custom("negative resources not permitted"))
    } else {
        Ok(Quantity(v))
    }
}

impl Visitor<'_> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a base-10 integer resource quantity")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Quantity, E> {
        non_negative(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Quantity, E> {
        i64::try_from(v)
            .map(Quantity)
            .map_err(|_| E::custom(format!("resource quantity {v} out of range")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Quantity, E> {
        match v.parse::<i64>() {
            Ok(n) => non_negative(n),
            Err(_) => Err(E::custom(format!(
                "invalid resource quantity '{v}': must be a base-10 integer"
            ))),
        }
    }
}

struct QuantityMap(BTreeMap<String, i64>);

impl<'de> Deserialize<'de> for QuantityMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<QuantityMap, D::Error> {
        let raw = BTreeMap::<String, Quantity>::deserialize(d)?;
        Ok(QuantityMap(
            raw.into_iter().map(|(k, v)| (k, v.0)).collect(),
        ))
    }
}

/// A quantity map that must be present when the key is; null counts as absent.
pub(super) fn opt_quantities<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, i64>>, D::Error> {
    Ok(Option::<QuantityMap>::deserialize(d)?.map(|m| m.0))
}

/// A quantity map; null counts as empty.
pub(super) fn quantities<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, i64>, D::Error> {
    Ok(opt_quantities(d)?.unwrap_or_default())
}

/// A scalar taken as its text: property values such as `10` or `true` are
/// accepted like the reference does, but maps and lists are still errors.
struct ScalarText(String);

impl<'de> Deserialize<'de> for ScalarText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ScalarText, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl Visitor<'_> for ScalarVisitor {
    type Value = ScalarText;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or scalar value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ScalarText, E> {
        Ok(ScalarText(v.to_string()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ScalarText, E> {
        Ok(ScalarText(v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ScalarText, E> {
        Ok(ScalarText(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ScalarText, E> {
        Ok(ScalarText(v.to_string()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ScalarText, E> {
        Ok(ScalarText(v.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<ScalarText, E> {
        Ok(ScalarText(String::new()))
    }
}

struct StringMapVisitor;

impl<'de> Visitor<'de> for StringMapVisitor {
    type Value = BTreeMap<String, String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of string to scalar")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = BTreeMap::new();
        while let Some((k, v)) = map.next_entry::<String, ScalarText>()? {
            out.insert(k, v.0);
        }
        Ok(out)
    }
}

/// A property map: string keys, scalar values taken as text; null is empty.
pub(super) fn string_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    d.deserialize_any(StringMapVisitor)
}
