// Gate results as text, JSON and HTML: the one-line form (docs/reports.md), the memra.report/1 JSON
// shape (figures typed, series summarised, verdicts combined), exit codes, HTML escaping, and a
// self-contained page (one <svg> per series, no network resource). The [report-page] case writes
// $MEMRA_BUILD/test-report.html for shell.report_render to validate and screenshot.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/file_io.h"
#include "gate/gate.h"
#include "gate/html_report.h"

using namespace memra;

namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

GateResult passing_gate() {
  GateResult g;
  g.name = "restore-roundtrip";
  g.figure("prompt", int64_t{160});
  g.figure("chunk_widths", std::string("1,64"));
  g.figure("capacity", std::string("192=>384"));
  g.figure("max_abs", 0.0);
  g.figure_bool("logits_bits", true);
  return g;
}

// A chunk-semantics-like gate: per-step error against a band, one point over it, and a class map.
GateResult failing_gate() {
  GateResult g;
  g.name = "chunk-semantics";
  g.figure("steps", int64_t{16});
  g.figure("max_abs", 3.5e-7);
  g.fail("step 9: argmax 17 vs 4, margin 0.8 > band 0.01");
  g.fail("a later reason never replaces the first");
  g.notes = {"step 9: OUT-OF-BAND 17 vs 4 margin 0.8", "step 12: IN-BAND 3 vs 5 margin 0.001"};
  Series s;
  s.title = "chunk semantics: |mono - chunk| per step";
  s.x_label = "step";
  s.y_label = "max abs logit difference";
  for (int i = 0; i < 16; ++i) {
    s.x.push_back(i);
    s.y.push_back(i == 9 ? 0.8 : 1e-7 * (1 + i % 5));
    s.band.push_back(0.01);
  }
  s.y[3] = 0;  // zero on a log axis
  g.series.push_back(s);
  Series lin;
  lin.title = "margin per step";
  lin.x_label = "step";
  lin.y_label = "top-1 margin";
  lin.log_y = false;
  for (int i = 0; i < 8; ++i) lin.y.push_back(0.5 * i - 1);
  g.series.push_back(lin);
  for (int c = 0; c < 6; ++c) {
    ClassDiff d;
    d.name = "layer." + std::to_string(c) + ".csa.kv";
    d.shape = {4, 64};
    d.elements = 256;
    d.differing = c == 2 ? 3 : 0;
    if (c == 2) {
      d.first_index = 17;
      d.first_a = 0.25;
      d.first_b = 0.2500001;
      d.first_ulp = 2;
    }
    g.class_diffs.push_back(d);
  }
  g.details = {{"band_rule", "depth * eps"}};
  return g;
}

std::string build_dir() {
  const char* b = std::getenv("MEMRA_BUILD");
  return b && *b ? b : std::filesystem::temp_directory_path().string();
}

}  // namespace

TEST_CASE("a gate prints one result line (docs/reports.md)", "[cpu][gate]") {
  SECTION("PASS: name, verdict, figures in order, no evidence") {
    CHECK(passing_gate().line() == "[restore-roundtrip] PASS prompt=160 chunk_widths=1,64 capacity=192=>384 max_abs=0 logits_bits=true");
  }
  SECTION("FAIL: the first evidence, quoted, after the figures") {
    CHECK(failing_gate().line() ==
          "[chunk-semantics] FAIL steps=16 max_abs=3.5e-07 evidence=\"step 9: argmax 17 vs 4, margin 0.8 > band 0.01\"");
  }
  SECTION("REFUSED wins over FAIL and keeps the first evidence") {
    GateResult g;
    g.name = "hash";
    g.fail("first");
    g.refuse("second");
    CHECK(g.verdict == Verdict::kRefused);
    CHECK(g.line() == "[hash] REFUSED evidence=\"first\"");
  }
  SECTION("values with spaces, quotes or newlines are quoted and stay on one line") {
    GateResult g;
    g.name = "x";
    g.figure("model", std::string("models/my model"));
    g.figure("empty", std::string());
    g.refuse("bad \"field\"\nsecond line");
    CHECK(g.line() == "[x] REFUSED model=\"models/my model\" empty=\"\" evidence=\"bad \\\"field\\\"\\nsecond line\"");
    CHECK(g.line().find('\n') == std::string::npos);
  }
  SECTION("doubles are compact, tiny ones scientific, non-finite named") {
    GateResult g;
    g.figure("a", 0.5);
    g.figure("b", 1234567.0);
    g.figure("c", 1.0 / 3);
    g.figure("d", 2.5e-9);
    g.figure("e", std::nan(""));
    g.figure("f", -INFINITY);
    CHECK(g.figures[0].second == "0.5");
    CHECK(g.figures[1].second == "1.23457e+06");
    CHECK(g.figures[2].second == "0.333333");
    CHECK(g.figures[3].second == "2.5e-09");
    CHECK(g.figures[4].second == "nan");
    CHECK(g.figures[5].second == "-inf");
  }
  SECTION("verdict names") {
    CHECK(std::string(verdict_name(Verdict::kPass)) == "PASS");
    CHECK(std::string(verdict_name(Verdict::kFail)) == "FAIL");
    CHECK(std::string(verdict_name(Verdict::kRefused)) == "REFUSED");
  }
}

TEST_CASE("a gate's JSON report has the memra.report/1 shape", "[cpu][gate]") {
  const nlohmann::json p = passing_gate().to_json();
  const nlohmann::json f = failing_gate().to_json();
  SECTION("header fields") {
    CHECK(p["schema"] == "memra.report/1");
    CHECK(p["command"] == "gate");
    CHECK(p["name"] == "restore-roundtrip");
    CHECK(p["result"] == "PASS");
    CHECK(p["evidence"] == "");
    CHECK(f["result"] == "FAIL");
    CHECK(f["evidence"] == "step 9: argmax 17 vs 4, margin 0.8 > band 0.01");
    CHECK(f["details"]["band_rule"] == "depth * eps");
    CHECK(f["notes"].size() == 2);
  }
  SECTION("figures are numbers when they are JSON numbers, booleans for true/false, else strings") {
    CHECK(p["figures"]["prompt"].is_number_integer());
    CHECK(p["figures"]["prompt"] == 160);
    CHECK(p["figures"]["max_abs"].is_number());
    CHECK(p["figures"]["logits_bits"] == true);
    CHECK(p["figures"]["chunk_widths"] == "1,64");
    CHECK(p["figures"]["capacity"] == "192=>384");
    CHECK(f["figures"]["max_abs"].get<double>() == Approx(3.5e-7));
    GateResult g;
    g.figure("nan", std::nan(""));
    g.figure("hash", std::string("123456789012345678901234567890"));  // no int64: kept exact as text
    g.figure("lead", std::string("007"));
    g.figure("speedup", std::string("1.5x"));
    g.figure("neg", std::string("-2.5e-3"));
    const nlohmann::json j = g.to_json();
    CHECK(j["figures"]["nan"] == "nan");
    CHECK(j["figures"]["hash"] == "123456789012345678901234567890");
    CHECK(j["figures"]["lead"] == "007");
    CHECK(j["figures"]["speedup"] == "1.5x");
    CHECK(j["figures"]["neg"].get<double>() == Approx(-2.5e-3));
  }
  SECTION("series are summarised, not listed") {
    REQUIRE(f["series"].size() == 2);
    const auto& s = f["series"][0];
    CHECK(s["title"] == "chunk semantics: |mono - chunk| per step");
    CHECK(s["points"] == 16);
    CHECK(s["max_y"].get<double>() == Approx(0.8));
    CHECK(s["band_max"].get<double>() == Approx(0.01));
    CHECK(s["out_of_band"] == 1);
    CHECK(f["series"][1]["band_max"].is_null());
    CHECK(!f.dump().empty());
  }
  SECTION("class diffs carry the first difference") {
    REQUIRE(f["class_diffs"].size() == 6);
    const auto& c = f["class_diffs"][2];
    CHECK(c["name"] == "layer.2.csa.kv");
    CHECK(c["shape"] == nlohmann::json::array({4, 64}));
    CHECK(c["differing"] == 3);
    CHECK(c["first_index"] == 17);
    CHECK(c["first_ulp"] == 2);
  }
}

TEST_CASE("a set of gates combines into one verdict and exit code", "[cpu][gate]") {
  GateResult refused;
  refused.name = "hash";
  refused.refuse("manifest names another model");
  SECTION("all PASS") {
    const auto j = gates_to_json("all", {passing_gate(), passing_gate()});
    CHECK(j["result"] == "PASS");
    CHECK(j["command"] == "gate");
    CHECK(j["gates"].size() == 2);
    CHECK(j["gates"][0]["name"] == "restore-roundtrip");
    CHECK(gates_exit_code({passing_gate(), passing_gate()}) == 0);
  }
  SECTION("any FAIL is FAIL, even beside a REFUSED") {
    CHECK(gates_to_json("all", {passing_gate(), failing_gate(), refused})["result"] == "FAIL");
    CHECK(gates_exit_code({passing_gate(), failing_gate()}) == 1);
  }
  SECTION("REFUSED when something refused and nothing failed") {
    CHECK(gates_to_json("all", {passing_gate(), refused})["result"] == "REFUSED");
    CHECK(gates_exit_code({passing_gate(), refused}) == 1);
  }
  SECTION("no gates at all is not a pass") {
    CHECK(gates_to_json("all", {})["result"] == "REFUSED");
    CHECK(gates_exit_code({}) == 1);
  }
}

TEST_CASE("the HTML report is self-contained, escaped and deterministic", "[cpu][gate]") {
  GateResult evil = passing_gate();
  evil.name = "<script>alert(1)</script>";
  evil.figure("path", std::string("a&b \"c\" 'd'"));
  const std::vector<GateResult> gates = {passing_gate(), failing_gate(), evil};
  const std::string html = render_html_report("report <&>", gates);
  SECTION("one <svg> chart per series plus one class map") {
    CHECK(count(html, "<svg class=\"chart\"") == 2);
    CHECK(count(html, "<svg class=\"classmap\"") == 1);
    CHECK(count(html, "<svg") == 3);
    CHECK(count(html, "</svg>") == 3);
  }
  SECTION("no network or external resource, no script") {
    CHECK(html.find("http") == std::string::npos);
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("src=") == std::string::npos);
    CHECK(html.find("<link") == std::string::npos);
    CHECK(html.find("url(") == std::string::npos);
  }
  SECTION("every string is escaped") {
    CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
    CHECK(html.find("<title>report &lt;&amp;&gt;</title>") != std::string::npos);
    CHECK(html.find("a&amp;b &quot;c&quot; &#39;d&#39;") != std::string::npos);
  }
  SECTION("the header carries each gate's verdict line; out-of-band points are marked") {
    CHECK(html.find(">[restore-roundtrip] PASS prompt=160") != std::string::npos);
    CHECK(html.find("[chunk-semantics] FAIL steps=16") != std::string::npos);
    CHECK(count(html, "class=\"out-of-band\"") == 1);
    CHECK(count(html, "class=\"band\"") == 1);
    CHECK(html.find("(log y)") != std::string::npos);
  }
  SECTION("class map cells have tooltips with the first difference") {
    CHECK(count(html, "<g class=\"cell ") == 6);
    CHECK(count(html, "<g class=\"cell differs\"") == 1);
    CHECK(html.find("layer.2.csa.kv [4, 64]: 3 of 256 elements differ; first at flat index 17") != std::string::npos);
  }
  SECTION("same input, same bytes") {
    CHECK(render_html_report("report <&>", gates) == html);
  }
  SECTION("degenerate series (empty, all NaN, one point, all zero on log) still render") {
    GateResult g;
    g.name = "odd";
    for (int k = 0; k < 4; ++k) {
      Series s;
      s.title = "s" + std::to_string(k);
      if (k == 1) s.y = {std::nan(""), std::nan("")}, s.band = {1, 1};
      if (k == 2) s.y = {5};
      if (k == 3) s.y = {0, 0, 0};
      g.series.push_back(s);
    }
    const std::string h = render_html_report("odd", {g});
    CHECK(count(h, "<svg class=\"chart\"") == 4);
    CHECK(h.find("nan\"") == std::string::npos);  // no NaN coordinate
    CHECK(count(h, "class=\"out-of-band\"") == 2);  // NaN is never within a band
  }
}

TEST_CASE("write the sample report page for shell.report_render", "[cpu][gate][report-page]") {
  const std::string dir = build_dir();
  const std::string html_path = dir + "/test-report.html", json_path = dir + "/test-report.json";
  const std::vector<GateResult> gates = {passing_gate(), failing_gate()};
  write_html_report(html_path, "memra gate report (sample)", gates);
  write_file_atomic(json_path, gates_to_json("sample", gates).dump(2) + "\n");
  std::ifstream in(html_path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == render_html_report("memra gate report (sample)", gates));
  CHECK(std::filesystem::file_size(json_path) > 100);
}
