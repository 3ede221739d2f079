// Gates: the seed documents' correctness checks as named, composable results. A gate prints one
// line `[name] PASS key=value …` (or FAIL/REFUSED with the first evidence), a JSON document valid
// against manifests/report.schema.json, and optionally a self-contained HTML page (html_report.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace memra {

enum class Verdict { kPass, kFail, kRefused };
const char* verdict_name(Verdict v);  // "PASS", "FAIL", "REFUSED"

// A curve for the HTML page: y against x, optionally with a band (same length) it must stay under.
struct Series {
  std::string title;   // e.g. "chunk semantics: |mono - chunk| per step"
  std::string x_label;
  std::string y_label;
  std::vector<double> x, y;
  std::vector<double> band;  // empty: no band
  bool log_y = true;
};

// Where two states differ, class by class (for the HTML class map).
struct ClassDiff {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  int64_t differing = 0;     // elements whose bits differ
  int64_t first_index = -1;  // flat index of the first difference
  double first_a = 0, first_b = 0;
  uint64_t first_ulp = 0;
};

struct GateResult {
  std::string name;  // e.g. "restore-roundtrip"
  Verdict verdict = Verdict::kPass;
  std::vector<std::pair<std::string, std::string>> figures;  // printed in order as key=value
  std::string evidence;                                      // first evidence when not PASS
  std::vector<std::string> notes;                            // extra lines (e.g. each disagreement)
  std::vector<Series> series;                                // for --report
  std::vector<ClassDiff> class_diffs;                        // for --report
  nlohmann::json details = nlohmann::json::object();         // extra machine-readable detail

  void figure(const std::string& key, const std::string& value) { figures.emplace_back(key, value); }
  void figure(const std::string& key, int64_t value) { figures.emplace_back(key, std::to_string(value)); }
  void figure(const std::string& key, double value);
  void figure_bool(const std::string& key, bool value) { figures.emplace_back(key, value ? "true" : "false"); }
  void fail(const std::string& why) {  // first evidence wins
    if (verdict == Verdict::kPass) verdict = Verdict::kFail;
    if (evidence.empty()) evidence = why;
  }
  void refuse(const std::string& why) {
    verdict = Verdict::kRefused;
    if (evidence.empty()) evidence = why;
  }

  std::string line() const;           // "[name] PASS k=v …" (+ " evidence=…" when not PASS)
  nlohmann::json to_json() const;     // one report (schema memra.report/1, command "gate")
};

// The whole-run report for several gates (`memra gate all`).
nlohmann::json gates_to_json(const std::string& name, const std::vector<GateResult>& gates);

// Exit code of a set of results: 0 all PASS, 1 any FAIL/REFUSED.
int gates_exit_code(const std::vector<GateResult>& gates);

}  // namespace memra
