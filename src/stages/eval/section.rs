//! What a run's `[eval]` section asks for and how it is recorded: whether it
//! keeps a cache or calls a model, the Maia nets it reads, the section
//! without URL credentials, and the player it names. Apart so `run` can ask
//! these of a section without running an eval.

use anyhow::Result;
use std::path::PathBuf;

use super::config::EvalConfig;
use super::players::ModelSpec;
use crate::core::error::bad_input;

/// Whether the eval keeps answers or the Maia nets' probabilities in its
/// cache: a model behind an HTTP endpoint, a Maia player or the human
/// ladder (`run` keeps that cache beside the release).
pub(crate) fn keeps_a_cache(config: &EvalConfig) -> bool {
    calls_a_model(config)
        || config.maia.ladder
        || matches!(
            config.model.as_deref().map(ModelSpec::parse),
            Some(Ok(ModelSpec::Maia { .. }))
        )
}

/// The Maia net files an eval with `config` reads, those that exist: the
/// nine of the ladder, or a Maia player's own (`run` fingerprints the eval
/// stage with them).
pub(crate) fn maia_inputs(config: &EvalConfig) -> Vec<PathBuf> {
    let ratings: Vec<u32> = if config.maia.ladder && config.maia.models_dir.is_dir() {
        crate::maia::MAIA_RATINGS.to_vec()
    } else {
        match config.model.as_deref().map(ModelSpec::parse) {
            Some(Ok(ModelSpec::Maia { rating, .. })) => vec![rating],
            _ => Vec::new(),
        }
    };
    ratings
        .into_iter()
        .map(|r| {
            config
                .maia
                .models_dir
                .join(crate::maia::weight_file_name(r))
        })
        .filter(|path| path.is_file())
        .collect()
}

/// Whether the configured player is a model behind an HTTP endpoint (whose
/// answers are cached), not a built-in baseline.
pub(crate) fn calls_a_model(config: &EvalConfig) -> bool {
    matches!(
        config.model.as_deref().map(ModelSpec::parse),
        Some(Ok(ModelSpec::OpenAi { .. }))
    )
}

/// `[eval]` as a record may show it: a model's base URL with its
/// credentials redacted (`run` fingerprints the eval stage with this, so no
/// secret reaches `stage.json`).
pub(crate) fn section_for_records(config: &EvalConfig) -> EvalConfig {
    match config.model.as_deref().map(ModelSpec::parse) {
        Some(Ok(model)) => recorded_config(config, &model),
        _ => config.clone(),
    }
}

/// The settings as recorded in the run's files: a model's base URL with
/// its credentials redacted.
pub(super) fn recorded_config(config: &EvalConfig, model: &ModelSpec) -> EvalConfig {
    let mut recorded = config.clone();
    if let ModelSpec::OpenAi { .. } = model {
        recorded.model = Some(model.label());
    }
    recorded
}

/// The player of a run: `config.model` (the `--model` flag over it).
pub(super) fn player_of(config: &EvalConfig) -> Result<ModelSpec> {
    if config.repeats == 0 {
        return Err(bad_input("--repeats must be at least 1"));
    }
    match &config.model {
        Some(model) => ModelSpec::parse(model),
        None => Err(bad_input(
            "eval needs a player: --model SPEC, or eval.model in the config",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_of_the_section_keep_no_url_credentials() {
        let config = EvalConfig {
            model: Some("openai:m@http://user:url-pass-4711@127.0.0.1:9/v1?api-key=q-0815".into()),
            ..EvalConfig::default()
        };
        let recorded = serde_json::to_string(&section_for_records(&config)).unwrap();
        assert!(!recorded.contains("url-pass-4711"), "{recorded}");
        assert!(!recorded.contains("q-0815"), "{recorded}");
        assert!(recorded.contains("api-key=[redacted]"), "{recorded}");
        // A built-in player has nothing to hide and is recorded as written.
        let baseline = EvalConfig {
            model: Some("random".into()),
            ..EvalConfig::default()
        };
        assert_eq!(
            serde_json::to_value(section_for_records(&baseline)).unwrap(),
            serde_json::to_value(&baseline).unwrap()
        );
    }
}
