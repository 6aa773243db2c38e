//! What a merge of shards lacks (see docs/ci.md): a shard of the N that never arrived (a job that
//! crashed or never uploaded), or a selected test that ran in none of the shards (shards that
//! split from different histories). Each such test is listed as not run, with why, so a merge
//! is never green over tests nobody ran.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::shard::ShardInfo;

/// The tests no merged shard ran, and why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gaps {
    /// `K/N` of each shard that is not among the merged suites.
    pub missing_shards: Vec<String>,
    /// Each selected test that ran in no shard, with why ("shard 2/3 missing").
    pub not_run: BTreeMap<String, String>,
}

/// The gaps of shards `infos`, each with the tests its suite ran or listed as not run
/// (`present`). A shard written before the split was recorded names no tests: its missing
/// sibling is still named, with its tests unknown.
pub fn find(infos: &[&ShardInfo], present: &BTreeSet<String>) -> Gaps {
    let mut gaps = Gaps::default();
    let Some(count) = infos.iter().find_map(|i| i.count()) else {
        return gaps;
    };
    let here: BTreeSet<&str> = infos.iter().map(|i| i.shard.as_str()).collect();
    for k in 1..=count {
        let shard = format!("{k}/{count}");
        if !here.contains(shard.as_str()) {
            gaps.missing_shards.push(shard);
        }
    }
    for info in infos {
        for (test, k) in &info.split {
            if present.contains(test) || gaps.not_run.contains_key(test) {
                continue;
            }
            let shard = format!("{k}/{count}");
            let why = if here.contains(shard.as_str()) {
                format!("in no shard: shard {shard} did not run it (the shards split the suite from different histories)")
            } else {
                format!("shard {shard} missing")
            };
            gaps.not_run.insert(test.clone(), why);
        }
    }
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::shard::ShardBy;

    fn info(shard: &str, split: &[(&str, usize)]) -> ShardInfo {
        ShardInfo {
            shard: shard.into(),
            by: ShardBy::Count,
            digest: "d".into(),
            paths: Vec::new(),
            tags: Vec::new(),
            grep: None,
            grep_invert: None,
            filter: None,
            only_changed: None,
            split: split.iter().map(|(t, k)| (t.to_string(), *k)).collect(),
        }
    }

    #[test]
    fn a_missing_shard_names_its_tests() {
        let split = [("a", 1), ("b", 2), ("c", 3), ("d", 2)];
        let one = info("1/3", &split);
        let three = info("3/3", &split);
        let present: BTreeSet<String> = ["a", "c"].map(String::from).into();
        let gaps = find(&[&one, &three], &present);
        assert_eq!(gaps.missing_shards, vec!["2/3"]);
        assert_eq!(gaps.not_run.len(), 2);
        assert_eq!(gaps.not_run["b"], "shard 2/3 missing");
        // All there: no gaps.
        let two = info("2/3", &split);
        let all: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
        assert_eq!(find(&[&one, &two, &three], &all), Gaps::default());
    }

    #[test]
    fn a_test_in_no_shard_is_named_even_when_every_shard_came() {
        let one = info("1/2", &[("a", 1), ("b", 2)]);
        let two = info("2/2", &[("a", 2), ("b", 1)]);
        let gaps = find(&[&one, &two], &BTreeSet::new());
        assert!(gaps.missing_shards.is_empty());
        assert!(gaps.not_run["a"].starts_with("in no shard"), "{gaps:?}");
    }
}
