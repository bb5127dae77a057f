//! The report's picture: two heat maps side by side, kernels down, targets
//! across — theoretical occupancy (resident warps / the SM's maximum) and
//! the hot loop's FP32 math share — drawn with `plotters` into an SVG.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Report;
use crate::target::Sm;

const LABEL_W: i32 = 330;
const CELL_W: i32 = 58;
const CELL_H: i32 = 18;
const TOP: i32 = 64;
const GAP: i32 = 36;

/// Mix white towards `c` by `t` in `[0, 1]`.
pub(super) fn shade(c: (u8, u8, u8), t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let mix = |a: u8| (255.0 - (255.0 - f64::from(a)) * t).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// The report's SVG drawing area.
pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draw `s` at `(x, y)` in sans-serif of `size`, anchored horizontally at
/// `anchor` and centred vertically.
pub(super) fn draw_text(
    root: &Area<'_>,
    s: &str,
    (x, y): (i32, i32),
    size: f64,
    anchor: HPos,
    color: &RGBColor,
) {
    let style = TextStyle::from(("sans-serif", size).into_font())
        .pos(Pos::new(anchor, VPos::Center))
        .color(color);
    root.draw(&Text::new(s.to_string(), (x, y), style))
        .expect("svg text");
}

/// A heat-map cell's share as a percentage centred at `centre` (`–` when
/// there is none): white on the darkest cells, black elsewhere.
pub(super) fn share_label(root: &Area<'_>, value: Option<f64>, centre: (i32, i32)) {
    let shown = value.map_or("–".to_string(), |v| format!("{:.0}%", 100.0 * v));
    let ink = if value.is_some_and(|v| v >= 0.6) {
        WHITE
    } else {
        BLACK
    };
    draw_text(root, &shown, centre, 10.0, HPos::Center, &ink);
}

pub(super) fn render(report: &Report) -> String {
    let mut labels: Vec<String> = report.rows.iter().map(|r| r.label()).collect();
    labels.dedup();
    let cols = Sm::ALL.len() as i32;
    let panel_w = cols * CELL_W;
    let width = LABEL_W + 2 * panel_w + GAP + 16;
    let height = TOP + labels.len() as i32 * CELL_H + 40;
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (width as u32, height as u32)).into_drawing_area();
        root.fill(&WHITE).expect("svg fill");
        let text = |s: &str, x: i32, y: i32, size: f64, anchor: HPos| {
            draw_text(&root, s, (x, y), size, anchor, &BLACK)
        };
        text(
            &format!(
                "ptxsmith tuning report (ptxas {}, nvdisasm {})",
                report.tools.0, report.tools.1
            ),
            8,
            14,
            15.0,
            HPos::Left,
        );
        let panels = [
            (
                "theoretical occupancy (warps / SM max)",
                LABEL_W,
                (31, 119, 180),
            ),
            (
                "hot loop FP32 math share",
                LABEL_W + panel_w + GAP,
                (44, 160, 44),
            ),
        ];
        for (title, x0, _) in panels {
            text(title, x0, 34, 12.0, HPos::Left);
            for (j, sm) in Sm::ALL.iter().enumerate() {
                let x = x0 + j as i32 * CELL_W + CELL_W / 2;
                text(sm.name(), x, TOP - 12, 11.0, HPos::Center);
            }
        }
        for (i, label) in labels.iter().enumerate() {
            let y = TOP + i as i32 * CELL_H;
            text(label, LABEL_W - 6, y + CELL_H / 2, 10.0, HPos::Right);
            for (j, sm) in Sm::ALL.iter().enumerate() {
                let Some(row) = report
                    .rows
                    .iter()
                    .find(|r| &r.label() == label && r.sm == *sm)
                else {
                    continue;
                };
                let cells = [
                    Some(row.occupancy.fraction()),
                    row.hot.as_ref().map(|h| h.math_share()),
                ];
                for ((_, x0, color), value) in panels.iter().zip(cells) {
                    let x = x0 + j as i32 * CELL_W;
                    let fill = value.map_or(RGBColor(235, 235, 235), |v| shade(*color, v));
                    root.draw(&Rectangle::new(
                        [(x, y), (x + CELL_W - 1, y + CELL_H - 1)],
                        fill.filled(),
                    ))
                    .expect("svg cell");
                    share_label(&root, value, (x + CELL_W / 2, y + CELL_H / 2));
                }
            }
        }
        text(
            "grey: no SASS (nvdisasm 13.5 reads no sm_70 cubin) or no loop",
            8,
            height - 14,
            10.0,
            HPos::Left,
        );
        root.present().expect("svg present");
    }
    out
}
