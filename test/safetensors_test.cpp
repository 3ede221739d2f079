// safetensors: round trips through the writer, and every kind of hostile file is a one-line
// memra::Error naming the problem (never a crash, never a read past the end).
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "format/safetensors.h"
#include "loader_test_util.h"

using namespace loader_test;
using memra::DType;
using memra::SafetensorsFile;
using memra::SafetensorsWriter;

namespace {

// u64 little-endian header length + header text + data bytes.
std::string raw_file(const std::string& header, const std::string& data) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + data;
}

std::string small_valid_file() {
  SafetensorsWriter w;
  float a[6] = {1, 2, 3, 4, 5, 6};
  int64_t ids[4] = {0, 3, 1, 2};
  uint16_t bf[3] = {0x3f80, 0xc000, 0x3e00};  // 1, -2, 0.125
  w.add("a", DType::kF32, {2, 3}, a, sizeof a);
  w.add("ids", DType::kI64, {2, 2}, ids, sizeof ids);
  w.add("b", DType::kBF16, {3}, bf, sizeof bf);
  w.set_metadata("format", "pt");
  return w.serialize();
}

SafetensorsFile parse_file(const TempDir& dir, const std::string& bytes) {
  std::string p = dir.file("t.safetensors");
  write_bytes(p, bytes);
  return SafetensorsFile::open(p);
}

}  // namespace

TEST_CASE("loader safetensors: writer output parses back to the same tensors", "[cpu][loader]") {
  TempDir dir;
  std::string bytes = small_valid_file();
  CHECK((8 + (bytes.size() - 8 - (6 * 4 + 4 * 8 + 3 * 2))) % 8 == 0);  // data section 8-byte aligned
  SafetensorsFile f = parse_file(dir, bytes);
  REQUIRE(f.tensors().size() == 3);
  CHECK(f.tensors()[0].name == "a");  // data-offset order
  CHECK(f.metadata().at("format") == "pt");
  const auto& a = f.get("a");
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(a.numel == 6);
  CHECK(memra::tensor_to_f32(a) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(memra::tensor_to_i64(f.get("ids")) == std::vector<int64_t>{0, 3, 1, 2});
  CHECK(memra::tensor_to_f32(f.get("b")) == std::vector<float>{1.0f, -2.0f, 0.125f});
  CHECK(f.find("nope") == nullptr);
  require_error([&] { f.get("nope"); }, {"nope"});
  require_error([&] { memra::tensor_to_i64(a); }, {"a", "F32"});
  require_error([&] { memra::tensor_to_f32(f.get("ids")); }, {"ids", "I64"});

  SECTION("f16 and f64 widen to f32") {
    SafetensorsWriter w;
    uint16_t h[4] = {0x3c00, 0xc400, 0x0001, 0x7c00};  // 1, -4, smallest subnormal, inf
    double d[2] = {0.5, -3.25};
    w.add("h", DType::kF16, {4}, h, sizeof h);
    w.add("d", DType::kF64, {2}, d, sizeof d);
    SafetensorsFile g = parse_file(dir, w.serialize());
    auto hv = memra::tensor_to_f32(g.get("h"));
    CHECK(hv[0] == 1.0f);
    CHECK(hv[1] == -4.0f);
    CHECK(hv[2] == Approx(5.960464477539063e-08f));
    CHECK(std::isinf(hv[3]));
    CHECK(memra::tensor_to_f32(g.get("d")) == std::vector<float>{0.5f, -3.25f});
  }
  SECTION("the writer refuses a byte count that disagrees with the shape") {
    SafetensorsWriter w;
    float x[3] = {};
    require_error([&] { w.add("x", DType::kF32, {2, 2}, x, sizeof x); }, {"x"});
  }
  SECTION("gaps between tensors are allowed") {
    std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
    SafetensorsFile g = parse_file(dir, raw_file(header, std::string(12, '\0')));
    CHECK(g.tensors().size() == 2);
  }
}

TEST_CASE("loader safetensors: rejects truncated files", "[cpu][loader]") {
  TempDir dir;
  std::string good = small_valid_file();
  uint64_t header_len = 0;
  std::memcpy(&header_len, good.data(), 8);
  SECTION("shorter than the length field") {
    for (size_t n : {0, 1, 7}) require_error([&] { parse_file(dir, good.substr(0, n)); }, {"too short"});
  }
  SECTION("inside the header") {
    for (size_t n : {size_t{8}, size_t{9}, size_t{8 + header_len / 2}, size_t{8 + header_len - 1}})
      require_error([&] { parse_file(dir, good.substr(0, n)); }, {"header length", "past the end"});
  }
  SECTION("inside the data") {
    for (size_t n : {size_t{8 + header_len}, size_t{8 + header_len + 10}, good.size() - 1})
      require_error([&] { parse_file(dir, good.substr(0, n)); }, {"out of range"});
  }
}

TEST_CASE("loader safetensors: rejects hostile headers", "[cpu][loader]") {
  TempDir dir;
  const std::string d16(16, '\0');
  auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape, const std::string& off) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + off + "}";
  };
  SECTION("header length past EOF") {
    std::string f = raw_file("{}", d16);
    f[0] = 100;
    require_error([&] { parse_file(dir, f); }, {"header length 100", "past the end"});
  }
  SECTION("huge header length") {
    std::string f = raw_file("{}", d16);
    f[7] = 0x7f;
    require_error([&] { parse_file(dir, f); }, {"exceeds"});
    std::string g = raw_file("{}", d16);
    std::memset(&g[0], 0xff, 8);
    require_error([&] { parse_file(dir, g); }, {"exceeds"});
  }
  SECTION("overlapping offsets") {
    std::string h = "{" + entry("x", "F32", "[2]", "[0,8]") + "," + entry("y", "F32", "[2]", "[4,12]") + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"overlapping", "x", "y"});
  }
  SECTION("out-of-range offsets") {
    std::string h = "{" + entry("x", "F32", "[4]", "[8,24]") + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"tensor x", "out of range"});
  }
  SECTION("reversed offsets") {
    std::string h = "{" + entry("x", "F32", "[0]", "[8,4]") + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"tensor x", "reversed"});
  }
  SECTION("offsets that are not integers") {
    for (std::string off : {"[0]", "[-1,3]", "[0.5,4]", "\"0,4\"", "[0,99999999999999999999999]"})
      require_error([&] { parse_file(dir, raw_file("{" + entry("x", "U8", "[4]", off) + "}", d16)); }, {"tensor x"});
  }
  SECTION("shape product overflows") {
    std::string h = "{" + entry("x", "F32", "[4294967296,4294967296,16]", "[0,16]") + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"tensor x", "overflows"});
    std::string g = "{" + entry("x", "F32", "[18446744073709551615]", "[0,16]") + "}";
    require_error([&] { parse_file(dir, raw_file(g, d16)); }, {"tensor x"});
    std::string k = "{" + entry("x", "F32", "[-4]", "[0,16]") + "}";
    require_error([&] { parse_file(dir, raw_file(k, d16)); }, {"tensor x", "shape"});
  }
  SECTION("byte count disagrees with shape and dtype") {
    std::string h = "{" + entry("x", "F32", "[3]", "[0,16]") + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"tensor x", "16 bytes", "need 12"});
  }
  SECTION("unknown dtype") {
    std::string h = "{" + entry("x", "F4_E2M1", "[16]", "[0,16]") + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"tensor x", "unknown dtype", "F4_E2M1"});
  }
  SECTION("non-UTF8 header") {
    std::string h = "{" + entry("x\xff\xfe", "U8", "[16]", "[0,16]") + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"UTF-8"});
    std::string overlong = "{" + entry("x\xc0\xaf", "U8", "[16]", "[0,16]") + "}";
    require_error([&] { parse_file(dir, raw_file(overlong, d16)); }, {"UTF-8"});
  }
  SECTION("invalid JSON") {
    for (std::string h : {"{\"x\":", "{]", "not json at all", "{\"x\":{\"dtype\":\"U8\",}}"})
      require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"not valid JSON"});
  }
  SECTION("header is not an object, entries are not objects") {
    require_error([&] { parse_file(dir, raw_file("[1,2,3]", d16)); }, {"not a JSON object"});
    require_error([&] { parse_file(dir, raw_file(R"({"x": 5})", d16)); }, {"tensor x", "not an object"});
    require_error([&] { parse_file(dir, raw_file(R"({"x": {"shape":[1],"data_offsets":[0,1]}})", d16)); }, {"tensor x", "dtype"});
    require_error([&] { parse_file(dir, raw_file(R"({"x": {"dtype":"U8","data_offsets":[0,1]}})", d16)); }, {"tensor x", "shape"});
    require_error([&] { parse_file(dir, raw_file(R"({"__metadata__": {"k": 1}})", d16)); }, {"__metadata__"});
    require_error([&] { parse_file(dir, raw_file(R"({"__metadata__": []})", d16)); }, {"__metadata__"});
  }
  SECTION("duplicate tensor names") {
    std::string h = "{" + entry("x", "U8", "[4]", "[0,4]") + "," + entry("x", "U8", "[4]", "[4,8]") + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"duplicate", "x"});
  }
  SECTION("deeply nested JSON") {
    std::string h = "{\"__metadata__\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    require_error([&] { parse_file(dir, raw_file(h, d16)); }, {"deeper"});
  }
}

TEST_CASE("loader safetensors: survives 2000 random mutations", "[cpu][loader]") {
  TempDir dir;
  const std::string good = small_valid_file();
  std::mt19937_64 rng(20260501);
  size_t parsed = 0, rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string m = good;
    int kind = static_cast<int>(rng() % 4);
    if (kind == 0) {  // truncation
      m.resize(rng() % m.size());
    } else {  // 1..4 byte flips, biased toward the length field and the header
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) {
        size_t pos = kind == 1 ? rng() % 8 : rng() % m.size();
        m[pos] = static_cast<char>(kind == 3 ? (m[pos] ^ (1 << (rng() % 8))) : static_cast<char>(rng()));
      }
    }
    std::string p = dir.file("m.safetensors");
    write_bytes(p, m);
    try {
      SafetensorsFile f = SafetensorsFile::open(p);
      for (const auto& t : f.tensors()) {  // touch every byte a view claims
        REQUIRE(t.data + t.nbytes <= f.bytes().data() + f.bytes().size());
        if (t.dtype == DType::kF32 || t.dtype == DType::kBF16 || t.dtype == DType::kF16 || t.dtype == DType::kF64)
          (void)memra::tensor_to_f32(t);
        else if (t.dtype != DType::kBool)
          (void)memra::tensor_to_i64(t);
      }
      ++parsed;
    } catch (const memra::Error& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      ++rejected;
    }
  }
  CHECK(parsed + rejected == 2000);
  CHECK(rejected > 500);
}
