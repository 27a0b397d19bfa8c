//! The page: one section per experiment with its title, label, provenance, plots (as `<img>` of
//! the SVG files beside it), tables and notes; an error box for an experiment that did not run.
//! Static: no network, no external script or font; one small inline script counts the plots
//! whose images loaded, for the headless-browser check (`data-plots-loaded` on `<body>`).

use std::fmt::Write as _;

use crate::view::{Block, Table};
use crate::{Label, ResultFile};

/// One section as the page shows it: the file, and its blocks with each plot's SVG file name.
#[derive(Debug)]
pub struct SectionPage<'a> {
    pub file: &'a ResultFile,
    pub blocks: Vec<PageBlock>,
}

/// A block with its plot drawn: the SVG's file name (relative to the page) and alt text.
#[derive(Debug)]
pub enum PageBlock {
    Heading(String),
    Plot {
        svg: String,
        alt: String,
    },
    Table(Table),
    Note(String),
    /// A folded group (`<details>`), its blocks drawn.
    Fold {
        summary: String,
        blocks: Vec<PageBlock>,
    },
}

impl PageBlock {
    /// A block that needs no drawing as it is on the page (plots, and folded groups that may
    /// hold some, are drawn first: see `render`).
    #[must_use]
    pub fn of(block: Block) -> Option<PageBlock> {
        match block {
            Block::Plot(_) | Block::Fold { .. } => None,
            Block::Heading(t) => Some(PageBlock::Heading(t)),
            Block::Table(t) => Some(PageBlock::Table(t)),
            Block::Note(n) | Block::NoData(n) => Some(PageBlock::Note(n)),
        }
    }
}

const STYLE: &str = "\
body{font-family:sans-serif;margin:2em auto;max-width:1600px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{font-size:1.25em;border-top:1px solid #ccc;padding-top:1em}\
.label{display:inline-block;padding:0 .5em;border-radius:.3em;font-size:.85em;color:#fff}\
.measured{background:#0072b2}.modelled{background:#d55e00}.measured_and_modelled{background:#009e73}\
.prov{color:#555;font-size:.85em}\
.plots{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}\
.plots img{width:calc(50% - 1em);min-width:480px;max-width:760px;height:auto;border:1px solid #ddd}h3{font-size:1.05em;margin:1.2em 0 .4em}\
table{border-collapse:collapse;margin:.8em 0;font-size:.85em}\
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{background:#f3f3f3}\
td:first-child,th:first-child,td.t{text-align:left}caption{text-align:left;font-weight:bold;padding:.3em 0}\
.note{color:#555;font-style:italic}\
.error{border:2px solid #c00;background:#fee;padding:.6em 1em;white-space:pre-wrap}\
nav ul{list-style:none;padding-left:1em}nav li{margin:.15em 0}\
details{margin:.8em 0}summary{cursor:pointer;font-weight:bold;font-size:.95em}\
td.verdict{font-weight:bold;white-space:nowrap}td.reproduced{color:#070}td.differs{color:#a50}\
td.not-reproducible{color:#a00}";

/// Counts the images that loaded with a size, after the page's load event.
const CHECK_SCRIPT: &str = "window.addEventListener('load',function(){\
var n=0,all=document.querySelectorAll('img.plot');\
all.forEach(function(i){if(i.complete&&i.naturalWidth>0&&i.naturalHeight>0){n++}});\
document.body.setAttribute('data-plots-loaded',String(n));\
document.body.setAttribute('data-plots-total',String(all.length));});";

/// The whole page.
#[must_use]
pub fn page(sections: &[SectionPage<'_>], board: &Board<'_>) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Lull results</title><style>{STYLE}</style><script>{CHECK_SCRIPT}</script></head>\n<body>\n\
<h1>Lull results</h1>\n<p>One section per experiment of <code>lull reproduce</code>. \
<span class=\"label measured\">measured</span> figures were measured on the machine named in the \
section; <span class=\"label modelled\">modelled</span> figures come from the simulator; the seeds' \
figures are shown as numbers beside ours where the results carry them.</p>\n"
    );
    scoreboard(&mut h, board, sections);
    h.push_str("<nav><ul>\n");
    for s in sections {
        let _ = writeln!(
            h,
            "<li>{}. <a href=\"#{}\">{}</a> {}</li>",
            s.file.index,
            esc(&s.file.section),
            esc(&s.file.title),
            label_badge(s.file.label)
        );
    }
    h.push_str("</ul></nav>\n");
    for s in sections {
        section(&mut h, s);
    }
    h.push_str("</body></html>\n");
    h
}

fn label_badge(l: Label) -> String {
    let class = match l {
        Label::Measured => "measured",
        Label::Modelled => "modelled",
        Label::MeasuredAndModelled => "measured_and_modelled",
    };
    format!("<span class=\"label {class}\">{l}</span>")
}

fn section(h: &mut String, s: &SectionPage<'_>) {
    let f = s.file;
    let p = &f.provenance;
    let m = &p.machine;
    let _ = write!(
        h,
        "<section id=\"{id}\">\n<h2>{i}. {title} {badge}</h2>\n<p class=\"prov\">{host} ({arch}, {cpus} CPUs, {cpu}, {mem} MiB), \
kernel {kernel}, commit {commit}, {date}; took {secs:.1} s. Results file: <code>results/{id}.json</code></p>\n",
        id = esc(&f.section),
        i = f.index,
        title = esc(&f.title),
        badge = label_badge(f.label),
        host = esc(&m.hostname),
        arch = esc(&m.arch),
        cpus = m.cpus,
        cpu = esc(if m.cpu_model.is_empty() { "CPU model unknown" } else { &m.cpu_model }),
        mem = m.memory_mib,
        kernel = esc(&p.kernel),
        commit = esc(&p.commit),
        date = esc(&p.date),
        secs = f.elapsed_s,
    );
    if let crate::Outcome::Error(why) = &f.outcome {
        let _ = writeln!(
            h,
            "<div class=\"error\"><strong>This experiment did not run:</strong> {}</div>",
            esc(why)
        );
    }
    blocks(h, &s.blocks);
    h.push_str("</section>\n");
}

/// `list` in order, consecutive plots side by side in one `.plots` row.
fn blocks(h: &mut String, list: &[PageBlock]) {
    let mut in_plots = false;
    for b in list {
        let is_plot = matches!(b, PageBlock::Plot { .. });
        if is_plot && !in_plots {
            h.push_str("<div class=\"plots\">\n");
        } else if !is_plot && in_plots {
            h.push_str("</div>\n");
        }
        in_plots = is_plot;
        match b {
            PageBlock::Plot { svg, alt } => {
                let _ = writeln!(
                    h,
                    "<img class=\"plot\" src=\"{}\" alt=\"{}\">",
                    esc(svg),
                    esc(alt)
                );
            }
            PageBlock::Table(t) => table(h, t),
            PageBlock::Heading(t) => {
                let _ = writeln!(h, "<h3>{}</h3>", esc(t));
            }
            PageBlock::Note(n) => {
                let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(n));
            }
            PageBlock::Fold {
                summary,
                blocks: inner,
            } => {
                let _ = writeln!(h, "<details><summary>{}</summary>", esc(summary));
                blocks(h, inner);
                h.push_str("</details>\n");
            }
        }
    }
    if in_plots {
        h.push_str("</div>\n");
    }
}

fn table(h: &mut String, t: &Table) {
    let _ = write!(h, "<table><caption>{}</caption><tr>", esc(&t.title));
    for c in &t.header {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>\n");
    for r in &t.rows {
        h.push_str("<tr>");
        for c in r {
            // Numbers align right for comparison down a column; words read from the left.
            let class = if numeric(c) { "" } else { " class=\"t\"" };
            let _ = write!(h, "<td{class}>{}</td>", esc(c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// A table cell that is a number (with an optional sign, unit percent, or the dash for none).
fn numeric(cell: &str) -> bool {
    let c = cell.trim().trim_end_matches('%').trim();
    c == "–" || c.parse::<f64>().is_ok()
}

/// HTML-escapes text for element content and double-quoted attributes.
#[must_use]
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The scoreboard and the evidence it used.
pub struct Board<'a> {
    pub rows: &'a [crate::scoreboard::Row],
    pub evidence: Option<&'a crate::scoreboard::Evidence>,
}

fn figure(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    }
}

/// The seed claims against this run's figures (docs/seed-verdicts.md).
fn scoreboard(h: &mut String, board: &Board<'_>, sections: &[SectionPage<'_>]) {
    use crate::scoreboard::Verdict;
    h.push_str("<section id=\"scoreboard\">\n<h2>Seed claims: scoreboard</h2>\n");
    match board.evidence {
        Some(e) => {
            let _ = writeln!(
                h,
                "<p>Our figures from this run's results; the seeds' figures, tolerances and causes from the \
sensitivity sweeps (<code>{}</code>, {}, {} runs in {:.0} s; docs/seed-verdicts.md). Reproduced: within the \
tolerance of the seed's figure and, for a change, of its sign; differs: the sweep found where the seed's \
figure holds; not reproducible here: no figure, or no swept point gives it.</p>",
                esc(&e.command),
                esc(&e.date),
                e.runs,
                e.elapsed_s
            );
        }
        None => h.push_str(
            "<p class=\"note\">No sweep evidence beside these results (<code>seed-verdicts.json</code>): \
the seeds' figures and causes are unknown to this page.</p>\n",
        ),
    }
    h.push_str("<table><tr><th>seed claim</th><th>seed</th><th>ours</th><th>sweep at defaults</th><th>verdict</th><th>cause / why</th><th>section</th></tr>\n");
    for r in board.rows {
        let unit = r.seed.as_ref().map_or("", |s| s.1.as_str());
        let seed = r.seed.as_ref().map_or_else(
            || "-".to_owned(),
            |(v, u, src)| {
                format!(
                    "{} {} <span class=\"note\">({})</span>",
                    figure(*v),
                    esc(u),
                    esc(src)
                )
            },
        );
        let ours = match &r.ours {
            Ok(v) => format!("{} {}", figure(*v), esc(unit)),
            Err(_) => "-".to_owned(),
        };
        let sweep = r.sweep_default.map_or_else(
            || "-".to_owned(),
            |v| format!("{} {}", figure(v), esc(unit)),
        );
        let (class, why) = match &r.verdict {
            Verdict::Reproduced => ("reproduced", String::new()),
            Verdict::Differs { cause } => ("differs", cause.clone()),
            Verdict::NotReproducible { why } => ("not-reproducible", why.clone()),
        };
        let link = if sections.iter().any(|s| s.file.section == r.claim.section) {
            format!("<a href=\"#{0}\">{0}</a>", esc(r.claim.section))
        } else {
            esc(r.claim.section)
        };
        let _ = writeln!(
            h,
            "<tr id=\"claim-{id}\"><td>{title}</td><td>{seed}</td><td>{ours}</td><td>{sweep}</td>\
<td class=\"verdict {class}\">{verdict}</td><td>{why}</td><td>{link}</td></tr>",
            id = esc(r.claim.id),
            title = esc(&r.title),
            verdict = r.verdict.name(),
            why = esc(&why),
        );
    }
    h.push_str("</table>\n</section>\n");
}
