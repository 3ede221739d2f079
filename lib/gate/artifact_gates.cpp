// Artifact gates: equal, band, hash (see artifact_gates.h).
#include "gate/artifact_gates.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/file_io.h"
#include "format/npy.h"
#include "format/safetensors.h"
#include "gate/class_diff.h"
#include "state/state_diff.h"
#include "state/state_file.h"
#include "state/state_manifest.h"

namespace memra {

namespace {

enum class ArtifactKind { kState, kLogits };

ArtifactKind sniff(const std::string& path) {
  InputBytes in = InputBytes::open(path);
  if (in.size() >= 6 && std::memcmp(in.data(), "\x93NUMPY", 6) == 0) return ArtifactKind::kLogits;
  SafetensorsFile f = SafetensorsFile::parse(std::move(in));
  auto it = f.metadata().find("format");
  if (it != f.metadata().end() && it->second == kStateFormatName) return ArtifactKind::kState;
  if (f.find("logits")) return ArtifactKind::kLogits;
  throw Error(path + " is neither a memra state file nor a logits file",
              "give two state files (.mst) or two logits files (.npy, or safetensors with a 'logits' tensor)");
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

}  // namespace

std::vector<float> read_logits_file(const std::string& path, int64_t* rows, int64_t* vocab) {
  InputBytes in = InputBytes::open(path);
  std::vector<float> v;
  std::vector<int64_t> shape;
  if (in.size() >= 6 && std::memcmp(in.data(), "\x93NUMPY", 6) == 0) {
    NpyArray a = parse_npy(in.data(), in.size(), path);
    shape = a.shape;
    v = npy_to_f32(a, path);
  } else {
    SafetensorsFile f = SafetensorsFile::parse(std::move(in));
    const TensorView& t = f.get("logits");
    shape = t.shape;
    v = tensor_to_f32(t);
  }
  if (shape.size() == 1) shape.insert(shape.begin(), 1);
  if (shape.size() != 2 || shape[1] < 1) throw Error(path + ": logits must be [rows, vocab]");
  *rows = shape[0];
  *vocab = shape[1];
  return v;
}

GateResult gate_equal(const std::string& a, const std::string& b) {
  GateResult g;
  g.name = "equal";
  const ArtifactKind ka = sniff(a), kb = sniff(b);
  if (ka != kb) throw Error("cannot compare a state file with a logits file", "give two files of the same kind");
  if (ka == ArtifactKind::kState) {
    StateFile fa = StateFile::open(a, StateCheck::kFull), fb = StateFile::open(b, StateCheck::kFull);
    StateDiff d = diff_states(fa, fb);
    g.figure("kind", "state");
    g.figure("position", fa.position());
    g.figure("classes", static_cast<int64_t>(fa.classes().size()));
    g.figure("identical_classes", static_cast<int64_t>(d.identical_classes));
    g.figure("bytes", static_cast<int64_t>(fa.file_bytes()));
    g.figure("state_xxh3", fa.state_hash().hex());
    for (const auto& id : d.identity) g.fail(id);
    for (const auto& c : d.classes) {
      ClassDiff cd;
      cd.name = c.name;
      cd.shape = c.shape_a;
      int64_t n = 1;
      for (auto s : c.shape_a) n *= s;
      cd.elements = n;
      cd.differing = static_cast<int64_t>(c.kind == "values" ? c.differing : n);
      cd.first_index = static_cast<int64_t>(c.first_flat);
      cd.first_a = c.value_a;
      cd.first_b = c.value_b;
      cd.first_ulp = c.ulps;
      g.class_diffs.push_back(cd);
      if (c.kind == "values")
        g.fail("class " + c.name + " element " + std::to_string(c.first_flat) + fmt(": a=%.9g b=%.9g", c.value_a, c.value_b) +
               (c.ulps_known ? " ulp=" + std::to_string(c.ulps) : ""));
      else
        g.fail("class " + c.name + " " + c.kind);
    }
    g.details = d.to_json();
    return g;
  }
  int64_t ra, va, rb, vb;
  auto la = read_logits_file(a, &ra, &va), lb = read_logits_file(b, &rb, &vb);
  g.figure("kind", "logits");
  g.figure("rows", ra);
  g.figure("vocab", va);
  if (ra != rb || va != vb) {
    g.fail("shapes differ: [" + std::to_string(ra) + ", " + std::to_string(va) + "] vs [" + std::to_string(rb) + ", " +
           std::to_string(vb) + "]");
    return g;
  }
  int64_t differing = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    if (std::memcmp(&la[i], &lb[i], 4) == 0) continue;
    if (differing++ == 0)
      g.fail("row " + std::to_string(i / va) + " column " + std::to_string(i % va) + fmt(": a=%.9g b=%.9g", la[i], lb[i]) +
             " ulp=" + std::to_string(ulp_distance(la[i], lb[i])));
  }
  g.figure("differing", differing);
  return g;
}

GateResult gate_band(const std::string& a, const std::string& b, const Realization& ra_, const Realization& rb_) {
  GateResult g;
  g.name = "band";
  int64_t ra, va, rb, vb;
  auto la = read_logits_file(a, &ra, &va), lb = read_logits_file(b, &rb, &vb);
  if (ra != rb || va != vb) {
    g.fail("shapes differ: [" + std::to_string(ra) + ", " + std::to_string(va) + "] vs [" + std::to_string(rb) + ", " +
           std::to_string(vb) + "]");
    return g;
  }
  int64_t agree = 0, in_band = 0, out_band = 0, rows_over = 0;
  double max_abs = 0, worst_ratio = 0;
  Series s{"band: max |a-b| per row vs the pair band", "row", "max abs diff", {}, {}, {}, true};
  for (int64_t t = 0; t < ra; ++t) {
    const float* x = la.data() + t * va;
    const float* y = lb.data() + t * va;
    int64_t ta = 0, tb = 0;
    double row_max = 0;
    bool nonfinite = false;
    for (int64_t j = 0; j < va; ++j) {
      if (x[j] > x[ta]) ta = j;
      if (y[j] > y[tb]) tb = j;
      if (!std::isfinite(x[j]) || !std::isfinite(y[j])) nonfinite = true;
      row_max = std::max(row_max, std::fabs(static_cast<double>(x[j]) - y[j]));
    }
    const double band = pair_band(x[ta], ra_, rb_);
    s.x.push_back(static_cast<double>(t));
    s.y.push_back(std::max(row_max, 1e-30));
    s.band.push_back(band);
    max_abs = std::max(max_abs, row_max);
    if (band > 0) worst_ratio = std::max(worst_ratio, row_max / band);
    if (nonfinite) g.fail("row " + std::to_string(t) + " has a non-finite logit");
    if (row_max > band) {
      ++rows_over;
      g.fail("row " + std::to_string(t) + fmt(": max |a-b| %.6g exceeds the band %.6g", row_max, band));
    }
    if (ta == tb) {
      ++agree;
    } else {
      const double margin = static_cast<double>(x[ta]) - x[tb];
      const bool ok = margin <= band;
      (ok ? in_band : out_band)++;
      g.notes.push_back("row " + std::to_string(t) + " a=" + std::to_string(ta) + " b=" + std::to_string(tb) +
                        fmt(" margin=%.6g band=%.6g", margin, band) + (ok ? " IN-BAND" : " OUT-OF-BAND"));
      if (!ok) g.fail(g.notes.back());
    }
  }
  g.series.push_back(s);
  g.figure("rows", ra);
  g.figure("vocab", va);
  g.figure("max_abs", max_abs);
  g.figure("worst_diff_over_band", worst_ratio);
  g.figure("rows_over_band", rows_over);
  g.figure("argmax", std::to_string(agree) + "_agree," + std::to_string(in_band) + "_in_band," + std::to_string(out_band) +
                         "_out_of_band");
  g.figure("realizations", ra_.name + "(depth " + std::to_string(ra_.depth) + ")," + rb_.name + "(depth " +
                               std::to_string(rb_.depth) + ")");
  return g;
}

GateResult gate_hash(const std::string& state, const std::string& manifest) {
  GateResult g;
  g.name = "hash";
  StateFile f = StateFile::open(state, StateCheck::kFull);
  auto entries = parse_manifest(read_text_file(manifest), manifest);
  ManifestCheck c = check_state_manifest(f, entries);
  g.figure("classes", static_cast<int64_t>(f.classes().size()));
  g.figure("ok", static_cast<int64_t>(c.ok));
  g.figure("mismatch", static_cast<int64_t>(c.mismatch));
  g.figure("missing", static_cast<int64_t>(c.missing));
  g.figure("unlisted", static_cast<int64_t>(c.unlisted));
  g.figure("state_xxh3", f.state_hash().hex());
  for (const auto& it : c.items)
    if (it.status != "OK") g.fail(it.status + " " + it.name + (it.status == "MISMATCH" ? " expected " + it.expected.hex() + " got " + it.actual.hex() : ""));
  g.details = c.to_json();
  return g;
}

}  // namespace memra
