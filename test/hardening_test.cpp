// Issue 9, in the library: checked size arithmetic, the memory plan against the real allocation,
// decode states whose sizes overflow, config fields that change the math refused when missing,
// tid2eid rows with a duplicate expert, escaped messages, token lists and state files read from
// streams header first and capped, NaN/Inf in a state reported. Runs in memra_test and, under
// ASan/UBSan, in memra_parser_asan.
#include <catch2/catch.hpp>

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "core/checked.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/machine.h"
#include "engine/backend.h"
#include "engine/decode_state.h"
#include "engine/memory_plan.h"
#include "format/json_guard.h"
#include "format/safetensors.h"
#include "format/token_list.h"
#include "loader_test_util.h"
#include "model/config.h"
#include "model/model.h"
#include "state/snapshot.h"
#include "state/state_file.h"
#include "state_test_util.h"

using namespace memra;
using loader_test::require_error;
using loader_test::TempDir;
using loader_test::write_bytes;
using loader_test::read_bytes;
using nlohmann::json;

namespace {

const std::string kTiny = std::string(MEMRA_FIXTURES) + "/tiny";

json tiny_json() { return read_json_file(kTiny + "/config.json"); }

uint64_t allocated_bytes(const DecodeState& s) {
  uint64_t n = s.last_logits.size();
  for (const auto& l : s.layers) {
    n += l.window.size();
    for (const CompressorState* c : {&l.compressor, &l.indexer})
      n += c->pend_kv.size() + c->pend_score.size() + c->prev_kv.size() + c->prev_score.size() + c->entries.size();
  }
  return n * sizeof(float);
}

// A pipe whose read end a StdinReader reads; the write end stays open until close_writer().
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { REQUIRE(::pipe(fds) == 0); }
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  void write_all(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::write(fds[1], bytes.data() + off, bytes.size() - off);
      REQUIRE(n > 0);
      off += static_cast<size_t>(n);
    }
  }
  void close_writer() {
    ::close(fds[1]);
    fds[1] = -1;
  }
};

}  // namespace

TEST_CASE("checked arithmetic: overflow is an Error naming what was sized, never a wrap", "[cpu][hardening]") {
  CHECK(mul_checked(int64_t{3}, int64_t{4}, "x") == 12);
  CHECK(add_checked(int64_t{3}, int64_t{4}, "x") == 7);
  require_error([] { mul_checked(int64_t{1} << 40, int64_t{1} << 30, "the widget"); }, {"the widget", "too large"});
  require_error([] { add_checked(std::numeric_limits<int64_t>::max(), int64_t{1}, "the sum"); }, {"the sum", "too large"});
  require_error([] { mul_checked(uint64_t{1} << 63, uint64_t{2}, "bytes"); }, {"bytes"});
  require_error([] { mul_checked(int64_t{-1}, int64_t{2}, "count"); }, {"count", "negative"});
  require_error([] { elements_checked(std::numeric_limits<int64_t>::max() / 2, 4, "buffer"); }, {"buffer"});
  CHECK(product_checked({2, 3, 4}, "p") == 24);
}

TEST_CASE("decode states whose sizes overflow are refused before anything is allocated", "[cpu][hardening]") {
  const ModelConfig cfg = test::synthetic_config();
  // The issue's reproducers: 2^62 crashed in transfer(), 4611686018427388000 wrapped to ~96 tokens.
  for (int64_t capacity : {int64_t{1} << 62, int64_t{4611686018427388000}, std::numeric_limits<int64_t>::max()}) {
    INFO("capacity " << capacity);
    require_error([&] { make_decode_state(cfg, capacity); }, {"too large"});
    require_error([&] { decode_state_bytes(cfg, capacity); }, {"too large"});
  }
}

TEST_CASE("memory plan: decode_state_bytes is what make_decode_state allocates", "[cpu][hardening]") {
  for (const ModelConfig& cfg : {test::synthetic_config(), test::synthetic_config_b(), ModelConfig::load(kTiny)}) {
    for (int64_t capacity : {1, 3, 4, 17, 64, 129, 1000}) {
      INFO("layers " << cfg.num_hidden_layers << " capacity " << capacity);
      // Plus last_logits [V], which the first forward call assigns.
      CHECK(decode_state_bytes(cfg, capacity) ==
            allocated_bytes(make_decode_state(cfg, capacity)) + static_cast<uint64_t>(cfg.vocab_size) * sizeof(float));
    }
    for (int64_t pos : {0, 1, 5, 64, 200}) {
      uint64_t live = 0;
      for (const auto& c : trunk_layout(cfg, pos)) {
        uint64_t n = 1;
        for (int64_t d : c.shape) n *= static_cast<uint64_t>(d);
        live += n * dtype_size(c.dtype);
      }
      CHECK(live_state_bytes(cfg, pos) == live);
    }
  }
}

TEST_CASE("memory plan: the model's resident bytes are what a CPU backend decodes", "[cpu][hardening]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN("skipped: mallinfo2 does not see the ASan allocator's heap");
  return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  WARN("skipped: mallinfo2 does not see the ASan allocator's heap");
  return;
#endif
#endif
  // tiny stores F32 (mapped, nothing decoded); tiny-bf16 stores BF16 weights, kept packed. Heap
  // growth while binding must stay within the plan's figure.
  for (const std::string name : {"tiny", "tiny-bf16"}) {
    INFO(name);
    const Model model = Model::load(std::string(MEMRA_FIXTURES) + "/" + name);
    uint64_t ids = 0;
    for (const auto& w : model.tensors()) ids += w.ids.size() * sizeof(int64_t);
    const uint64_t planned = model_resident_bytes(model, Device::kCpu);
    CHECK(model_resident_bytes(model, Device::kCuda) == ids);
    const size_t before = mallinfo2().uordblks + mallinfo2().hblkhd;
    auto backend = make_backend("cpu", model);
    const size_t after = mallinfo2().uordblks + mallinfo2().hblkhd;
    const uint64_t grown = after > before ? after - before : 0;
    if (name == "tiny") CHECK(planned == ids);
    else CHECK(planned > ids + (1u << 20));
    // Matrices stay packed (decoded row by row), so the plan, which counts an f32 copy of every
    // non-F32 weight, is an upper bound: binding never allocates more than it says.
    CHECK(grown + ids <= planned + (256u << 10));
  }
}

TEST_CASE("memory plan: a run that cannot fit is refused saying how much it needs", "[cpu][hardening]") {
  const ModelConfig cfg = ModelConfig::load(kTiny);
  RunShape shape;
  shape.capacity = 100000000;  // the issue's --capacity 100000000 (19 GB)
  shape.chunk = 1;
  const MemoryPlan plan = plan_memory(cfg, shape, 1000);
  CHECK(plan.state_bytes == decode_state_bytes(cfg, 100000000));
  CHECK(plan.total > plan.state_bytes);
  require_error([&] { require_fits(plan, uint64_t{1} << 30, "restoring S"); },
                {"restoring S needs", "GiB", "decode state", "1.0 GiB memory limit"});
  CHECK_NOTHROW(require_fits(plan, plan.total, "restoring S"));
  SECTION("largest_fitting: the boundary is exact") {
    const uint64_t limit = uint64_t{64} << 20;
    auto shape_of = [](int64_t n) {
      RunShape s;
      s.capacity = s.chunk = n;
      s.logits_rows = n;
      s.chunk_logits = true;
      return s;
    };
    const int64_t n = largest_fitting(cfg, 0, limit, 1, int64_t{1} << 40, shape_of);
    REQUIRE(n > 1);
    CHECK(plan_memory(cfg, shape_of(n), 0).total <= limit);
    CHECK(plan_memory(cfg, shape_of(n + 1), 0).total > limit);
    CHECK(largest_fitting(cfg, 0, 10, 1, 100, shape_of) == 0);  // nothing fits
  }
  SECTION("the default limit is a share of this machine") {
    CHECK(default_memory_limit() > 0);
    CHECK(default_memory_limit() < machine_memory_bytes());
    CHECK(effective_memory_limit(12345) == 12345);
  }
}

TEST_CASE("config: a field that changes the math is refused when missing, naming it", "[cpu][hardening]") {
  const json base = tiny_json();
  REQUIRE_NOTHROW(ModelConfig::parse(base));
  auto without = [&](std::initializer_list<std::string> path) {
    json j = base;
    json* at = &j;
    std::vector<std::string> p(path);
    for (size_t i = 0; i + 1 < p.size(); ++i) at = &(*at)[p[i]];
    at->erase(p.back());
    return j;
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> fields = {
      {{"index_topk"}, "index_topk"},
      {{"scoring_func"}, "scoring_func"},
      {{"norm_topk_prob"}, "norm_topk_prob"},
      {{"routed_scaling_factor"}, "routed_scaling_factor"},
      {{"swiglu_limit"}, "swiglu_limit"},
      {{"hc_sinkhorn_iters"}, "hc_sinkhorn_iters"},
      {{"hc_eps"}, "hc_eps"},
      {{"rms_norm_eps"}, "rms_norm_eps"},
      {{"rope_parameters", "main", "rope_type"}, "rope_parameters.main.rope_type"},
  };
  for (const auto& [path, name] : fields) {
    json j = base;
    json* at = &j;
    for (size_t i = 0; i + 1 < path.size(); ++i) at = &(*at)[path[i]];
    at->erase(path.back());
    INFO("without " << name);
    require_error([&] { ModelConfig::parse(j); }, {name, "is missing", "assumes no default"});
  }
  SECTION("rope_parameters: missing is refused; an explicit null means no YaRN") {
    json j = without({"rope_parameters"});
    require_error([&] { ModelConfig::parse(j); }, {"rope_parameters", "is missing"});
    j["rope_scaling"] = nullptr;
    ModelConfig c = ModelConfig::parse(j);
    CHECK(c.rope_compress.type == "default");
    CHECK(c.rope_compress.theta == 160000.0);
  }
  SECTION("qk_rope_head_dim: neither it nor partial_rotary_factor") {
    json j = without({"qk_rope_head_dim"});
    j.erase("partial_rotary_factor");
    for (const char* part : {"main", "compress"}) j["rope_parameters"][part].erase("partial_rotary_factor");
    require_error([&] { ModelConfig::parse(j); }, {"qk_rope_head_dim", "is missing"});
  }
  SECTION("rope bases: stated in the nested table is enough, stated nowhere is refused, two values disagree") {
    json j = without({"rope_theta"});
    j.erase("compress_rope_theta");
    ModelConfig c = ModelConfig::parse(j);
    CHECK(c.rope_theta == 10000.0);
    CHECK(c.compress_rope_theta == 160000.0);
    CHECK(c.geometry_json() == ModelConfig::parse(base).geometry_json());
    j["rope_parameters"]["main"].erase("rope_theta");
    require_error([&] { ModelConfig::parse(j); }, {"rope_theta", "is missing"});
    json k = base;
    k["rope_parameters"]["main"]["rope_theta"] = 20000.0;
    require_error([&] { ModelConfig::parse(k); }, {"rope_parameters.main.rope_theta", "disagrees"});
  }
  SECTION("structural fields keep their defaults: the weights' shapes check them") {
    json j = without({"hc_mult"});
    CHECK(ModelConfig::parse(j).hc_mult == 4);
  }
  SECTION("yarn betas keep 32 / 1: transformers' save_pretrained omits them and upstream agrees") {
    json j = without({"rope_parameters", "compress", "beta_fast"});
    j["rope_parameters"]["compress"].erase("beta_slow");
    const ModelConfig c = ModelConfig::parse(j);
    CHECK(c.rope_compress.beta_fast == 32.0);
    CHECK(c.rope_compress.beta_slow == 1.0);
  }
  SECTION("a tensor table too large to build is refused") {
    json j = base;
    j["num_hidden_layers"] = 4096;
    j["layer_types"] = json::array();
    j["mlp_layer_types"] = json::array();
    for (int i = 0; i < 4096; ++i) {
      j["layer_types"].push_back("sliding_attention");
      j["mlp_layer_types"].push_back("moe");
    }
    j["n_routed_experts"] = 65536;
    require_error([&] { ModelConfig::parse(j); }, {"n_routed_experts"});
  }
}

TEST_CASE("model: a tid2eid row that names an expert twice is refused", "[cpu][hardening]") {
  TempDir dir;
  write_bytes(dir.file("config.json"), read_bytes(kTiny + "/config.json"));
  SafetensorsFile src = SafetensorsFile::open(kTiny + "/model.safetensors");
  SafetensorsWriter w;
  bool planted = false;
  for (const TensorView& t : src.tensors()) {
    std::string bytes(reinterpret_cast<const char*>(t.data), t.nbytes);
    if (t.name.find("tid2eid") != std::string::npos && !planted) {
      // Row 7 = [e, e]: copy its first id over its second.
      const size_t item = dtype_size(t.dtype), k = static_cast<size_t>(t.shape[1]);
      std::memcpy(&bytes[(7 * k + 1) * item], &bytes[(7 * k) * item], item);
      planted = true;
    }
    w.add(t.name, t.dtype, t.shape, bytes.data(), bytes.size());
  }
  REQUIRE(planted);
  write_bytes(dir.file("model.safetensors"), w.serialize());
  require_error([&] { Model::load(dir.path.string()); }, {"tid2eid", "row 7", "twice"});
}

TEST_CASE("messages escape control bytes and bytes that are not UTF-8", "[cpu][hardening]") {
  CHECK(printable("a\x1b[31mb") == "a\\x1b[31mb");
  CHECK(printable(std::string("x\0y", 3)) == "x\\x00y");
  CHECK(printable("\xff\xfe") == "\\xff\\xfe");
  CHECK(printable("caf\xc3\xa9") == "caf\xc3\xa9");  // valid UTF-8 stays
  CHECK(printable("line\nbreak") == "line\\x0abreak");
  CHECK(printable(std::string(300, 'a')).size() == 203);
  for (const std::string& bad : {std::string("1 \x1b[31m 2"), std::string("1 \xff 2"), std::string("1 \0 2", 5)}) {
    try {
      parse_token_text(bad, "t.txt");
      FAIL("accepted");
    } catch (const Error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("\\x") != std::string::npos);
      for (unsigned char c : what) CHECK((c >= 0x20 && c < 0x7f));
    }
  }
}

TEST_CASE("token lists: capped while reading, streams read no further than the cap", "[cpu][hardening]") {
  TokenListLimits limits;
  limits.max_tokens = 100;
  limits.why = "the most that fits";
  std::string many;
  for (int i = 0; i < 5000; ++i) many += "1 ";
  require_error([&] { parse_token_text(many, "t.txt", limits); }, {"more than 100 tokens", "the most that fits"});
  CHECK(parse_token_text("1,2, 3\n4", "t.txt", limits) == std::vector<int32_t>{1, 2, 3, 4});
  require_error([] { parse_token_text("2147483648", "t.txt"); }, {"too large"});
  SECTION("a stream that never ends (yes 1 |) stops at the cap") {
    ::signal(SIGPIPE, SIG_IGN);  // the writer learns that the reader stopped from EPIPE
    Pipe p;
    std::thread writer([&] {  // 400 KB, more than a pipe holds: it blocks until read or refused
      std::string chunk;
      for (int i = 0; i < 200000; ++i) chunk += "1\n";
      size_t off = 0;
      while (off < chunk.size()) {
        const ssize_t n = ::write(p.fds[1], chunk.data() + off, chunk.size() - off);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
    });
    StdinReader in(p.fds[0]);
    require_error([&] { read_token_stream(in, "stdin", limits); }, {"stdin", "more than 100 tokens"});
    CHECK(in.consumed() < 70000);  // one piece read, not the 400 KB
    ::close(p.fds[0]);
    p.fds[0] = -1;
    writer.join();
  }
  SECTION("stream and bytes give the same list") {
    for (const std::string& text : {std::string("5 6 7"), std::string(""), std::string("1,,2\r\n"), std::string("12 x")}) {
      Pipe p;
      p.write_all(text);
      p.close_writer();
      StdinReader in(p.fds[0]);
      std::vector<int32_t> a, b;
      bool ok_a = true, ok_b = true;
      try {
        a = parse_token_bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size(), "t");
      } catch (const Error&) {
        ok_a = false;
      }
      try {
        b = read_token_stream(in, "t");
      } catch (const Error&) {
        ok_b = false;
      }
      CHECK(ok_a == ok_b);
      CHECK(a == b);
    }
  }
}

TEST_CASE("stdin state files: the header is checked before the payload is read", "[cpu][hardening]") {
  SECTION("cat /dev/zero: refused after 8 bytes") {
    Pipe p;
    p.write_all(std::string(60000, '\0'));  // the writer stays open: reading on would block
    StdinReader in(p.fds[0]);
    InputBytes bytes = SafetensorsFile::read_stream(in, "stdin", 1 << 20);
    CHECK(in.consumed() == 8);
    require_error([&] { StateFile::parse(std::move(bytes)); }, {"header of 0 bytes"}, kExitNegative);
  }
  SECTION("a header that announces more data than may be buffered: refused before reading it") {
    const std::string header = R"({"x":{"dtype":"F32","shape":[268435456],"data_offsets":[0,1073741824]}})";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    Pipe p;
    p.write_all(bytes + header + std::string(1000, 'z'));
    StdinReader in(p.fds[0]);
    require_error([&] { SafetensorsFile::read_stream(in, "stdin", 1 << 20); }, {"stdin", "1073741824 bytes"});
    CHECK(in.consumed() == 8 + header.size());
  }
  SECTION("stdin with more than max bytes of text is refused, not read to the end") {
    set_stdin_limit(1 << 20);
    CHECK(stdin_limit() == (1u << 20));
    set_stdin_limit(0);
    CHECK(stdin_limit() == default_memory_share());
  }
}

TEST_CASE("state files: NaN and Inf values are reported per class", "[cpu][hardening]") {
  const ModelConfig cfg = test::synthetic_config();
  DecodeState s = test::random_state(cfg, 9, 12, 5);
  HostSnapshot snap = test::snapshot_of(cfg, s);
  REQUIRE(snap.classes.size() > 2);
  const std::string origin_fp(32, 'c');
  {
    StateFile clean = StateFile::parse(InputBytes::from_buffer("clean", [&] {
      std::string b = serialize_state_file(snap, {origin_fp, "cpu-f32-exact"});
      return std::vector<uint8_t>(b.begin(), b.end());
    }()));
    CHECK(nonfinite_classes(clean).empty());
  }
  snap.classes[1].f32_mut()[3] = std::numeric_limits<float>::quiet_NaN();
  snap.classes[1].f32_mut()[5] = std::numeric_limits<float>::infinity();
  snap.classes.back().f32_mut()[0] = -std::numeric_limits<float>::infinity();
  const std::string b = serialize_state_file(snap, {origin_fp, "cpu-f32-exact"});
  StateFile f = StateFile::parse(InputBytes::from_buffer("nan", std::vector<uint8_t>(b.begin(), b.end())));
  const auto bad = nonfinite_classes(f);
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].name == snap.classes[1].name);
  CHECK(bad[0].nan == 1);
  CHECK(bad[0].inf == 1);
  CHECK(bad[0].first == 3);
  CHECK(bad[1].name == snap.classes.back().name);
}
