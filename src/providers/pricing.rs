//! What Codex's tokens cost. Codex reports tokens, not money (`turn.completed` usage); a price per
//! million tokens turns them into `cost_usd`, so that `max_cost_usd` can stop a Codex run as it
//! stops Claude Code. The price is `[provider] price_per_mtok` when given, else the built-in list
//! price of the model Codex runs, when the model is known (`-m` / `--model` / `-c model=…` in
//! `agent_args`, else `model` in the session's Codex `config.toml`, copied from the user's).

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

const fn price(input: f64, cached_input: f64, output: f64) -> PricePerMtok {
    PricePerMtok {
        input,
        cached_input: Some(cached_input),
        output,
    }
}

/// What a step cost, counted rather than believed (docs/providers.md, "Cost"): with a price, the
/// tokens × the price is the cost; what the CLI itself reported is kept beside it only when the
/// two disagree by more than 2× (Claude Code has reported ~10× too much). `None` without a price:
/// the CLI's own figure stands. Returns (cost, the reported cost recorded beside it).
pub fn counted(
    price: Option<PricePerMtok>,
    fresh_input: u64,
    cached_input: u64,
    output: u64,
    reported: Option<f64>,
) -> Option<(f64, Option<f64>)> {
    let p = price?;
    let mtok = |n: u64| n as f64 / 1_000_000.0;
    let cost = mtok(fresh_input) * p.input
        + mtok(cached_input) * p.cached_input.unwrap_or(p.input)
        + mtok(output) * p.output;
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
        let (cost, beside) = counted(p, 1_000_000, 1_000_000, 100_000, Some(48.0)).expect("priced");
        assert!((cost - 4.8).abs() < 1e-9, "{cost}");
        assert_eq!(beside, Some(48.0), "10x too high: kept beside");
        let (_, beside) = counted(p, 1_000_000, 1_000_000, 100_000, Some(6.0)).expect("priced");
        assert_eq!(beside, None, "within 2x: not kept");
        assert_eq!(
            counted(None, 1, 1, 1, Some(1.0)),
            None,
            "no price: the CLI's figure"
        );
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
}
