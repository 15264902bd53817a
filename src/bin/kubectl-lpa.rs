//! `kubectl lpa …`: the same program under the name kubectl looks for plugins.
include!("../main.rs");
