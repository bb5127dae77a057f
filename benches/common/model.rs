//! The committed roofline model (`docs/roofline.tsv`, written by `cargo
//! run --release --example tuning_report` and kept in step by
//! `tests/tuning_report.rs`) for the benches: on a card of
//! `src/report/hardware.rs`, print the modeled time and share of the roof
//! next to the measured figure. Included by the GPU benches with
//! `#[path = "common/model.rs"] mod model;`.

#![allow(dead_code)] // each bench uses part of it

const TSV: &str = include_str!("../../docs/roofline.tsv");

/// One modeled figure.
pub struct Modeled {
    /// The card of the model's table.
    pub card: String,
    /// Modeled seconds (max(memory, issue per pipe, chain latency)).
    pub seconds: f64,
    /// Modeled share of the problem's (or kernel's) roof.
    pub share: f64,
}

/// The model of `problem` (the text after "family: " in the report, e.g.
/// `forward [4096, 4096]`) of `family`, for `kernel` (`*`: the whole
/// problem), on the card the driver names `device` with `sms` SMs.
pub fn lookup(
    device: &str,
    sms: u32,
    family: &str,
    problem: &str,
    kernel: &str,
) -> Option<Modeled> {
    TSV.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        let [card, token, n, _sm, fam, prob, k, t, share] = f[..] else {
            return None;
        };
        let same_card = n.parse() == Ok(sms) && same_card(device, token);
        if !(same_card && fam == family && prob == problem && k == kernel) {
            return None;
        }
        Some(Modeled {
            card: card.to_string(),
            seconds: t.parse().ok()?,
            share: share.parse().ok()?,
        })
    })
}

/// Words of a driver's device name that set a card apart from another of
/// the same chip and SM count (`FORM_TOKENS` of `src/report/hardware.rs`,
/// which the benches cannot import: the report is behind a feature).
const FORM_TOKENS: [&str; 1] = ["NVL"];

/// `Gpu::matches` of `src/report/hardware.rs` without the SM count: every
/// word of the row's `token` is a word of `device` (split at spaces and
/// dashes), and every form-factor word of `device` is in `token` (an
/// `NVIDIA H100 NVL` is not the H100 SXM's row).
fn same_card(device: &str, token: &str) -> bool {
    let words: Vec<&str> = device.split([' ', '-']).collect();
    let has = |w: &str| words.iter().any(|t| t.eq_ignore_ascii_case(w));
    let ours = |w: &str| token.split(' ').any(|t| t.eq_ignore_ascii_case(w));
    token.split(' ').all(has) && FORM_TOKENS.iter().all(|f| !has(f) || ours(f))
}

/// A line for the bench output: the model's figure, or why there is none.
pub fn line(device: &str, sms: u32, family: &str, problem: &str, kernel: &str) -> String {
    match lookup(device, sms, family, problem, kernel) {
        Some(m) => format!(
            "model ({}): {:.1} µs, {:.0} % of the roof",
            m.card,
            m.seconds * 1e6,
            100.0 * m.share
        ),
        None => format!(
            "model: no row for `{device}` ({sms} SMs) in docs/roofline.tsv (cards: src/report/hardware.rs)"
        ),
    }
}

/// Print `label`'s measured time next to the model's figure for it:
/// `measured` is `(per-launch seconds with launches queued, seconds of one
/// launch plus a synchronisation)`, timed by `benches/common/timing.rs`;
/// the ratio to the model uses the queued figure (the model has no launch
/// latency).
pub fn compare(
    label: &str,
    measured: (f64, f64),
    device: &str,
    sms: u32,
    family: &str,
    problem: &str,
    kernel: &str,
) {
    let (per, single) = measured;
    let m = format!(
        "measured {:.1} µs per launch (queued), {:.1} µs one launch + sync",
        per * 1e6,
        single * 1e6
    );
    match lookup(device, sms, family, problem, kernel) {
        Some(r) => println!(
            "{label}: {m}; model ({}) {:.1} µs, {:.0} % of the roof; measured / model = {:.2}",
            r.card,
            r.seconds * 1e6,
            100.0 * r.share,
            per / r.seconds
        ),
        None => println!(
            "{label}: {m}; {}",
            line(device, sms, family, problem, kernel)
        ),
    }
}

/// Panic unless the committed model has each `(family, problem)` for the
/// H100 SXM: the benches call it on the host, so a problem renamed in
/// `src/report/roofline/problems.rs` without the bench following fails
/// `cargo test --benches` instead of silently printing no model on a GPU.
pub fn check_rows(rows: &[(&str, &str)]) {
    for (family, problem) in rows {
        assert!(
            lookup("NVIDIA H100 80GB HBM3", 132, family, problem, "*").is_some(),
            "docs/roofline.tsv has no H100 row for {family}: {problem}"
        );
        // The NVL cards share the SXM parts' SM count: never their rows.
        for (device, card) in [
            ("NVIDIA H100 NVL", "H100 NVL"),
            ("NVIDIA H200 NVL", "H200 NVL"),
        ] {
            let m = lookup(device, 132, family, problem, "*");
            assert!(
                m.as_ref().is_none_or(|m| m.card == card),
                "{device} matched the row of {:?}",
                m.map(|m| m.card)
            );
        }
    }
    assert!(same_card("NVIDIA H100 80GB HBM3", "H100"));
    assert!(!same_card("NVIDIA H100 NVL", "H100"));
    assert!(same_card("NVIDIA H200 NVL", "H200 NVL"));
    assert!(!same_card("NVIDIA H200", "H200 NVL"));
}
