// The gate report page: one self-contained HTML file (inline CSS and SVG, no scripts, no fonts,
// images or styles from anywhere else) so it can be attached to a CI run and opened offline.
// Header: every gate's verdict line. Per gate: figures, evidence, notes, one SVG line chart per
// Series (log y when asked, the band as a shaded region under a dashed line, points over the band
// in red) and a class map of ClassDiffs (one cell per class, coloured by the share of differing
// elements, first difference in the cell's <title> tooltip). Output depends only on the input:
// no clock, no locale-dependent formatting, no hash-ordered containers.
#include "gate/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/file_io.h"
#include "core/shape_text.h"

namespace memra {
namespace {

constexpr size_t kMaxNotes = 200;     // notes listed per gate; the rest are counted
constexpr size_t kMaxMarkers = 4000;  // in-band point markers per chart; out-of-band are always drawn

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v, const char* fmt = "%.4g") {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string px(double v) { return num(v, "%.2f"); }  // SVG coordinates

const char* verdict_class(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kFail: return "fail";
    case Verdict::kRefused: return "refused";
  }
  return "refused";
}

constexpr const char* kStyle = R"(
body{font-family:sans-serif;margin:24px;color:#222;background:#fff;max-width:1100px}
h1{font-size:22px;margin:0 0 12px}
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ccc;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 6px}
header pre,pre.line{font-family:monospace;font-size:12px;white-space:pre-wrap;word-break:break-all;margin:2px 0;padding:4px 8px;border-left:4px solid #999}
.pass{border-color:#2e7d32!important;background:#edf7ee}
.fail{border-color:#c62828!important;background:#fdecea}
.refused{border-color:#ef6c00!important;background:#fff3e0}
.verdict{font-weight:bold;padding:1px 6px;border-radius:3px}
span.pass{color:#1b5e20}span.fail{color:#b71c1c}span.refused{color:#e65100}
table.figures{border-collapse:collapse;font-size:12px;margin:6px 0}
table.figures td{border:1px solid #ddd;padding:2px 8px;font-family:monospace}
table.figures td.k{color:#555}
.evidence{font-family:monospace;font-size:12px;color:#b71c1c}
ul.notes{font-family:monospace;font-size:12px;margin:4px 0}
svg{display:block;margin:6px 0;background:#fff}
svg text{font-family:sans-serif;font-size:11px;fill:#333}
svg .title{font-size:13px;font-weight:bold}
.legend{font-size:12px;color:#555}
)";

// ----------------------------------------------------------------------------------------------
// Line chart

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double floor = 0;  // log axes: where values <= 0 are drawn
};

// Log axis over the positive values (decade-aligned); linear axis with a little headroom.
Axis make_y_axis(const Series& s) {
  Axis a;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, pos_lo = lo;
  auto take = [&](double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    if (v > 0) pos_lo = std::min(pos_lo, v);
  };
  for (double v : s.y) take(v);
  for (double v : s.band) take(v);
  if (s.log_y) {
    a.log = true;
    if (!std::isfinite(pos_lo)) pos_lo = hi = 1;  // nothing positive: one decade around 1
    a.lo = std::pow(10.0, std::floor(std::log10(pos_lo)));
    if (lo <= 0) a.lo /= 10;  // room for the zero row below the smallest positive value
    a.hi = std::pow(10.0, std::ceil(std::log10(std::max(hi, pos_lo))));
    if (a.hi <= a.lo) a.hi = a.lo * 10;
    a.floor = a.lo;
    return a;
  }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  lo = std::min(lo, 0.0);
  if (hi <= lo) hi = lo + 1;
  a.lo = lo;
  a.hi = hi + (hi - lo) * 0.05;
  return a;
}

// About five round steps (1, 2, 2.5, 5 × 10^k) within [lo, hi].
std::vector<double> nice_ticks(double lo, double hi) {
  std::vector<double> t;
  const double raw = (hi - lo) / 5;
  if (!(raw > 0) || !std::isfinite(raw)) return {lo};
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag * 10;
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  const double first = std::ceil(lo / step - 1e-9);
  for (int i = 0; i <= 12; ++i) {
    const double v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return t;
}

// Ticks: every decade (thinned to at most 7) on log axes, round steps on linear ones.
std::vector<double> ticks(const Axis& a) {
  if (!a.log) return nice_ticks(a.lo, a.hi);
  std::vector<double> t;
  const int d0 = static_cast<int>(std::lround(std::log10(a.lo))), d1 = static_cast<int>(std::lround(std::log10(a.hi)));
  const int step = std::max(1, (d1 - d0 + 5) / 6);
  for (int d = d0; d <= d1; d += step) t.push_back(std::pow(10.0, d));
  return t;
}

std::string render_chart(const Series& s) {
  constexpr double W = 760, H = 300, L = 70, R = 20, T = 28, B = 44;
  const double pw = W - L - R, ph = H - T - B;
  const size_t n = s.y.size();
  std::vector<double> xs(n);
  for (size_t i = 0; i < n; ++i) xs[i] = i < s.x.size() && std::isfinite(s.x[i]) ? s.x[i] : static_cast<double>(i);
  double x_lo = n ? *std::min_element(xs.begin(), xs.end()) : 0, x_hi = n ? *std::max_element(xs.begin(), xs.end()) : 1;
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  const Axis ya = make_y_axis(s);
  auto X = [&](double x) { return L + (x - x_lo) / (x_hi - x_lo) * pw; };
  auto Y = [&](double y) {
    double f;
    if (ya.log) {
      const double v = y > 0 ? y : ya.floor;
      f = (std::log10(v) - std::log10(ya.lo)) / (std::log10(ya.hi) - std::log10(ya.lo));
    } else {
      f = (y - ya.lo) / (ya.hi - ya.lo);
    }
    return T + ph * (1 - std::clamp(f, 0.0, 1.0));
  };

  std::string o;
  o += "<svg class=\"chart\" width=\"" + px(W) + "\" height=\"" + px(H) + "\" viewBox=\"0 0 " + px(W) + " " + px(H) +
       "\" role=\"img\" aria-label=\"" + esc(s.title) + "\">\n";
  o += "<text class=\"title\" x=\"" + px(L) + "\" y=\"16\">" + esc(s.title) + (ya.log ? " (log y)" : "") + "</text>\n";
  o += "<rect x=\"" + px(L) + "\" y=\"" + px(T) + "\" width=\"" + px(pw) + "\" height=\"" + px(ph) +
       "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  // Axes: y ticks with grid lines, x ticks at round values.
  for (double t : ticks(ya)) {
    const double y = Y(t);
    o += "<line x1=\"" + px(L - 4) + "\" y1=\"" + px(y) + "\" x2=\"" + px(L + pw) + "\" y2=\"" + px(y) +
         "\" stroke=\"#e0e0e0\"/>\n";
    o += "<text x=\"" + px(L - 6) + "\" y=\"" + px(y + 4) + "\" text-anchor=\"end\">" + num(t, "%.3g") + "</text>\n";
  }
  for (double xv : nice_ticks(x_lo, x_hi)) {
    const double x = X(xv);
    o += "<line x1=\"" + px(x) + "\" y1=\"" + px(T + ph) + "\" x2=\"" + px(x) + "\" y2=\"" + px(T + ph + 4) + "\" stroke=\"#666\"/>\n";
    o += "<text x=\"" + px(x) + "\" y=\"" + px(T + ph + 16) + "\" text-anchor=\"middle\">" + num(xv, "%.4g") + "</text>\n";
  }
  o += "<text x=\"" + px(L + pw / 2) + "\" y=\"" + px(H - 6) + "\" text-anchor=\"middle\">" + esc(s.x_label) + "</text>\n";
  o += "<text x=\"14\" y=\"" + px(T + ph / 2) + "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " + px(T + ph / 2) + ")\">" +
       esc(s.y_label) + "</text>\n";

  // Band: shaded region from the bottom of the plot up to the band, and the band itself dashed.
  const bool has_band = !s.band.empty();
  if (has_band && n) {
    std::string area = px(X(xs[0])) + "," + px(T + ph), line;
    for (size_t i = 0; i < n; ++i) {
      const double b = i < s.band.size() ? s.band[i] : s.band.back();
      const std::string pt = px(X(xs[i])) + "," + px(std::isfinite(b) ? Y(b) : T);
      area += " " + pt;
      line += (i ? " " : "") + pt;
    }
    area += " " + px(X(xs[n - 1])) + "," + px(T + ph);
    o += "<polygon class=\"band\" points=\"" + area + "\" fill=\"#2e7d32\" fill-opacity=\"0.12\"/>\n";
    o += "<polyline class=\"band-line\" points=\"" + line + "\" fill=\"none\" stroke=\"#2e7d32\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n";
  }
  // The series: a polyline broken at non-finite values, then the points.
  std::string seg;
  auto flush = [&] {
    if (seg.find(' ') != std::string::npos)
      o += "<polyline class=\"series\" points=\"" + seg + "\" fill=\"none\" stroke=\"#1565c0\" stroke-width=\"1.5\"/>\n";
    seg.clear();
  };
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(s.y[i])) {
      flush();
      continue;
    }
    seg += (seg.empty() ? "" : " ") + px(X(xs[i])) + "," + px(Y(s.y[i]));
  }
  flush();
  size_t out_of_band = 0, markers = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool over = has_band && !(s.y[i] <= (i < s.band.size() ? s.band[i] : s.band.back()));
    const double y = std::isfinite(s.y[i]) ? Y(s.y[i]) : T;  // NaN/inf drawn at the top
    if (over) {
      ++out_of_band;
      o += "<circle class=\"out-of-band\" cx=\"" + px(X(xs[i])) + "\" cy=\"" + px(y) +
           "\" r=\"4.5\" fill=\"#ff1744\" stroke=\"#b00020\"><title>x=" + num(xs[i], "%.6g") + " y=" + num(s.y[i], "%.6g") +
           " band=" + num(i < s.band.size() ? s.band[i] : s.band.back(), "%.6g") + " (out of band)</title></circle>\n";
    } else if (std::isfinite(s.y[i]) && markers++ < kMaxMarkers) {
      o += "<circle cx=\"" + px(X(xs[i])) + "\" cy=\"" + px(y) + "\" r=\"2\" fill=\"#1565c0\"><title>x=" + num(xs[i], "%.6g") +
           " y=" + num(s.y[i], "%.6g") + "</title></circle>\n";
    }
  }
  o += "</svg>\n";
  o += "<div class=\"legend\">" + std::to_string(n) + " points";
  if (has_band) o += "; shaded: band; <span style=\"color:#d32f2f\">" + std::to_string(out_of_band) + " out of band</span>";
  if (ya.log) o += "; values &le; 0 drawn on the bottom line";
  o += "</div>\n";
  return o;
}

// ----------------------------------------------------------------------------------------------
// Class map

// White-red ramp by the share of differing elements (log-scaled, so one element in a million
// is visible); identical classes are green.
double cell_heat(const ClassDiff& c) {  // 0 for bit-equal, 0.15 (one in a million) .. 1 (all differ)
  if (c.differing <= 0) return 0;
  const double share = c.elements > 0 ? static_cast<double>(c.differing) / c.elements : 1.0;
  return std::clamp(1 + std::log10(std::max(share, 1e-6)) / 6, 0.15, 1.0);
}

std::string cell_colour(const ClassDiff& c) {
  if (c.differing <= 0) return "#c8e6c9";
  const double t = cell_heat(c);
  const int g = static_cast<int>(std::lround(205 * (1 - t))), r = static_cast<int>(std::lround(255 - 55 * t));
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, g);
  return buf;
}

std::string render_class_map(const std::vector<ClassDiff>& diffs) {
  constexpr int kCols = 4, kCellW = 180, kCellH = 58, kGap = 6;
  const int rows = static_cast<int>((diffs.size() + kCols - 1) / kCols);
  const int W = kCols * (kCellW + kGap), H = rows * (kCellH + kGap);
  size_t differing = 0;
  for (const auto& c : diffs) differing += c.differing > 0;
  std::string o = "<h3>class map: " + std::to_string(differing) + " of " + std::to_string(diffs.size()) + " classes differ</h3>\n";
  o += "<svg class=\"classmap\" width=\"" + std::to_string(W) + "\" height=\"" + std::to_string(H) + "\" viewBox=\"0 0 " +
       std::to_string(W) + " " + std::to_string(H) + "\" role=\"img\" aria-label=\"class map\">\n";
  for (size_t i = 0; i < diffs.size(); ++i) {
    const ClassDiff& c = diffs[i];
    const int x = static_cast<int>(i % kCols) * (kCellW + kGap), y = static_cast<int>(i / kCols) * (kCellH + kGap);
    std::string tip = c.name + " " + shape_text(c.shape) + ": " + std::to_string(c.differing) + " of " +
                      std::to_string(c.elements) + " elements differ";
    if (c.differing > 0 && c.first_index >= 0)
      tip += "; first at flat index " + std::to_string(c.first_index) + ": a=" + num(c.first_a, "%.9g") + " b=" +
             num(c.first_b, "%.9g") + " (" + std::to_string(c.first_ulp) + " ulp)";
    std::string label = c.name.size() > 26 ? c.name.substr(0, 25) + "\xe2\x80\xa6" : c.name;
    o += "<g class=\"cell " + std::string(c.differing > 0 ? "differs" : "equal") + "\"><title>" + esc(tip) + "</title>";
    o += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" + std::to_string(kCellW) +
         "\" height=\"" + std::to_string(kCellH) + "\" rx=\"4\" fill=\"" + cell_colour(c) + "\" stroke=\"#777\"/>";
    const std::string ink = cell_heat(c) > 0.55 ? " style=\"fill:#fff\"" : "";
    o += "<text x=\"" + std::to_string(x + 6) + "\" y=\"" + std::to_string(y + 18) + "\"" + ink + ">" + esc(label) + "</text>";
    o += "<text x=\"" + std::to_string(x + 6) + "\" y=\"" + std::to_string(y + 36) + "\"" + ink + ">" + esc(shape_text(c.shape)) + "</text>";
    o += "<text x=\"" + std::to_string(x + 6) + "\" y=\"" + std::to_string(y + 51) + "\"" + ink + ">" +
         (c.differing > 0 ? std::to_string(c.differing) + " / " + std::to_string(c.elements) + " differ" : std::string("bit-equal")) +
         "</text></g>\n";
  }
  o += "</svg>\n";
  return o;
}

// ----------------------------------------------------------------------------------------------
// Page

std::string render_gate(const GateResult& g, size_t index) {
  const char* cls = verdict_class(g.verdict);
  std::string o = "<section class=\"gate\" id=\"gate-" + std::to_string(index) + "\">\n";
  o += "<h2>[" + esc(g.name) + "] <span class=\"verdict " + cls + "\">" + verdict_name(g.verdict) + "</span></h2>\n";
  if (!g.evidence.empty()) o += "<p class=\"evidence\">evidence: " + esc(g.evidence) + "</p>\n";
  if (!g.figures.empty()) {
    o += "<table class=\"figures\">\n";
    for (const auto& [k, v] : g.figures) o += "<tr><td class=\"k\">" + esc(k) + "</td><td>" + esc(v) + "</td></tr>\n";
    o += "</table>\n";
  }
  if (!g.notes.empty()) {
    o += "<ul class=\"notes\">\n";
    for (size_t i = 0; i < g.notes.size() && i < kMaxNotes; ++i) o += "<li>" + esc(g.notes[i]) + "</li>\n";
    if (g.notes.size() > kMaxNotes) o += "<li>&hellip; " + std::to_string(g.notes.size() - kMaxNotes) + " more</li>\n";
    o += "</ul>\n";
  }
  for (const auto& s : g.series) o += render_chart(s);
  if (!g.class_diffs.empty()) o += render_class_map(g.class_diffs);
  return o + "</section>\n";
}

}  // namespace

std::string render_html_report(const std::string& title, const std::vector<GateResult>& gates) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  o += "<title>" + esc(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  o += "<header>\n<h1>" + esc(title) + "</h1>\n";
  for (size_t i = 0; i < gates.size(); ++i)
    o += "<pre class=\"line " + std::string(verdict_class(gates[i].verdict)) + "\">" + esc(gates[i].line()) + "</pre>\n";
  if (gates.empty()) o += "<pre class=\"line refused\">no gate ran</pre>\n";
  o += "</header>\n<main>\n";
  for (size_t i = 0; i < gates.size(); ++i) o += render_gate(gates[i], i);
  o += "</main>\n</body>\n</html>\n";
  return o;
}

void write_html_report(const std::string& path, const std::string& title, const std::vector<GateResult>& gates) {
  write_file_atomic(path, render_html_report(title, gates));
}

}  // namespace memra
