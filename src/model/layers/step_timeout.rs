//! A step's timeout, resolved once: its own `timeout_secs`, else the provider's
//! `step_timeout_secs` from whichever layer set it, as a `Sourced<Duration>` that knows where it
//! came from; and the one range check every written value goes through (docs/config.md).

use std::time::Duration;

use super::{problem, Layer, LayerProblem, ProviderSettings, Sourced};

/// The longest step timeout accepted: a week. A step is an agent's turn, not a batch job; a
/// larger number is a typo, and one near `u64::MAX` would overflow the clocks it is added to.
pub const MAX_STEP_TIMEOUT_SECS: u64 = 7 * 24 * 60 * 60;

/// Why a written step timeout is refused, in words that end a sentence naming the value.
pub fn out_of_range(secs: u64) -> Option<String> {
    (!(1..=MAX_STEP_TIMEOUT_SECS).contains(&secs))
        .then(|| format!("must be from 1 to {MAX_STEP_TIMEOUT_SECS} seconds (a week), not {secs}"))
}

impl ProviderSettings {
    /// The timeout of a step that sets `own` (its `timeout_secs`, or None): its own wins over
    /// every layer of `step_timeout_secs`, the command line's too.
    pub fn step_timeout(&self, own: Option<u64>) -> Sourced<Duration> {
        match own {
            Some(secs) => Sourced {
                value: Duration::from_secs(secs),
                source: Layer::Step,
                origin: None,
            },
            None => Sourced {
                value: Duration::from_secs(self.step_timeout_secs.value),
                source: self.step_timeout_secs.source,
                origin: self.step_timeout_secs.origin.clone(),
            },
        }
    }

    /// The range check of the effective `step_timeout_secs`, naming where it was written: the
    /// file (by its origin), `BUGATTI_STEP_TIMEOUT` or `--step-timeout`.
    pub(super) fn check_step_timeout(&self) -> Option<LayerProblem> {
        let timeout = &self.step_timeout_secs;
        let why = out_of_range(timeout.value)?;
        let name = match timeout.source {
            Layer::Flag => "--step-timeout",
            Layer::Env => "BUGATTI_STEP_TIMEOUT",
            _ => "`step_timeout_secs`",
        };
        Some(problem(format!("{name} {why}"), timeout.origin.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_is_one_second_to_a_week() {
        assert!(out_of_range(0).is_some());
        assert_eq!(out_of_range(1), None);
        assert_eq!(out_of_range(MAX_STEP_TIMEOUT_SECS), None);
        let huge = out_of_range(u64::MAX).expect("refused");
        assert!(huge.contains(&MAX_STEP_TIMEOUT_SECS.to_string()), "{huge}");
    }

    #[test]
    fn a_steps_own_timeout_wins_over_every_layer() {
        let mut provider = super::super::EffectiveConfig::default().provider;
        provider.step_timeout_secs.set(40, Layer::Flag, None);
        let own = provider.step_timeout(Some(7));
        assert_eq!(
            (own.value, own.source),
            (Duration::from_secs(7), Layer::Step)
        );
        let layered = provider.step_timeout(None);
        assert_eq!(
            (layered.value, layered.source),
            (Duration::from_secs(40), Layer::Flag)
        );
    }
}
