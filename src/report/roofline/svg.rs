//! The roofline picture: a heat map of each problem's modeled share of its
//! roof (problems down, cards across), the cell outlined green where the
//! issue's goal is met and red where it is not.

use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use super::Roofline;
use super::problems::Roof;
use crate::report::svg::{draw_text, shade, share_label};

const LABEL_W: i32 = 470;
const CELL_W: i32 = 78;
const CELL_H: i32 = 20;
const TOP: i32 = 70;

pub(super) fn render(r: &Roofline) -> String {
    let Some(first) = r.gpus.first() else {
        return String::new();
    };
    let rows = first.problems.len() as i32;
    let cols = r.gpus.len() as i32;
    let width = LABEL_W + cols * CELL_W + 16;
    let height = TOP + rows * CELL_H + 56;
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (width as u32, height as u32)).into_drawing_area();
        root.fill(&WHITE).expect("svg fill");
        let text = |s: &str, x: i32, y: i32, size: f64, anchor: HPos| {
            draw_text(&root, s, (x, y), size, anchor, &BLACK)
        };
        text(
            "ptxsmith roofline model: modeled share of each problem's roof",
            8,
            14,
            15.0,
            HPos::Left,
        );
        text(
            "blue: memory roof (essential bytes / bandwidth); orange: FP32 roof (useful FP32 instructions / peak); outline: goal met (green) / not met (red)",
            8,
            34,
            10.0,
            HPos::Left,
        );
        for (j, g) in r.gpus.iter().enumerate() {
            let x = LABEL_W + j as i32 * CELL_W + CELL_W / 2;
            text(g.gpu.name, x, TOP - 22, 10.0, HPos::Center);
            text(g.gpu.sm.name(), x, TOP - 9, 9.0, HPos::Center);
        }
        for (i, p) in first.problems.iter().enumerate() {
            let y = TOP + i as i32 * CELL_H;
            let label = format!("{}: {}", p.family, p.problem);
            text(&label, LABEL_W - 6, y + CELL_H / 2, 10.0, HPos::Right);
            for (j, g) in r.gpus.iter().enumerate() {
                let row = &g.problems[i];
                let x = LABEL_W + j as i32 * CELL_W;
                let color = match row.roof {
                    Roof::Memory => (31, 119, 180),
                    Roof::Fp32 => (230, 120, 20),
                    Roof::Tensor(_) => (44, 160, 44),
                };
                let value = row.share(&g.gpu);
                let fill = value.map_or(RGBColor(235, 235, 235), |v| shade(color, v));
                root.draw(&Rectangle::new(
                    [(x, y), (x + CELL_W - 1, y + CELL_H - 1)],
                    fill.filled(),
                ))
                .expect("svg cell");
                if let Some(met) = row.goal.as_ref().and_then(|g| g.met) {
                    let c = if met {
                        RGBColor(0, 150, 0)
                    } else {
                        RGBColor(210, 0, 0)
                    };
                    root.draw(&Rectangle::new(
                        [(x + 1, y + 1), (x + CELL_W - 2, y + CELL_H - 2)],
                        c.stroke_width(2),
                    ))
                    .expect("svg outline");
                }
                share_label(&root, value, (x + CELL_W / 2, y + CELL_H / 2));
            }
        }
        text(
            "grey: no SASS (nvdisasm 13.5 reads no sm_70 cubin) or no kernel (tensor cores below sm_80). Modeled time = max(memory, issue): a lower bound. Tables: tuning.md, \"Roofline model\".",
            8,
            height - 20,
            10.0,
            HPos::Left,
        );
        root.present().expect("svg present");
    }
    out
}
