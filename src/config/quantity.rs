//! Resource quantities as the two SI editions write them in `queues.yaml`.
//!
//! SI v0.12 reads plain base-10 integers (the strict deserialiser in
//! `de.rs`). YuniKorn v1.x reads every quantity with an optional unit
//! suffix and reads `vcore` in cores, stored as millicores. For an RM of
//! the v1 edition the configuration is read as a YAML tree first, every
//! quantity map (queue `resources`, child templates, user and group
//! `maxresources`) is rewritten to the integers the core stores, and the
//! tree then goes through the same strict schema as v0.12 text. So the
//! schema, the checks and the core see one form, and only this file knows
//! that there are two ways to write it.

use serde_yaml_ng::{Mapping, Value};

/// How the quantities of a configuration are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuantityGrammar {
    /// SI v0.12: non-negative base-10 integers, the stored unit itself.
    #[default]
    Integer,
    /// YuniKorn v1.x: digits, optional spaces, then an optional suffix
    /// (`k M G T P E`, `Ki Mi Gi Ti Pi Ei`); `vcore` is read in cores and
    /// stored in millicores, where `m` names millicores.
    Units,
}

/// The resource type whose configured value is in cores, stored in millicores.
const VCORE: &str = "vcore";

/// Most nested queue levels walked; deeper trees are refused with a message.
/// Far above any real hierarchy, and it keeps a hostile text from costing
/// more than its own size.
pub const MAX_QUEUE_DEPTH: usize = 256;

/// Parses one v1.x quantity of resource type `name` into the stored unit.
/// The message says what is wrong with `text`, not where it is.
pub fn parse_units(name: &str, text: &str) -> Result<i64, String> {
    let milli = name == VCORE;
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err("not a non-negative whole number with an optional unit".into());
    }
    let (digits, rest) = t.split_at(digits_end);
    let suffix = rest.trim_start();
    let scale: i128 = match suffix {
        "" => 1,
        "m" if milli => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        "m" => {
            return Err(format!(
                "the suffix 'm' (millicores) is only valid for {VCORE}"
            ))
        }
        other => {
            return Err(format!(
                "unknown unit '{other}' (the units are k M G T P E and Ki Mi Gi Ti Pi Ei{})",
                if milli { ", and m for millicores" } else { "" }
            ))
        }
    };
    let overflow = || format!("out of range: larger than {} in the stored unit", i64::MAX);
    let number: i64 = digits.parse().map_err(|_| overflow())?;
    let cores_to_milli: i128 = if milli && suffix != "m" { 1000 } else { 1 };
    let value = i128::from(number) * scale * cores_to_milli;
    i64::try_from(value).map_err(|_| overflow())
}

/// Rewrites every quantity of a configuration tree written in the v1.x
/// grammar to the stored integers. Errors name where the value is (the
/// partition, the queue path, the map and the resource) and the value.
pub(super) fn rewrite_units(root: &mut Value) -> Result<(), String> {
    let Some(partitions) = root.get_mut("partitions").and_then(Value::as_sequence_mut) else {
        return Ok(());
    };
    for (i, partition) in partitions.iter_mut().enumerate() {
        let Some(p) = partition.as_mapping_mut() else {
            continue;
        };
        let pname = match p.get("name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_string(),
            _ if i == 0 => "default".to_string(),
            _ => format!("#{}", i + 1),
        };
        rewrite_limits(p, &format!("partition {pname} limits"))?;
        let Some(queues) = p.get_mut("queues").and_then(Value::as_sequence_mut) else {
            continue;
        };
        // Explicit stack: the depth of a hostile tree costs heap, not stack.
        let mut stack: Vec<(&mut Value, String, usize)> =
            queues.iter_mut().map(|q| (q, String::new(), 1)).collect();
        while let Some((queue, parent, depth)) = stack.pop() {
            let Some(q) = queue.as_mapping_mut() else {
                continue;
            };
            if depth > MAX_QUEUE_DEPTH {
                return Err(format!(
                    "partition {pname}: queue {parent} has children nested deeper than {MAX_QUEUE_DEPTH} levels"
                ));
            }
            let name = q
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_lowercase();
            let path = if parent.is_empty() {
                name
            } else {
                format!("{parent}.{name}")
            };
            let at = format!("partition {pname} queue {path}");
            rewrite_resources(q, &format!("{at} resources"))?;
            if let Some(t) = q.get_mut("childtemplate").and_then(Value::as_mapping_mut) {
                rewrite_resources(t, &format!("{at} childtemplate resources"))?;
            }
            rewrite_limits(q, &format!("{at} limits"))?;
            if let Some(children) = q.get_mut("queues").and_then(Value::as_sequence_mut) {
                for c in children.iter_mut() {
                    stack.push((c, path.clone(), depth + 1));
                }
            }
        }
    }
    Ok(())
}

fn rewrite_resources(holder: &mut Mapping, at: &str) -> Result<(), String> {
    let Some(res) = holder.get_mut("resources").and_then(Value::as_mapping_mut) else {
        return Ok(());
    };
    for key in ["guaranteed", "max"] {
        if let Some(m) = res.get_mut(key).and_then(Value::as_mapping_mut) {
            rewrite_map(m, &format!("{at}.{key}"))?;
        }
    }
    Ok(())
}

fn rewrite_limits(holder: &mut Mapping, at: &str) -> Result<(), String> {
    let Some(limits) = holder.get_mut("limits").and_then(Value::as_sequence_mut) else {
        return Ok(());
    };
    for (i, limit) in limits.iter_mut().enumerate() {
        let Some(l) = limit.as_mapping_mut() else {
            continue;
        };
        let label = match l.get("limit").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => format!("'{s}'"),
            _ => format!("#{}", i + 1),
        };
        if let Some(m) = l.get_mut("maxresources").and_then(Value::as_mapping_mut) {
            rewrite_map(m, &format!("{at} {label} maxresources"))?;
        }
    }
    Ok(())
}

/// One quantity map: strings and integers become stored integers; any
/// other value is left for the schema to refuse with its own message.
fn rewrite_map(map: &mut Mapping, at: &str) -> Result<(), String> {
    for (k, v) in map.iter_mut() {
        let Some(name) = k.as_str() else { continue };
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
            Value::Number(n) => {
                return Err(format!(
                    "invalid resource quantity in {at}: {name} '{n}': not a non-negative whole number with an optional unit"
                ))
            }
            _ => continue,
        };
        let stored = parse_units(name, &text)
            .map_err(|e| format!("invalid resource quantity in {at}: {name} '{text}': {e}"))?;
        *v = Value::Number(stored.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's own table of cases, for a plain type and for vcore.
    #[test]
    fn reference_cases() {
        let plain: &[(&str, Option<i64>)] = &[
            ("0", Some(0)),
            ("1", Some(1)),
            (" 25k ", Some(25_000)),
            (" 25  k ", Some(25_000)),
            ("9223372036854775807", Some(i64::MAX)),
            ("9223372036854775808", None),
            ("1000E", None),
            ("5X", None),
            ("500m", None),
            ("-1", None),
            ("2k", Some(2_000)),
            ("3M", Some(3_000_000)),
            ("4G", Some(4_000_000_000)),
            ("5T", Some(5_000_000_000_000)),
            ("6P", Some(6_000_000_000_000_000)),
            ("7E", Some(7_000_000_000_000_000_000)),
            ("2Ki", Some(2 << 10)),
            ("3Mi", Some(3 << 20)),
            ("4Gi", Some(4 << 30)),
            ("5Ti", Some(5 << 40)),
            ("6Pi", Some(6 << 50)),
            ("7Ei", Some(7 << 60)),
            ("", None),
            ("1.5", None),
            ("1K", None),
            ("1ki", None),
            ("1 Gi x", None),
            ("+1", None),
        ];
        for (text, want) in plain {
            assert_eq!(parse_units("memory", text).ok(), *want, "memory {text:?}");
        }
        let vcore: &[(&str, Option<i64>)] = &[
            ("0", Some(0)),
            ("1", Some(1_000)),
            (" 25k ", Some(25_000_000)),
            (" 25  k ", Some(25_000_000)),
            ("9223372036854775", Some(9_223_372_036_854_775_000)),
            ("9223372036854776", None),
            ("1000P", None),
            ("5X", None),
            ("500m", Some(500)),
            ("-1", None),
            ("2k", Some(2_000_000)),
            ("6P", Some(6_000_000_000_000_000_000)),
            ("7E", None),
            ("2Ki", Some(2 * 1000 * 1024)),
            ("6Pi", Some(6 * 1000 * (1 << 50))),
            ("7Ei", None),
        ];
        for (text, want) in vcore {
            assert_eq!(parse_units("vcore", text).ok(), *want, "vcore {text:?}");
        }
    }

    #[test]
    fn messages_say_what_is_wrong() {
        assert!(parse_units("memory", "500m")
            .unwrap_err()
            .contains("only valid for vcore"));
        assert!(parse_units("memory", "5X")
            .unwrap_err()
            .contains("unknown unit 'X'"));
        assert!(parse_units("memory", "1000E")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_units("memory", "-1")
            .unwrap_err()
            .contains("non-negative"));
    }

    #[test]
    fn deep_trees_are_refused_without_recursion() {
        // Built directly: the YAML parser has a nesting limit of its own.
        let mut q = Value::Mapping(Mapping::from_iter([("name".into(), "leaf".into())]));
        for i in 0..(MAX_QUEUE_DEPTH + 5) {
            q = Value::Mapping(Mapping::from_iter([
                ("name".into(), format!("q{i}").into()),
                ("queues".into(), Value::Sequence(vec![q])),
            ]));
        }
        let p = Mapping::from_iter([("queues".into(), Value::Sequence(vec![q]))]);
        let mut v = Value::Mapping(Mapping::from_iter([(
            "partitions".into(),
            Value::Sequence(vec![Value::Mapping(p)]),
        )]));
        let e = rewrite_units(&mut v).unwrap_err();
        assert!(e.contains("nested deeper than 256"), "{e}");
    }
}
