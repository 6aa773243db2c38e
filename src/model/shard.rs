//! Shards on the CI engine (docs/ci.md): `--shard auto` read from the CI's environment, and the
//! split of the selected root tests into N shards, by count (round-robin over the sorted paths)
//! or by duration (longest first into the least loaded shard, from each test's recent durations).
//! Every shard computes the same split from the same inputs, so N machines agree without talking.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// `--shard K/N`: the K-th (1-based) of N deterministic slices of the discovered root tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("--shard `{0}` is not of the form K/N (for example 1/3)")]
    Form(String),
    #[error("--shard `{0}`: K and N must be whole numbers")]
    Number(String),
    #[error("--shard `{0}`: N must be at least 1")]
    ZeroCount(String),
    #[error("--shard `{0}`: K must be between 1 and N ({1})")]
    OutOfRange(String, usize),
}

impl FromStr for Shard {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| ShardError::Form(s.to_string()))?;
        let index: usize = k
            .trim()
            .parse()
            .map_err(|_| ShardError::Number(s.to_string()))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| ShardError::Number(s.to_string()))?;
        if count == 0 {
            return Err(ShardError::ZeroCount(s.to_string()));
        }
        if index == 0 || index > count {
            return Err(ShardError::OutOfRange(s.to_string(), count));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether the root test at `position` (0-based, in sorted discovery order) is in this shard.
    /// Round-robin, so every test lands in exactly one shard and shards differ in size by ≤ 1.
    pub fn contains(&self, position: usize) -> bool {
        position % self.count == self.index - 1
    }
}

/// `--shard K/N` or `--shard auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    Fixed(Shard),
    /// From the CI's environment ([`from_env`]).
    Auto,
}

impl FromStr for ShardArg {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("auto") {
            Ok(Self::Auto)
        } else {
            s.parse().map(Self::Fixed)
        }
    }
}

/// `--shard-by`: how root tests are split into shards.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ShardBy {
    /// Round-robin over the sorted paths: shard sizes differ by at most one test.
    Count,
    /// Longest first into the least loaded shard, by each test's recent duration.
    Duration,
}

impl FromStr for ShardBy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "count" => Ok(Self::Count),
            "duration" => Ok(Self::Duration),
            other => Err(format!(
                "--shard-by `{other}`: expected `count` or `duration`"
            )),
        }
    }
}

impl fmt::Display for ShardBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Count => "count",
            Self::Duration => "duration",
        })
    }
}

/// How this suite's shard was split, recorded in its summary so `merge` can check that shards
/// belong together.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ShardInfo {
    /// `K/N`.
    pub shard: String,
    pub by: ShardBy,
    /// [`digest`] of the whole split.
    pub digest: String,
    /// The selection the split was made of (PATH arguments and tags): shards of one CI run share it.
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// `-g` and `--grep-invert` of the selection, so a merge is the same selection as an
    /// unsharded run with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grep: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grep_invert: Option<String>,
    /// `-E` and `--only-changed` of the selection, for the same reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_changed: Option<String>,
    /// The whole split: each selected root test and the shard (1-based K) that runs it, so a
    /// merge that lacks a shard can name the tests nobody ran. Empty in summaries written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub split: BTreeMap<String, usize>,
}

impl ShardInfo {
    /// N of `K/N`.
    pub fn count(&self) -> Option<usize> {
        self.shard.parse::<Shard>().ok().map(|s| s.count)
    }
}

/// Where `--shard auto` found its shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundShard {
    pub shard: Shard,
    /// The variables it came from, for the console: `CI_NODE_INDEX/CI_NODE_TOTAL (GitLab)`.
    pub from: String,
}

/// The CI engines `--shard auto` knows, in the order they are tried: (index variable, total
/// variable, whether the index is 0-based, the engine's name).
const ENGINES: [(&str, &str, bool, &str); 4] = [
    ("CI_NODE_INDEX", "CI_NODE_TOTAL", false, "GitLab"),
    ("CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", true, "CircleCI"),
    (
        "BUILDKITE_PARALLEL_JOB",
        "BUILDKITE_PARALLEL_JOB_COUNT",
        true,
        "Buildkite",
    ),
    (
        "JOB_COMPLETION_INDEX",
        "BUGATTI_SHARD_TOTAL",
        true,
        "a Kubernetes Indexed Job",
    ),
];

/// The shard the CI's environment names (`var` reads one variable): `BUGATTI_SHARD=K/N` first,
/// then each engine of [`ENGINES`]. `Ok(None)`: none found (the whole suite runs). A variable
/// that is there but wrong is an error naming it.
pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<FoundShard>, String> {
    if let Some(value) = var("BUGATTI_SHARD").filter(|v| !v.trim().is_empty()) {
        let shard: Shard = value
            .parse()
            .map_err(|e: ShardError| format!("BUGATTI_SHARD: {e}"))?;
        return Ok(Some(FoundShard {
            shard,
            from: "BUGATTI_SHARD".to_string(),
        }));
    }
    for (index_var, total_var, zero_based, engine) in ENGINES {
        let Some(index) = var(index_var).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        let total = var(total_var)
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                format!("--shard auto: {index_var} is set ({engine}) but {total_var} is not")
            })?;
        let number = |name: &str, value: &str| {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("--shard auto: {name} = `{value}` is not a whole number"))
        };
        let index = number(index_var, &index)? + usize::from(zero_based);
        let total = number(total_var, &total)?;
        let shard: Shard = format!("{index}/{total}")
            .parse()
            .map_err(|e: ShardError| format!("--shard auto from {index_var}/{total_var}: {e}"))?;
        return Ok(Some(FoundShard {
            shard,
            from: format!("{index_var}/{total_var} ({engine})"),
        }));
    }
    Ok(None)
}

/// The positions (into `tests`, sorted by path) that shard `shard` runs. By duration, each test
/// weighs its entry in `durations` (ms); a test without one weighs the median of the others.
pub fn split(
    tests: &[String],
    shard: Shard,
    by: ShardBy,
    durations: &BTreeMap<String, u64>,
) -> Vec<usize> {
    match by {
        ShardBy::Count => (0..tests.len()).filter(|i| shard.contains(*i)).collect(),
        ShardBy::Duration => {
            let owners = by_duration(tests, shard.count, durations);
            let mut mine: Vec<usize> = (0..tests.len())
                .filter(|i| owners[*i] == shard.index - 1)
                .collect();
            mine.sort_unstable();
            mine
        }
    }
}

/// The whole split: each test and the shard (1-based K of `K/count`) that runs it.
pub fn owners(
    tests: &[String],
    count: usize,
    by: ShardBy,
    durations: &BTreeMap<String, u64>,
) -> BTreeMap<String, usize> {
    let owners = match by {
        ShardBy::Count => (0..tests.len()).map(|i| i % count.max(1)).collect(),
        ShardBy::Duration => by_duration(tests, count, durations),
    };
    tests
        .iter()
        .cloned()
        .zip(owners.into_iter().map(|o| o + 1))
        .collect()
}

/// The shard (0-based) of each test, longest first into the least loaded shard. Ties go to the
/// lower path and the lower shard, so the split is the same on every machine.
fn by_duration(tests: &[String], count: usize, durations: &BTreeMap<String, u64>) -> Vec<usize> {
    let mut known: Vec<u64> = tests
        .iter()
        .filter_map(|t| durations.get(t).copied())
        .collect();
    known.sort_unstable();
    let median = known.get(known.len() / 2).copied().unwrap_or(1);
    let weight = |t: &String| durations.get(t).copied().unwrap_or(median);
    let mut order: Vec<usize> = (0..tests.len()).collect();
    order.sort_by(|a, b| {
        weight(&tests[*b])
            .cmp(&weight(&tests[*a]))
            .then_with(|| tests[*a].cmp(&tests[*b]))
    });
    let mut load = vec![0u64; count.max(1)];
    let mut owner = vec![0usize; tests.len()];
    for i in order {
        let (least, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(n, l)| (**l, *n))
            .unwrap_or((0, &0));
        owner[i] = least;
        load[least] += weight(&tests[i]);
    }
    owner
}

/// A short digest of the split (which shard holds which test), recorded in each shard's summary:
/// shards that computed different splits (from different histories) are told apart by `merge`.
pub fn digest(
    tests: &[String],
    count: usize,
    by: ShardBy,
    durations: &BTreeMap<String, u64>,
) -> String {
    use sha2::{Digest, Sha256};
    let owners = match by {
        ShardBy::Count => (0..tests.len()).map(|i| i % count.max(1)).collect(),
        ShardBy::Duration => by_duration(tests, count, durations),
    };
    let mut hasher = Sha256::new();
    for (test, owner) in tests.iter().zip(owners) {
        hasher.update(format!("{test}\t{owner}\n").as_bytes());
    }
    let hash = hasher.finalize();
    hash.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn shard(s: &str) -> Shard {
        s.parse().expect("shard")
    }

    #[test]
    fn each_engine_gives_the_same_shard_as_k_of_n() {
        let cases: [(&[(&str, &str)], &str); 5] = [
            (&[("BUGATTI_SHARD", "2/3")], "BUGATTI_SHARD"),
            (&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "3")], "GitLab"),
            (
                &[("CIRCLE_NODE_INDEX", "1"), ("CIRCLE_NODE_TOTAL", "3")],
                "CircleCI",
            ),
            (
                &[
                    ("BUILDKITE_PARALLEL_JOB", "1"),
                    ("BUILDKITE_PARALLEL_JOB_COUNT", "3"),
                ],
                "Buildkite",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "1"), ("BUGATTI_SHARD_TOTAL", "3")],
                "Kubernetes",
            ),
        ];
        for (vars, engine) in cases {
            let found = from_env(env(vars)).expect("ok").expect("found");
            assert_eq!(found.shard, shard("2/3"), "{engine}");
            assert!(found.from.contains(engine), "{}", found.from);
        }
        assert_eq!(from_env(env(&[])).expect("ok"), None);
    }

    #[test]
    fn a_wrong_variable_is_an_error_naming_it() {
        let e =
            from_env(env(&[("CI_NODE_INDEX", "4"), ("CI_NODE_TOTAL", "3")])).expect_err("range");
        assert!(e.contains("CI_NODE_INDEX"), "{e}");
        let e = from_env(env(&[
            ("CIRCLE_NODE_INDEX", "x"),
            ("CIRCLE_NODE_TOTAL", "3"),
        ]))
        .expect_err("number");
        assert!(e.contains("CIRCLE_NODE_INDEX = `x`"), "{e}");
        let e = from_env(env(&[("JOB_COMPLETION_INDEX", "0")])).expect_err("total");
        assert!(e.contains("BUGATTI_SHARD_TOTAL"), "{e}");
    }

    #[test]
    fn by_duration_the_long_test_gets_a_shard_of_its_own() {
        let tests: Vec<String> = ["a", "b", "c", "d", "e", "f", "slow"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut durations: BTreeMap<String, u64> = tests.iter().map(|t| (t.clone(), 500)).collect();
        durations.insert("slow".into(), 3000);
        let first = split(&tests, shard("1/2"), ShardBy::Duration, &durations);
        let second = split(&tests, shard("2/2"), ShardBy::Duration, &durations);
        assert_eq!(first, vec![6], "the slow test alone");
        assert_eq!(second, vec![0, 1, 2, 3, 4, 5]);
        // Every test exactly once, whatever the split.
        let count1 = split(&tests, shard("1/2"), ShardBy::Count, &durations);
        let count2 = split(&tests, shard("2/2"), ShardBy::Count, &durations);
        assert_eq!(count1.len() + count2.len(), tests.len());
        assert_ne!(
            digest(&tests, 2, ShardBy::Duration, &durations),
            digest(&tests, 2, ShardBy::Count, &durations)
        );
    }

    #[test]
    fn a_test_without_history_weighs_the_median() {
        let tests: Vec<String> = ["a", "b", "new"].iter().map(|s| s.to_string()).collect();
        let durations: BTreeMap<String, u64> =
            [("a".to_string(), 100), ("b".to_string(), 900)].into();
        let all: usize = (1..=2)
            .map(|k| {
                split(
                    &tests,
                    shard(&format!("{k}/2")),
                    ShardBy::Duration,
                    &durations,
                )
                .len()
            })
            .sum();
        assert_eq!(all, 3);
    }
}
