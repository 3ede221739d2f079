// Gate results: the one-line form (`[name] PASS key=value …`, docs/reports.md), the JSON report
// (schema memra.report/1, command "gate", checked by manifests/report.schema.json) and the exit
// code of a set of results. Figures are kept as the strings they print as; the JSON form turns the
// ones that are plain JSON numbers or booleans back into numbers and booleans.
#include "gate/gate.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace memra {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kRefused: return "REFUSED";
  }
  return "REFUSED";  // an out-of-range value is never reported as a pass
}

// %.6g is compact for ordinary magnitudes and already scientific below 1e-4 (and at 1e6 and
// above); non-finite values print as nan / inf / -inf so the line stays readable.
void GateResult::figure(const std::string& key, double value) {
  if (std::isnan(value)) return figure(key, std::string("nan"));
  if (std::isinf(value)) return figure(key, std::string(value > 0 ? "inf" : "-inf"));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  figures.emplace_back(key, buf);
}

namespace {

bool needs_quotes(const std::string& v) {
  if (v.empty()) return true;
  return std::any_of(v.begin(), v.end(), [](char c) { return c == ' ' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; });
}

// `"…"` with \ and " escaped and control characters written as \n, \t or \xHH, so the result is
// always exactly one line.
std::string quoted(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A figure string as a JSON value: a strict JSON number (integers only when they fit int64, so a
// long digit string such as a hash is never rounded), true/false as booleans, anything else as the
// string itself.
nlohmann::json figure_value(const std::string& s) {
  if (s == "true") return true;
  if (s == "false") return false;
  size_t i = 0;
  const size_t n = s.size();
  if (i < n && s[i] == '-') ++i;
  if (i >= n || !std::isdigit(static_cast<unsigned char>(s[i]))) return s;
  if (s[i] == '0' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1]))) return s;  // leading zero
  while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  bool integral = true;
  if (i < n && s[i] == '.') {
    integral = false;
    ++i;
    const size_t digits = i;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == digits) return s;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    integral = false;
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t digits = i;
    while (i < n && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == digits) return s;
  }
  if (i != n) return s;
  if (integral) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + n, v);
    if (ec != std::errc() || end != s.data() + n) return s;
    return v;
  }
  const double d = std::strtod(s.c_str(), nullptr);
  if (!std::isfinite(d)) return s;
  return d;
}

// A finite number, or null (JSON has no NaN/inf).
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json series_summary(const Series& s) {
  double max_y = -std::numeric_limits<double>::infinity(), band_max = -std::numeric_limits<double>::infinity();
  int64_t out_of_band = 0;
  for (size_t i = 0; i < s.y.size(); ++i) {
    if (std::isfinite(s.y[i])) max_y = std::max(max_y, s.y[i]);
    if (i < s.band.size() && !(s.y[i] <= s.band[i])) ++out_of_band;  // NaN counts as out of band
  }
  for (double b : s.band)
    if (std::isfinite(b)) band_max = std::max(band_max, b);
  nlohmann::json j = {{"title", s.title},
                      {"x_label", s.x_label},
                      {"y_label", s.y_label},
                      {"points", static_cast<int64_t>(s.y.size())},
                      {"max_y", finite_or_null(max_y)},
                      {"band_max", finite_or_null(band_max)},
                      {"log_y", s.log_y}};
  if (!s.band.empty()) j["out_of_band"] = out_of_band;
  return j;
}

nlohmann::json class_diff_json(const ClassDiff& c) {
  return {{"name", c.name},
          {"shape", c.shape},
          {"elements", c.elements},
          {"differing", c.differing},
          {"first_index", c.first_index},
          {"first_a", finite_or_null(c.first_a)},
          {"first_b", finite_or_null(c.first_b)},
          {"first_ulp", c.first_ulp}};
}

}  // namespace

std::string GateResult::line() const {
  std::string out = "[" + name + "] " + verdict_name(verdict);
  for (const auto& [key, value] : figures) out += " " + key + "=" + (needs_quotes(value) ? quoted(value) : value);
  if (verdict != Verdict::kPass) out += " evidence=" + quoted(evidence);
  return out;
}

nlohmann::json GateResult::to_json() const {
  nlohmann::json figs = nlohmann::json::object();
  for (const auto& [key, value] : figures) figs[key] = figure_value(value);
  nlohmann::json diffs = nlohmann::json::array(), series_j = nlohmann::json::array();
  for (const auto& c : class_diffs) diffs.push_back(class_diff_json(c));
  for (const auto& s : series) series_j.push_back(series_summary(s));
  return {{"schema", "memra.report/1"},
          {"command", "gate"},
          {"name", name},
          {"result", verdict_name(verdict)},
          {"figures", figs},
          {"evidence", evidence},
          {"notes", notes},
          {"class_diffs", diffs},
          {"series", series_j},
          {"details", details.is_object() ? details : nlohmann::json{{"value", details}}}};
}

nlohmann::json gates_to_json(const std::string& name, const std::vector<GateResult>& gates) {
  int64_t pass = 0, fail = 0, refused = 0;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& g : gates) {
    if (g.verdict == Verdict::kPass) ++pass;
    if (g.verdict == Verdict::kFail) ++fail;
    if (g.verdict == Verdict::kRefused) ++refused;
    list.push_back(g.to_json());
  }
  // A run that checked nothing did not pass: no gates is REFUSED.
  const char* result = fail ? "FAIL" : (refused || gates.empty()) ? "REFUSED" : "PASS";
  nlohmann::json j = {{"schema", "memra.report/1"},
                      {"command", "gate"},
                      {"name", name},
                      {"result", result},
                      {"counts", {{"pass", pass}, {"fail", fail}, {"refused", refused}}},
                      {"gates", list}};
  return j;
}

int gates_exit_code(const std::vector<GateResult>& gates) {
  if (gates.empty()) return 1;
  for (const auto& g : gates)
    if (g.verdict != Verdict::kPass) return 1;
  return 0;
}

}  // namespace memra
