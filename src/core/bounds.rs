//! The bound of every numeric config key, written beside its typed field
//! (each section's `impl Bounded`), and the one check that applies them.
//!
//! Apart because the same bounds serve three readers: `run` checks every
//! table of `pipeline.toml` before any stage (naming the file, the key and
//! its line), a standalone command checks its section after its flags are
//! laid over it, and `docs/config-bounds.md` is generated from them
//! (`cargo test config_bounds_doc`), so the list a user reads is the one
//! the program enforces.

use serde::Serialize;

/// The bound of one numeric key: its value (each number of a pair) lies in
/// `low..=high` (above `low` when `above_low`), and a pair's first number
/// is at most its second when `ordered`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    pub key: &'static str,
    pub low: f64,
    pub high: f64,
    /// The value must exceed `low` (a wait of 0 s ends at once).
    pub above_low: bool,
    /// A `[low, high]` pair whose first number is at most its second.
    pub ordered: bool,
    /// What the number is, in a few words: the reason a user reads.
    pub what: &'static str,
}

impl Bound {
    /// `key` within `low..=high`.
    pub const fn within(key: &'static str, low: f64, high: f64, what: &'static str) -> Self {
        Self {
            key,
            low,
            high,
            above_low: false,
            ordered: false,
            what,
        }
    }

    /// `key` above `low` and at most `high`.
    pub const fn above(key: &'static str, low: f64, high: f64, what: &'static str) -> Self {
        Self {
            above_low: true,
            ..Self::within(key, low, high, what)
        }
    }

    /// `key = [a, b]`, each within `low..=high` and `a <= b`.
    pub const fn pair(key: &'static str, low: f64, high: f64, what: &'static str) -> Self {
        Self {
            ordered: true,
            ..Self::within(key, low, high, what)
        }
    }

    /// The bound in words: `1..=10`, `above 0, at most 3600`.
    pub fn range(&self) -> String {
        let (low, high) = (number(self.low), number(self.high));
        if self.above_low {
            format!("above {low}, at most {high}")
        } else {
            format!("{low}..={high}")
        }
    }

    /// What a value out of bound is told: `must lie within 1..=10`, `must
    /// be above 0, at most 3600`.
    fn must(&self) -> String {
        if self.above_low {
            format!("must be {} ({})", self.range(), self.what)
        } else {
            format!("must lie within {} ({})", self.range(), self.what)
        }
    }

    /// The bound as the docs list it: a pair's rule too.
    pub fn rule(&self) -> String {
        if self.ordered {
            format!("[a, b], each {}, a <= b", self.range())
        } else {
            self.range()
        }
    }

    fn admits(&self, value: f64) -> bool {
        value.is_finite()
            && value <= self.high
            && if self.above_low {
                value > self.low
            } else {
                value >= self.low
            }
    }

    /// Why `value` (a TOML value of this key) is out of bound; `None` when
    /// it is within, or is no number (its type is serde's to refuse).
    pub fn refuses(&self, value: &toml::Value) -> Option<String> {
        let as_number = |v: &toml::Value| match v {
            toml::Value::Integer(n) => Some(*n as f64),
            toml::Value::Float(x) => Some(*x),
            _ => None,
        };
        match value {
            toml::Value::Array(items) => {
                let numbers: Vec<f64> = items.iter().filter_map(as_number).collect();
                if let Some(bad) = numbers.iter().find(|n| !self.admits(**n)) {
                    return Some(format!("{}: each number {}", number(*bad), self.must()));
                }
                if self.ordered
                    && let [a, b] = numbers[..]
                    && a > b
                {
                    return Some(format!(
                        "an empty range: its first number is above its second ({})",
                        self.what
                    ));
                }
                None
            }
            other => as_number(other)
                .filter(|n| !self.admits(*n))
                .map(|_| self.must()),
        }
    }
}

/// A number as a user writes it: `1000000`, `0.25`, `-500`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e16 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// How a nested table of a section is written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Many {
    /// One table: `[selfplay.human]`.
    One,
    /// An array of tables: `[[release.bands]]`.
    Each,
    /// A table of named tables: `[release.tiers.NAME]`.
    Named,
}

/// A table inside a section (`[verify.second_engine]`) and its bounds.
#[derive(Clone, Copy, Debug)]
pub struct Nested {
    pub key: &'static str,
    pub many: Many,
    pub bounds: &'static [Bound],
    pub nested: &'static [Nested],
}

impl Nested {
    /// The table `key` holding a `T`, written as `many` says.
    pub const fn of<T: Bounded>(key: &'static str, many: Many) -> Self {
        Self {
            key,
            many,
            bounds: T::BOUNDS,
            nested: T::NESTED,
        }
    }
}

/// A config section whose numeric keys have bounds.
pub trait Bounded {
    /// Every numeric key of the section, with its bound.
    const BOUNDS: &'static [Bound];
    /// The tables inside the section that have bounds of their own.
    const NESTED: &'static [Nested] = &[];
}

/// A key out of its bound: the dotted table it is in (`mine`,
/// `generate.profiles.hard.mine`), the key, and why.
#[derive(Debug, PartialEq)]
pub struct OutOfBound {
    pub table: String,
    pub key: &'static str,
    /// The value as the file writes it: `0`, `[2800, 400]`.
    pub shown: String,
    pub why: String,
}

impl OutOfBound {
    /// `table.key`.
    pub fn dotted(&self) -> String {
        dotted(&self.table, self.key)
    }
}

/// `key` under the dotted table `table` (`mine` + `nodes` = `mine.nodes`;
/// the top level is the empty table).
pub fn dotted(table: &str, key: &str) -> String {
    if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    }
}

/// The first key of `table` (named `name`, dotted) or of its nested tables
/// out of its bound.
pub fn check_table(
    table: &toml::Table,
    name: &str,
    bounds: &[Bound],
    nested: &[Nested],
) -> Option<OutOfBound> {
    for bound in bounds {
        let Some(value) = table.get(bound.key) else {
            continue;
        };
        if let Some(why) = bound.refuses(value) {
            return Some(OutOfBound {
                table: name.to_string(),
                key: bound.key,
                shown: value.to_string(),
                why,
            });
        }
    }
    for inner in nested {
        let Some(value) = table.get(inner.key) else {
            continue;
        };
        let here = dotted(name, inner.key);
        let found = match (inner.many, value) {
            (Many::One, toml::Value::Table(t)) => check_table(t, &here, inner.bounds, inner.nested),
            (Many::Each, toml::Value::Array(items)) => items.iter().find_map(|item| {
                item.as_table()
                    .and_then(|t| check_table(t, &here, inner.bounds, inner.nested))
            }),
            (Many::Named, toml::Value::Table(named)) => named.iter().find_map(|(key, item)| {
                item.as_table().and_then(|t| {
                    check_table(t, &format!("{here}.{key}"), inner.bounds, inner.nested)
                })
            }),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// [`check_table`] on a typed section after flags or profiles were laid
/// over it: `Err("key = value: must lie within ...")`, the key dotted
/// below the section.
pub fn check_section<T: Serialize + Bounded>(value: &T) -> anyhow::Result<()> {
    let table = toml::Table::try_from(value)
        .map_err(|e| anyhow::anyhow!("writing a config section as TOML: {e}"))?;
    match check_table(&table, "", T::BOUNDS, T::NESTED) {
        None => Ok(()),
        Some(found) => Err(crate::core::error::bad_input(format!(
            "{} = {}: {}",
            found.dotted(),
            found.shown,
            found.why
        ))),
    }
}

/// Every bounded key under `name`, dotted, with its bound: the rows of
/// `docs/config-bounds.md`.
pub fn list(name: &str, bounds: &[Bound], nested: &[Nested], rows: &mut Vec<(String, Bound)>) {
    for bound in bounds {
        rows.push((dotted(name, bound.key), *bound));
    }
    for inner in nested {
        let here = match inner.many {
            Many::One | Many::Each => dotted(name, inner.key),
            Many::Named => format!("{}.NAME", dotted(name, inner.key)),
        };
        list(&here, inner.bounds, inner.nested, rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_refuses_numbers_outside_it_and_empty_pairs() {
        let nodes = Bound::within("nodes", 1.0, 1e9, "nodes of a search");
        assert_eq!(nodes.refuses(&toml::Value::Integer(5)), None);
        let why = nodes.refuses(&toml::Value::Integer(0)).unwrap();
        assert_eq!(why, "must lie within 1..=1000000000 (nodes of a search)");
        let wait = Bound::above("timeout_s", 0.0, 3600.0, "seconds");
        assert!(wait.refuses(&toml::Value::Float(0.0)).is_some());
        assert!(wait.refuses(&toml::Value::Float(f64::NAN)).is_some());
        let elo = Bound::pair("elo", 1350.0, 2850.0, "Elo");
        let pair =
            |a, b| toml::Value::Array(vec![toml::Value::Integer(a), toml::Value::Integer(b)]);
        assert_eq!(elo.refuses(&pair(1400, 1500)), None);
        assert!(
            elo.refuses(&pair(2500, 1500))
                .unwrap()
                .contains("empty range")
        );
        assert!(
            elo.refuses(&pair(1000, 1500))
                .unwrap()
                .starts_with("1000: each number must lie within 1350..=2850")
        );
        assert_eq!(elo.rule(), "[a, b], each 1350..=2850, a <= b");
        assert_eq!(wait.range(), "above 0, at most 3600");
    }
}
