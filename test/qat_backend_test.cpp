// --qat on the CPU realizations (BackendOptions::qat, numerics/qat.h): the simulations change the
// logits of the bundled models (every position, nonzero) within a bound (mean |Δ| under 10% of the
// mean |logit|, top-1 kept on most positions), chunking still gives the same bits on the exact
// path, state files record the setting and a restore with the other setting is refused, and a
// CUDA realization refuses it. Agreement with the oracle's own QAT forward is
// test/shell/qat_oracle.sh.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "engine/engine.h"
#include "loader_test_util.h"
#include "model/model.h"
#include "state/snapshot.h"
#include "state/state_file.h"

using namespace memra;

namespace {

Model load_fixture(const char* name) { return Model::load(std::string(MEMRA_FIXTURES) + "/" + name); }

std::vector<int32_t> prompt(int n) {
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 2 + (i * 37) % 500;
  return p;
}

std::vector<float> run(const Backend& b, const std::vector<int32_t>& tokens, int64_t chunk, State** keep = nullptr) {
  static std::unique_ptr<State> held;
  held = b.new_state(static_cast<int64_t>(tokens.size()));
  std::vector<float> logits;
  prefill(b, *held, tokens, chunk, &logits);
  if (keep) *keep = held.get();
  return logits;
}

}  // namespace

TEST_CASE("qat: the simulations change every position's logits, within a bound", "[cpu][qat]") {
  for (const char* name : {"tiny", "tiny-bf16"}) {
    const Model model = load_fixture(name);
    const int64_t V = model.config().vocab_size;
    const auto tokens = prompt(120);
    for (const char* realization : {"cpu", "cpu-fast"}) {
      CAPTURE(name, realization);
      BackendOptions on;
      on.qat = true;
      auto plain = make_backend(realization, model), qat = make_backend(realization, model, on);
      CHECK_FALSE(plain->qat());
      CHECK(qat->qat());
      const std::vector<float> a = run(*plain, tokens, 0), b = run(*qat, tokens, 0);
      double sum_abs = 0, sum_diff = 0;
      int64_t rows_changed = 0, top1_same = 0;
      const int64_t T = static_cast<int64_t>(tokens.size());
      for (int64_t t = 0; t < T; ++t) {
        double row_diff = 0;
        for (int64_t v = 0; v < V; ++v) {
          const double d = std::fabs(static_cast<double>(a[t * V + v]) - b[t * V + v]);
          row_diff = std::max(row_diff, d);
          sum_diff += d;
          sum_abs += std::fabs(a[t * V + v]);
        }
        rows_changed += row_diff > 0;
        top1_same += argmax({a.data() + t * V, static_cast<size_t>(V)}) == argmax({b.data() + t * V, static_cast<size_t>(V)});
      }
      INFO("mean |d| / mean |logit| = " << sum_diff / sum_abs << ", top-1 kept " << top1_same << "/" << T);
      CHECK(rows_changed == T);  // the window kv is quantised from position 0 on
      CHECK(sum_diff / sum_abs > 1e-3);
      CHECK(sum_diff / sum_abs < 0.1);
      CHECK(top1_same >= T * 3 / 4);
    }
  }
}

TEST_CASE("qat: chunked prefill gives the monolithic bits on the exact path", "[cpu][qat]") {
  const Model model = load_fixture("tiny");
  BackendOptions on;
  on.qat = true;
  auto b = make_backend("cpu", model, on);
  const auto tokens = prompt(90);
  State* s1 = nullptr;
  const std::vector<float> whole = run(*b, tokens, 0, &s1);
  const auto classes_whole = s1->export_classes();
  State* s2 = nullptr;
  const std::vector<float> chunked = run(*b, tokens, 7, &s2);
  CHECK(std::memcmp(whole.data(), chunked.data(), whole.size() * sizeof(float)) == 0);
  const auto classes_chunked = s2->export_classes();
  REQUIRE(classes_whole.size() == classes_chunked.size());
  for (size_t i = 0; i < classes_whole.size(); ++i) CHECK(classes_whole[i].bytes == classes_chunked[i].bytes);
}

TEST_CASE("qat: state files record it; a restore with the other setting is refused", "[cpu][qat][state]") {
  const Model model = load_fixture("tiny");
  const std::string fp = model.fingerprint().hex();
  BackendOptions on;
  on.qat = true;
  auto plain = make_backend("cpu", model), qat = make_backend("cpu", model, on);
  loader_test::TempDir dir;
  for (Backend* writer : {plain.get(), qat.get()}) {
    CAPTURE(writer->qat());
    auto st = writer->new_state(40);
    prefill(*writer, *st, prompt(21), 0, nullptr);
    const std::string path = (dir.path / (writer->qat() ? "qat.mst" : "plain.mst")).string();
    write_state_file(path, snapshot_state(*st), {fp, writer->precision_class(), writer->qat()});
    StateFile file = StateFile::open(path);
    CHECK(file.qat() == writer->qat());
    CHECK(file.metadata().count("qat") == (writer->qat() ? 1u : 0u));
    Backend* other = writer->qat() ? plain.get() : qat.get();
    loader_test::require_error([&] { restore_state_file(file, *other, fp, 40); },
                               {"QAT simulations", writer->qat() ? "has them off" : "has them on"}, 1);
    auto back = restore_state_file(file, *writer, fp, 40);
    CHECK(back->position() == 21);
  }
}

TEST_CASE("qat: a CUDA realization refuses it before loading its library", "[cpu][qat]") {
  const Model model = load_fixture("tiny");
  BackendOptions on;
  on.qat = true;
  loader_test::require_error([&] { make_backend("cuda", model, on); }, {"--qat", "CPU realizations"}, 2);
}
