//! Work sliced over N machines: `--shard I/N` takes the contiguous items
//! `[I*T/N, (I+1)*T/N)` of T, so the slices concatenated in shard order are
//! the whole in order. The pipeline decides which stages are sliced and
//! merges them ([`crate::pipeline::merge`]); stages only ask for their range.

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Slice `index` of `count` (`--shard I/N`); recorded as
/// `{"index": I, "count": N}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Parses `I/N` with `0 <= I < N` (the clap value parser of `--shard`).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not I/N (e.g. 0/8)"))?;
        let number = |part: &str, what: &str| {
            part.trim()
                .parse::<u64>()
                .map_err(|_| format!("{text:?}: {what} {part:?} is not a whole number"))
        };
        let shard = Shard {
            index: number(index, "shard index")?,
            count: number(count, "shard count")?,
        };
        if shard.count == 0 {
            return Err(format!("{text:?}: the shard count must be at least 1"));
        }
        if shard.index >= shard.count {
            return Err(format!(
                "{text:?}: the shard index must be 0 to {} (shards count from 0)",
                shard.count - 1
            ));
        }
        Ok(shard)
    }

    /// This shard's items of `total`: `[I*T/N, (I+1)*T/N)`.
    pub fn range(&self, total: u64) -> Range<u64> {
        let at = |i: u64| (u128::from(i) * u128::from(total) / u128::from(self.count)) as u64;
        at(self.index)..at(self.index + 1)
    }

    /// The shard's folder name beside the release's.
    pub(crate) fn folder_name(&self, release: &str) -> String {
        format!("{release}.shard-{}-of-{}", self.index, self.count)
    }
}

/// True for a folder name `run --shard` writes (`<release>.shard-I-of-N`):
/// such folders are never releases.
pub(crate) fn is_shard_folder_name(name: &str) -> bool {
    name.rsplit_once(".shard-")
        .and_then(|(_, rest)| rest.split_once("-of-"))
        .is_some_and(|(i, n)| i.parse::<u64>().is_ok() && n.parse::<u64>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_i_of_n_and_rejects_the_rest() {
        assert_eq!(Shard::parse("0/1"), Ok(Shard { index: 0, count: 1 }));
        assert_eq!(Shard::parse("7/8"), Ok(Shard { index: 7, count: 8 }));
        for bad in ["8/8", "1/0", "0", "a/2", "-1/2", "1/2/3", ""] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ranges_cover_every_item_once_in_order() {
        for total in [0u64, 1, 5, 7, 40] {
            for count in [1u64, 2, 3, 8] {
                let mut next = 0;
                for index in 0..count {
                    let range = Shard { index, count }.range(total);
                    assert_eq!(range.start, next);
                    next = range.end;
                }
                assert_eq!(next, total);
            }
        }
    }

    #[test]
    fn shard_folder_names_are_recognised() {
        let name = Shard { index: 3, count: 8 }.folder_name("2026-01");
        assert_eq!(name, "2026-01.shard-3-of-8");
        assert!(is_shard_folder_name(&name));
        assert!(!is_shard_folder_name("2026-01"));
        assert!(!is_shard_folder_name("my.shard-x-of-2"));
    }
}
