// A handwritten SVG chart: per family, one horizontal bar per ISA and
// shortcut, on log scales. Left panel: fp32 output, max scaled ulps. Right
// panel: bf16 and f16 output, share of elements not equal to the
// once-rounded truth. Each bar is the worst over kinds and dtype
// combinations of the plain calls (the engine variants are in the tables).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/text.h"
#include "report.h"

namespace simdnorm_accuracy {
namespace {

const char* const kIsaColors[] = {"#1f4e9c", "#2f7fd0", "#5aaee8", "#2ca02c",
                                  "#8fd18f", "#6a51a3", "#9e9ac8", "#555555"};
const char* const kShortcutColors[] = {"#d62728", "#ff7f0e", "#e377c2",
                                       "#bcbd22"};

std::string esc(const std::string& s) { return simdnorm_tools::XmlEscape(s); }

struct Series {
  std::string isa, method, label, color;
};

struct Panel {
  std::string title;
  double lo_exp, hi_exp;  // decades shown
  double bound;
  std::string bound_label;
  std::vector<Series> series;
  // [family][series index] -> value (absent = no data)
  std::map<std::string, std::map<size_t, double>> values;
  // bf16 panel: [family][series index] -> max bf16 ulps, noted when > 1
  std::map<std::string, std::map<size_t, double>> max_ulps;
};

double x_of(const Panel& p, double v, double x0, double width) {
  const double e = std::log10(v);
  const double t = (e - p.lo_exp) / (p.hi_exp - p.lo_exp);
  return x0 + width * std::max(0.0, std::min(1.0, t));
}

void draw_panel(std::ostream& os, const Panel& p,
                const std::vector<std::string>& families, double x0,
                double width, double y0, double row_h, double bar_h) {
  const double height = row_h * static_cast<double>(families.size());
  os << "<text x=\"" << x0 << "\" y=\"" << y0 - 34 << "\" class=\"h\">"
     << esc(p.title) << "</text>\n";
  for (int e = static_cast<int>(p.lo_exp); e <= static_cast<int>(p.hi_exp);
       ++e) {
    const double x = x_of(p, std::pow(10.0, e), x0, width);
    os << "<line x1=\"" << x << "\" y1=\"" << y0 - 4 << "\" x2=\"" << x
       << "\" y2=\"" << y0 + height << "\" class=\"grid\"/>\n";
    os << "<text x=\"" << x << "\" y=\"" << y0 - 8 << "\" class=\"tick\">1e"
       << e << "</text>\n";
  }
  const double bx = x_of(p, p.bound, x0, width);
  os << "<line x1=\"" << bx << "\" y1=\"" << y0 - 20 << "\" x2=\"" << bx
     << "\" y2=\"" << y0 + height << "\" class=\"bound\"/>\n";
  os << "<text x=\"" << bx + 3 << "\" y=\"" << y0 - 22 << "\" class=\"bl\">"
     << esc(p.bound_label) << "</text>\n";
  for (size_t fi = 0; fi < families.size(); ++fi) {
    const double ry = y0 + row_h * static_cast<double>(fi);
    if (fi % 2 == 0) {
      os << "<rect x=\"" << x0 << "\" y=\"" << ry << "\" width=\"" << width
         << "\" height=\"" << row_h << "\" fill=\"#f4f4f4\"/>\n";
    }
    // bf16: one note per family when a library result is beyond 1 ulp.
    auto mu = p.max_ulps.find(families[fi]);
    if (mu != p.max_ulps.end()) {
      double worst = 0;
      for (const auto& [si, u] : mu->second) {
        if (p.series[si].method == "simdnorm" && !(u <= worst)) worst = u;
      }
      if (!(worst <= kBf16MaxUlps)) {
        os << "<text x=\"" << x0 + width + 4 << "\" y=\"" << ry + row_h / 2 + 4
           << "\" class=\"over\">simdnorm max " << format_error(worst)
           << " ulps</text>\n";
      }
    }
    auto it = p.values.find(families[fi]);
    if (it == p.values.end()) continue;
    for (const auto& [si, v] : it->second) {
      const double y = ry + 2 + bar_h * static_cast<double>(si);
      const Series& s = p.series[si];
      const std::string tip =
          esc(families[fi] + ", " + s.label + ": " + format_error(v));
      if (v <= 0 || std::isnan(v)) {
        os << "<circle cx=\"" << x0 + 2 << "\" cy=\"" << y + bar_h / 2
           << "\" r=\"1.5\" fill=\"" << s.color << "\"><title>" << tip
           << " (zero)</title></circle>\n";
        continue;
      }
      const double x1 = std::isinf(v) ? x0 + width : x_of(p, v, x0, width);
      os << "<rect x=\"" << x0 << "\" y=\"" << y << "\" width=\""
         << std::max(1.0, x1 - x0) << "\" height=\"" << bar_h - 1
         << "\" fill=\"" << s.color << "\"><title>" << tip
         << "</title></rect>\n";
      if (std::isinf(v) || std::log10(v) > p.hi_exp) {
        os << "<text x=\"" << x0 + width + 2 << "\" y=\"" << y + bar_h
           << "\" class=\"over\">" << (std::isinf(v) ? "inf" : "&gt;")
           << "</text>\n";
      }
    }
  }
}

}  // namespace

void write_svg(std::ostream& os, const RunOutput& out, const ReportMeta& meta) {
  Panel f32, bf;
  f32.title = "fp32 output: max scaled ulps (log scale)";
  f32.bound = kF32MaxScaledUlps;
  f32.bound_label = "bound 32";
  bf.title = "bf16 and f16 output: share not correctly rounded (log)";
  bf.bound = 1e-6;  // the bound is 0: correctly rounded
  bf.bound_label = "bound 0";
  bf.lo_exp = -6;
  bf.hi_exp = 0;

  auto series_index = [](Panel* p, const ResultRow& r) {
    for (size_t i = 0; i < p->series.size(); ++i) {
      if (p->series[i].isa == r.isa && p->series[i].method == r.method)
        return i;
    }
    Series s{r.isa, r.method, r.method == "simdnorm" ? r.isa : r.method, ""};
    size_t n_isa = 0, n_short = 0;
    for (const Series& t : p->series)
      (t.method == "simdnorm" ? n_isa : n_short)++;
    s.color = r.method == "simdnorm" ? kIsaColors[n_isa % 8]
                                     : kShortcutColors[n_short % 4];
    p->series.push_back(s);
    return p->series.size() - 1;
  };
  double hi = 1e3;
  for (const ResultRow& r : out.rows) {
    if (r.s.count == 0 || r.variant != "plain") continue;
    Panel* p = r.half_out() ? &bf : &f32;
    const size_t si = series_index(p, r);
    const double v = r.half_out() ? 1.0 - r.s.exact_share() : r.s.max;
    auto& cell = p->values[r.family];
    auto it = cell.find(si);
    if (it == cell.end() || v > it->second || std::isnan(v)) cell[si] = v;
    if (r.half_out()) {
      double& mu = p->max_ulps[r.family][si];
      mu = std::max(mu, r.s.max);
    }
    if (!r.half_out() && std::isfinite(v)) hi = std::max(hi, v);
  }
  f32.lo_exp = -2;
  f32.hi_exp = std::min(30.0, std::ceil(std::log10(hi)));

  std::vector<std::string> families;
  for (const std::string& f : meta.families) {
    if (f32.values.count(f) || bf.values.count(f)) families.push_back(f);
  }
  const double bar_h = 5;
  const size_t n_bars =
      std::max<size_t>(1, std::max(f32.series.size(), bf.series.size()));
  const double row_h = bar_h * static_cast<double>(n_bars) + 6;
  const double label_w = 180, panel_w = 420, gap = 90;
  const double legend_h = 16.0 * 2;
  const double top = 70 + legend_h + 50;
  const double width = label_w + 2 * panel_w + gap + 150;
  const double height = top + row_h * static_cast<double>(families.size()) + 40;

  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
     << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " "
     << height << "\" font-family=\"sans-serif\">\n";
  os << "<style>.h{font-size:13px;font-weight:bold}.t{font-size:16px;"
        "font-weight:bold}.s{font-size:11px;fill:#444}.tick{font-size:10px;"
        "text-anchor:middle;fill:#444}.fam{font-size:11px;text-anchor:end}"
        ".grid{stroke:#ddd;stroke-width:1}.bound{stroke:#c00;stroke-width:1.5;"
        "stroke-dasharray:5,3}.bl{font-size:10px;fill:#c00}.over{font-size:"
        "9px;fill:#c00}.lg{font-size:11px}</style>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"10\" y=\"22\" class=\"t\">simdnorm-accuracy: worst error "
        "per "
        "input family (over kinds and dtype combinations)</text>\n";
  os << "<text x=\"10\" y=\"40\" class=\"s\">" << esc(meta.command)
     << "</text>\n";
  os << "<text x=\"10\" y=\"56\" class=\"s\">bars: library per ISA "
        "(blue/green) "
        "and textbook shortcuts (red/orange/pink); a dot marks zero error, "
        "'inf' a non-finite result, 'simdnorm max N ulps' a library bf16 or "
        "f16 result beyond 1 ulp</text>\n";
  // Legends, one line per panel.
  const Panel* panels[2] = {&f32, &bf};
  for (int pi = 0; pi < 2; ++pi) {
    double x = 10;
    const double y = 78 + 16.0 * pi;
    os << "<text x=\"" << x << "\" y=\"" << y + 9 << "\" class=\"lg\">"
       << (pi == 0 ? "fp32 out:" : "16-bit out:") << "</text>\n";
    x += 80;
    for (const Series& s : panels[pi]->series) {
      os << "<rect x=\"" << x << "\" y=\"" << y
         << "\" width=\"10\" height=\"10\""
         << " fill=\"" << s.color << "\"/>\n";
      os << "<text x=\"" << x + 14 << "\" y=\"" << y + 9 << "\" class=\"lg\">"
         << esc(s.label) << "</text>\n";
      x += 24 + 7.0 * static_cast<double>(s.label.size());
    }
  }
  for (size_t fi = 0; fi < families.size(); ++fi) {
    os << "<text x=\"" << label_w - 8 << "\" y=\""
       << top + row_h * static_cast<double>(fi) + row_h / 2 + 4
       << "\" class=\"fam\">" << esc(families[fi]) << "</text>\n";
  }
  draw_panel(os, f32, families, label_w, panel_w, top, row_h, bar_h);
  draw_panel(os, bf, families, label_w + panel_w + gap, panel_w, top, row_h,
             bar_h);
  os << "</svg>\n";
}

}  // namespace simdnorm_accuracy
