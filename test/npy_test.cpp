// .npy: f32 arrays round-trip in NumPy's layout, int32/int64 token lists read back, and hostile
// files (bad magic, truncation, lying header, unsupported dtype or order) are Errors naming the problem.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "format/npy.h"
#include "loader_test_util.h"

using namespace loader_test;

namespace {

// A .npy v1.0 file with the given dict text (padded as NumPy does) and data bytes.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64 != 0) h.push_back(' ');
  h.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  out.push_back(static_cast<char>(h.size() & 0xff));
  out.push_back(static_cast<char>(h.size() >> 8));
  if (major != 1) out += std::string(2, '\0');
  return out + h + data;
}

template <typename T>
std::string le_bytes(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

memra::NpyArray parse(const std::string& bytes) {
  return memra::parse_npy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "t.npy");
}

}  // namespace

TEST_CASE("loader npy: f32 arrays are written in NumPy's layout and read back", "[cpu][loader]") {
  TempDir dir;
  std::vector<float> v = {1.5f, -2.0f, 0.0f, 3.25f, 1e-30f, -7.0f};
  memra::write_npy_f32(dir.file("x.npy"), v.data(), {2, 3});
  std::string bytes = read_bytes(dir.file("x.npy"));
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  uint16_t hl = static_cast<uint16_t>(static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8));
  CHECK((10 + hl) % 64 == 0);
  CHECK(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") == 10);
  memra::NpyArray a = memra::read_npy(dir.file("x.npy"));
  CHECK(a.descr == "<f4");
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(memra::npy_to_f32(a, "x") == v);
  SECTION("1-D and 0-D shapes use Python tuple syntax") {
    CHECK(memra::serialize_npy_f32(v.data(), {6}).find("'shape': (6,)") != std::string::npos);
    CHECK(memra::serialize_npy_f32(v.data(), {}).find("'shape': ()") != std::string::npos);
    CHECK(parse(memra::serialize_npy_f32(v.data(), {})).numel == 1);
  }
  SECTION("an npy is not a token list") {
    require_error([&] { memra::npy_to_ids(a, "x.npy"); }, {"x.npy", "dimensions"});
  }
}

TEST_CASE("loader npy: int32 and int64 token lists", "[cpu][loader]") {
  TempDir dir;
  write_bytes(dir.file("a.npy"), npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }",
                                          le_bytes<int32_t>({5, -1, 70000, 0})));
  CHECK(memra::read_npy_ids(dir.file("a.npy")) == std::vector<int64_t>{5, -1, 70000, 0});
  write_bytes(dir.file("b.npy"), npy_file("{\"descr\":\"<i8\",\"fortran_order\":True,\"shape\":(3 ,)}",
                                          le_bytes<int64_t>({int64_t{1} << 40, 2, 3}), 2));
  CHECK(memra::read_npy_ids(dir.file("b.npy")) == std::vector<int64_t>{int64_t{1} << 40, 2, 3});
  write_bytes(dir.file("c.npy"), npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (0,), }", ""));
  CHECK(memra::read_npy_ids(dir.file("c.npy")).empty());
  write_bytes(dir.file("f.npy"), npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", le_bytes<float>({1})));
  require_error([&] { memra::read_npy_ids(dir.file("f.npy")); }, {"f.npy", "<f4", "int32"});
}

TEST_CASE("loader npy: hostile files are rejected with a reason", "[cpu][loader]") {
  const std::string ok_dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data = le_bytes<int32_t>({1, 2});
  const std::string good = npy_file(ok_dict, data);
  REQUIRE(parse(good).numel == 2);
  require_error([&] { parse("\x93NUMPX" + good.substr(6)); }, {"magic"});
  for (size_t n : {size_t{0}, size_t{5}, size_t{9}}) require_error([&] { parse(good.substr(0, n)); }, {"t.npy"});
  require_error([&] { parse(good.substr(0, 40)); }, {"past the end"});
  require_error([&] { parse(good.substr(0, good.size() - 1)); }, {"data bytes"});
  require_error([&] { parse(good + "xx"); }, {"data bytes"});
  {
    std::string v9 = good;
    v9[6] = 9;
    require_error([&] { parse(v9); }, {"version 9"});
    std::string big = npy_file(ok_dict, data, 2);
    big[11] = 0x7f;
    require_error([&] { parse(big); }, {"header"});
  }
  require_error([&] { parse(npy_file("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", data)); }, {"'>i4'"});
  require_error([&] { parse(npy_file("{'descr': '<U8', 'fortran_order': False, 'shape': (2,), }", data)); }, {"'<U8'"});
  require_error([&] { parse(npy_file("{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2), }", data)); }, {"Fortran"});
  require_error([&] { parse(npy_file("{'descr': '<i4', 'fortran_order': Maybe, 'shape': (2,), }", data)); }, {"fortran_order"});
  require_error([&] { parse(npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (-2,), }", data)); }, {"shape"});
  require_error([&] { parse(npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", data)); }, {"overflow"});
  require_error([&] { parse(npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", data)); }, {"too large"});
  require_error([&] { parse(npy_file("{'descr': '<i4', 'shape': (2,), }", data)); }, {"lacks"});
  require_error([&] { parse(npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", data)); }, {"extra"});
  require_error([&] { parse(npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (2,) ", data)); }, {"malformed"});
  require_error([&] { parse(npy_file("{'descr': '<i4\xff', 'fortran_order': False, 'shape': (2,), }", data)); }, {"ASCII"});
  require_error([&] { memra::npy_to_ids(parse(npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2), }", data)), "t.npy"); },
                {"1-D"});

  SECTION("1000 random mutations never crash") {
    std::mt19937_64 rng(7);
    size_t parsed = 0, rejected = 0;
    for (int i = 0; i < 1000; ++i) {
      std::string m = good;
      if (rng() % 3 == 0) m.resize(rng() % m.size());
      else
        for (int k = 0; k < 3; ++k) m[rng() % m.size()] = static_cast<char>(rng());
      try {
        memra::NpyArray a = parse(m);
        if (a.descr == "<i4" || a.descr == "<i8") {
          if (a.shape.size() == 1) (void)memra::npy_to_ids(a, "m");
        } else if (a.descr == "<f4" || a.descr == "<f8") {
          (void)memra::npy_to_f32(a, "m");
        }
        ++parsed;
      } catch (const memra::Error&) {
        ++rejected;
      }
    }
    CHECK(parsed + rejected == 1000);
    CHECK(rejected > 100);
  }
}
