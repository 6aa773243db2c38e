//! What an agent's tokens cost (docs/providers.md, "Cost"). Codex reports tokens, not money
//! (`turn.completed` usage); a price per million tokens turns them into `cost_usd`, so that
//! `max_cost_usd` can stop a Codex run as it stops Claude Code. The price is `[provider]
//! price_per_mtok` when given, else the built-in list price of the model Codex runs, when the
//! model is known (`-m` / `--model` / `-c model=…` in `agent_args`, else `model` in the session's
//! Codex `config.toml`, copied from the user's). Claude Code reports money, but its figure has been
//! ten times too high: its tokens are counted at `price_per_mtok`, else at the built-in list price
//! of the model its `system/init` event names ([`claude_built_in`]).

use crate::model::config::PricePerMtok;
use std::path::Path;

/// Built-in list prices, US dollars per million tokens (input, cached input, output).
///
/// NEEDS CHECKING against https://openai.com/api/pricing before relying on it for money: these
/// are the list prices published for the models at the time of writing, as reported by
/// https://benchr.org/pricing/gpt-5-6 and https://apimaster.ai/blog/gpt-56-sol-terra-luna-preview-2026
/// (GPT-5.6 Sol $5 / $0.50 / $30, Terra $2.50 / $0.25 / $15, Luna $1 / $0.10 / $6; GPT-5.5 and
/// GPT-5.4 at the Sol and Terra rates, with the 90% cached-input discount). Codex 0.169 also
/// knows the GPT-6 models (gpt-6-astra, gpt-6.1-sol, gpt-6-luna); no price for them could be
/// cited, so they have none here: set `[provider] price_per_mtok` for them.
const BUILT_IN: &[(&str, PricePerMtok)] = &[
    ("gpt-5.6-sol", price(5.0, 0.5, 30.0)),
    ("gpt-5.6-terra", price(2.5, 0.25, 15.0)),
    ("gpt-5.6-luna", price(1.0, 0.1, 6.0)),
    ("gpt-5.5", price(5.0, 0.5, 30.0)),
    ("gpt-5.4", price(2.5, 0.25, 15.0)),
];

/// Built-in Claude list prices, US dollars per million tokens (input, cache hit, output), by
/// model family as [`claude_family`] names it, from Anthropic's pricing page
/// (https://platform.claude.com/docs/en/about-claude/pricing, "Model pricing"). Sonnet 5 and 5.5
/// are from third-party price lists that agree with each other (NEEDS CHECKING against that page:
/// Sonnet 5.5's cache hits were cut from $0.20 to $0.10 on 2026-10-07). Haiku 5.5 is priced by the
/// prompt's length, which one price cannot say: it has none here. Sonnet 4.5's dearer rate for
/// prompts over 200K tokens is not applied.
const CLAUDE: &[(&str, PricePerMtok)] = &[
    ("fable-5-1", price(10.0, 0.25, 50.0)),
    ("mythos-5-1", price(10.0, 0.25, 50.0)),
    ("fable-5", price(10.0, 1.0, 50.0)),
    ("mythos-5", price(10.0, 1.0, 50.0)),
    ("opus-5", price(5.0, 0.5, 25.0)),
    ("opus-4-8", price(5.0, 0.5, 25.0)),
    ("opus-4-7", price(5.0, 0.5, 25.0)),
    ("opus-4-6", price(5.0, 0.5, 25.0)),
    ("opus-4-5", price(5.0, 0.5, 25.0)),
    ("opus-4-1", price(15.0, 1.5, 75.0)),
    ("opus-4", price(15.0, 1.5, 75.0)),
    ("sonnet-5-5", price(2.0, 0.1, 10.0)),
    ("sonnet-5", price(2.0, 0.2, 10.0)),
    ("sonnet-4-6", price(3.0, 0.3, 15.0)),
    ("sonnet-4-5", price(3.0, 0.3, 15.0)),
    ("sonnet-4", price(3.0, 0.3, 15.0)),
    ("3-7-sonnet", price(3.0, 0.3, 15.0)),
    ("haiku-4-5", price(1.0, 0.1, 5.0)),
    ("3-5-haiku", price(0.8, 0.08, 4.0)),
    ("3-opus", price(15.0, 1.5, 75.0)),
    ("3-haiku", price(0.25, 0.03, 1.25)),
];

/// What a prompt-cache write costs against the input price: Anthropic's 5-minute writes are
/// 1.25 × input, one-hour writes 2 × (the pricing page's "5m" and "1h cache writes").
const CACHE_WRITE_FACTOR: f64 = 1.25;
const CACHE_WRITE_1H_FACTOR: f64 = 2.0;

const fn price(input: f64, cached_input: f64, output: f64) -> PricePerMtok {
    PricePerMtok {
        input,
        cached_input: Some(cached_input),
        output,
    }
}

/// A turn's tokens as Claude Code reports them: fresh input, prompt-cache writes and hits, output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub fresh_input: u64,
    /// Prompt-cache writes, of which `cache_write_1h` were one-hour writes.
    pub cache_write: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
    pub output: u64,
}

/// What a step cost, counted rather than believed (docs/providers.md, "Cost"): with a price, the
/// tokens × the price is the cost (cache writes at 1.25 × input, one-hour ones 2 ×); what the CLI
/// itself reported is kept beside it only when the two disagree by more than 2× (Claude Code has
/// reported ~10× too much). `None` without a price: the CLI's own figure stands. Returns (cost,
/// the reported cost recorded beside it).
pub fn counted(
    price: Option<PricePerMtok>,
    tokens: Tokens,
    reported: Option<f64>,
) -> Option<(f64, Option<f64>)> {
    let p = price?;
    let mtok = |n: u64| n as f64 / 1_000_000.0;
    let cost = mtok(tokens.fresh_input) * p.input
        + mtok(tokens.cache_write.saturating_sub(tokens.cache_write_1h))
            * p.input
            * CACHE_WRITE_FACTOR
        + mtok(tokens.cache_write_1h.min(tokens.cache_write)) * p.input * CACHE_WRITE_1H_FACTOR
        + mtok(tokens.cache_read) * p.cached_input.unwrap_or(p.input)
        + mtok(tokens.output) * p.output;
    let apart = reported.filter(|r| *r > 2.0 * cost || cost > 2.0 * *r);
    Some((cost, apart))
}

/// The built-in price of `model`, if it has one.
pub fn built_in(model: &str) -> Option<PricePerMtok> {
    BUILT_IN
        .iter()
        .find(|(name, _)| *name == model)
        .map(|(_, p)| *p)
}

/// A Claude model id as its family: `claude-sonnet-4-5-20250929` → `sonnet-4-5`,
/// `claude-opus-4-6[1m]` → `opus-4-6`, `claude-3-5-haiku-20241022` → `3-5-haiku`, Bedrock's
/// `anthropic.claude-sonnet-4-5-20250929-v1:0` and Vertex's `claude-sonnet-4-5@20250929` alike.
pub fn claude_family(model: &str) -> String {
    let model = model.trim().to_ascii_lowercase();
    let model = match model.find("claude-") {
        Some(at) => &model[at + "claude-".len()..],
        None => model.as_str(),
    };
    // `[1m]` (the long context), `@date` (Vertex), `:0` (Bedrock's revision).
    let model = model.split(['[', '@', ':']).next().unwrap_or(model);
    let mut parts: Vec<&str> = model.split('-').collect();
    // Bedrock's `-v1`, then the date.
    if parts.last().is_some_and(|p| {
        p.len() > 1 && p.starts_with('v') && p[1..].bytes().all(|b| b.is_ascii_digit())
    }) {
        parts.pop();
    }
    if parts
        .last()
        .is_some_and(|p| p.len() == 8 && p.bytes().all(|b| b.is_ascii_digit()))
    {
        parts.pop();
    }
    parts.join("-")
}

/// The built-in list price of the Claude model `model` (an id as Claude Code's `system/init`
/// names it), if it has one.
pub fn claude_built_in(model: &str) -> Option<PricePerMtok> {
    let family = claude_family(model);
    CLAUDE
        .iter()
        .find(|(name, _)| *name == family)
        .map(|(_, p)| *p)
}

/// The model `agent_args` choose: `-m M`, `--model M`, `--model=M`, `-c model=M` (TOML or bare).
pub fn model_from_args(args: &[String]) -> Option<String> {
    let mut model = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "-m" || word == "--model" {
            model = words.next().cloned();
        } else if let Some(m) = word.strip_prefix("--model=") {
            model = Some(m.to_string());
        } else if word == "-c" || word == "--config" {
            if let Some(m) = words.next().and_then(|kv| kv.strip_prefix("model=")) {
                model = Some(m.trim_matches('"').trim_matches('\'').to_string());
            }
        }
    }
    model
}

/// `model` at the top of a Codex `config.toml` (unreadable or absent: `None`).
pub fn model_from_config(config_toml: &Path) -> Option<String> {
    let text = std::fs::read_to_string(config_toml).ok()?;
    let table: toml::Table = text.parse().ok()?;
    table.get("model")?.as_str().map(str::to_string)
}

/// The price Codex's tokens are counted at, and where it comes from (for `check` and messages).
pub fn codex_price(
    configured: Option<PricePerMtok>,
    agent_args: &[String],
    config_toml: Option<&Path>,
) -> Result<(PricePerMtok, String), String> {
    if let Some(p) = configured {
        return Ok((p, "[provider] price_per_mtok".into()));
    }
    let model = model_from_args(agent_args)
        .map(|m| (m, "agent_args"))
        .or_else(|| {
            config_toml
                .and_then(model_from_config)
                .map(|m| (m, "config.toml"))
        });
    match model {
        Some((m, from)) => match built_in(&m) {
            Some(p) => Ok((p, format!("built-in list price of {m} (model from {from})"))),
            None => Err(format!(
                "no built-in price for the model {m} (from {from}): set [provider] price_per_mtok"
            )),
        },
        None => Err(
            "the model is Codex's default, unknown here: set [provider] \
                     price_per_mtok (or the model with -m in agent_args)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_reported_cost_far_from_the_counted_one_is_kept_beside_not_used() {
        let p = Some(price(3.0, 0.3, 15.0));
        // 1M fresh in, 1M cached in, 0.1M out: $3 + $0.30 + $1.50 = $4.80.
        let tokens = Tokens {
            fresh_input: 1_000_000,
            cache_read: 1_000_000,
            output: 100_000,
            ..Tokens::default()
        };
        let (cost, beside) = counted(p, tokens, Some(48.0)).expect("priced");
        assert!((cost - 4.8).abs() < 1e-9, "{cost}");
        assert_eq!(beside, Some(48.0), "10x too high: kept beside");
        let (_, beside) = counted(p, tokens, Some(6.0)).expect("priced");
        assert_eq!(beside, None, "within 2x: not kept");
        assert_eq!(
            counted(None, tokens, Some(1.0)),
            None,
            "no price: the CLI's figure"
        );
        // A cache write costs 1.25 × input: 1M at $3 → $3.75.
        let writes = Tokens {
            cache_write: 1_000_000,
            ..Tokens::default()
        };
        let (cost, _) = counted(p, writes, None).expect("priced");
        assert!((cost - 3.75).abs() < 1e-9, "{cost}");
        // A one-hour write costs 2 × input: half of 1M at $3.75, half at $6 → $4.875.
        let hour = Tokens {
            cache_write: 1_000_000,
            cache_write_1h: 500_000,
            ..Tokens::default()
        };
        let (cost, _) = counted(p, hour, None).expect("priced");
        assert!((cost - 4.875).abs() < 1e-9, "{cost}");
    }

    use super::*;

    #[test]
    fn the_model_is_read_from_codex_flags() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            model_from_args(&args(&["-m", "gpt-5.5", "-c", "x=1"])),
            Some("gpt-5.5".into())
        );
        assert_eq!(
            model_from_args(&args(&["-c", "model=\"gpt-5.4\""])),
            Some("gpt-5.4".into())
        );
        assert_eq!(
            model_from_args(&args(&["--model=gpt-5.6-luna"])),
            Some("gpt-5.6-luna".into())
        );
        assert_eq!(model_from_args(&args(&["-c", "model_provider=x"])), None);
    }

    #[test]
    fn tokens_cost_what_the_price_says() {
        let p = built_in("gpt-5.5").expect("priced");
        // 1M fresh input at $5, 1M cached at $0.50, 1M output at $30.
        let cost = p.cost_usd(2_000_000, 1_000_000, 1_000_000);
        assert!((cost - 35.5).abs() < 1e-9, "{cost}");
        assert!(codex_price(None, &[], None).is_err());
    }

    #[test]
    fn claude_models_have_built_in_prices_by_family() {
        for (id, family) in [
            ("claude-sonnet-4-5-20250929", "sonnet-4-5"),
            ("claude-opus-4-6[1m]", "opus-4-6"),
            ("claude-3-5-haiku-20241022", "3-5-haiku"),
            ("anthropic.claude-sonnet-4-5-20250929-v1:0", "sonnet-4-5"),
            ("claude-sonnet-4-5@20250929", "sonnet-4-5"),
            ("claude-opus-4-20250514", "opus-4"),
            ("claude-fable-5-1", "fable-5-1"),
        ] {
            assert_eq!(claude_family(id), family, "{id}");
        }
        let sonnet = claude_built_in("claude-sonnet-4-5-20250929").expect("sonnet 4.5");
        assert_eq!(sonnet, price(3.0, 0.3, 15.0));
        // Opus 4.5 and later cost a third of Opus 4 / 4.1.
        assert_eq!(
            claude_built_in("claude-opus-4-5-20251101"),
            Some(price(5.0, 0.5, 25.0))
        );
        assert_eq!(
            claude_built_in("claude-opus-4-1-20250805"),
            Some(price(15.0, 1.5, 75.0))
        );
        assert_eq!(
            claude_built_in("claude-haiku-4-5-20251001"),
            Some(price(1.0, 0.1, 5.0))
        );
        // The cost is the tokens × the price: 1000 fresh in, 2000 cache writes, 10 000 cache
        // hits and 200 out on Sonnet 4.5 = $0.003 + $0.0075 + $0.003 + $0.003.
        let tokens = Tokens {
            fresh_input: 1000,
            cache_write: 2000,
            cache_write_1h: 0,
            cache_read: 10_000,
            output: 200,
        };
        let (cost, _) = counted(Some(sonnet), tokens, None).expect("priced");
        assert!((cost - 0.0165).abs() < 1e-12, "{cost}");
        // No price for a model not on the list (Haiku 5.5's price depends on the prompt's
        // length), nor for a stand-in: the CLI's own figure stands.
        assert_eq!(claude_built_in("claude-haiku-5-5"), None);
        assert_eq!(claude_built_in("claude-fake"), None);
        assert_eq!(claude_built_in("<synthetic>"), None);
    }
}
