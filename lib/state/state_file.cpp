// State file writing (hash, then stream header and class bytes through AtomicWriter without an
// in-memory copy of the payload) and reading (verification before any byte is used).
#include "state/state_file.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "format/json_guard.h"
#include "memra_version.h"
#include "state/class_hash.h"

namespace memra {

namespace {

const char* const kCorruptHint = "the state file is corrupt, truncated or not a memra state; write it again";

// Keys the format owns; extra metadata may not use them (nor the hash. prefix).
const char* const kReservedKeys[] = {"format", "format_version", "writer", "model_fingerprint",
                                     "precision_class", "position", "capacity"};

struct HeaderEntry {
  std::string_view name;
  std::string_view dtype;
  const std::vector<int64_t>* shape;
  uint64_t begin, end;
};

// The one byte form of a state file's header (format 1.x): nlohmann's compact dump (object keys in
// byte order) of {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, padded with spaces
// so that the data section starts at a multiple of 8.
std::string canonical_header(const std::vector<HeaderEntry>& entries, const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  for (const auto& e : entries)
    header[std::string(e.name)] = {{"dtype", std::string(e.dtype)}, {"shape", *e.shape}, {"data_offsets", {e.begin, e.end}}};
  header["__metadata__"] = metadata;
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  return text;
}

bool valid_class_name(std::string_view name) {
  if (name.empty() || name.size() > 200 || name == "state" || name == "metadata" || name == "__metadata__") return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

bool is_extension(std::string_view name) { return name.rfind(kDrafterClassPrefix, 0) == 0; }

bool canonical_hex(const std::string& text, Hash128* out) {
  return Hash128::parse_hex(text, out) && out->hex() == text;
}

// Decimal without sign or leading zeros, at most 18 digits.
bool parse_count(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 18 || (text.size() > 1 && text[0] == '0')) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// "M.m" with each part a count of at most 4 digits.
bool parse_version(const std::string& text, int* major, int* minor) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos) return false;
  int64_t a, b;
  const std::string ma = text.substr(0, dot), mi = text.substr(dot + 1);
  if (ma.size() > 4 || mi.size() > 4 || !parse_count(ma, &a) || !parse_count(mi, &b)) return false;
  *major = static_cast<int>(a);
  *minor = static_cast<int>(b);
  return true;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

struct Prepared {
  std::string header;  // canonical header text (padded)
  StateWriteResult result;
};

// Validates the snapshot and builds the header. `hashes` null: hash the classes here; otherwise use
// them (placeholders of the right width give a header of the final length).
Prepared prepare(const HostSnapshot& snap, const StateOrigin& origin, const StateWriteOptions& options,
                 const std::vector<Hash128>* hashes = nullptr) {
  Hash128 probe;
  if (!canonical_hex(origin.model_fingerprint, &probe))
    throw Error("model fingerprint '" + printable(origin.model_fingerprint) + "' is not 32 lower-case hex digits",
                "pass Model::fingerprint().hex()");
  if (origin.precision_class.empty()) throw Error("a state file needs a precision class (e.g. cpu-f32-exact)");
  if (snap.capacity < 1 || snap.pos < 0 || snap.pos > snap.capacity)
    throw Error("snapshot has position " + std::to_string(snap.pos) + " and capacity " + std::to_string(snap.capacity));

  std::vector<ClassBytes> items;
  std::vector<std::string_view> seen;
  for (const auto& c : snap.classes) {
    if (!valid_class_name(c.name)) throw Error("class name '" + printable(c.name) + "' is not allowed in a state file");
    uint64_t n = 1;
    for (int64_t d : c.shape) {
      if (d <= 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
        throw Error("class " + c.name + " has shape " + shape_text(c.shape) + " (every dimension must be positive)");
    }
    if (!is_supported_class_dtype(c.dtype))
      throw Error("class " + c.name + " has dtype " + dtype_name(c.dtype) + " (state classes are F32, BF16, I32 or I64)");
    if (!is_extension(c.name) && c.dtype != DType::kF32) throw Error("trunk class " + c.name + " must be F32");
    if (n * dtype_size(c.dtype) != c.bytes.size())
      throw Error("class " + c.name + " holds " + std::to_string(c.bytes.size()) + " bytes, its shape needs " +
                  std::to_string(n * dtype_size(c.dtype)));
    if (std::find(seen.begin(), seen.end(), c.name) != seen.end()) throw Error("class " + c.name + " appears twice");
    seen.push_back(c.name);
    items.push_back({c.name, dtype_name(c.dtype), &c.shape, c.bytes.data(), c.bytes.size()});
  }

  Prepared p;
  p.result.class_hashes = hashes ? *hashes : class_hashes(items, options.threads);
  p.result.state_hash = state_hash(p.result.class_hashes);

  std::map<std::string, std::string> md;
  for (const auto& [k, v] : options.extra_metadata) {
    for (const char* r : kReservedKeys)
      if (k == r) throw Error("metadata key " + k + " is reserved by the state format");
    if (k.rfind("hash.", 0) == 0) throw Error("metadata key " + k + " is reserved by the state format");
    md[k] = v;
  }
  md["format"] = kStateFormatName;
  // 1.0 byte for byte when the file holds only trunk classes (readers of 1.0 read it as before);
  // 1.1 when it carries component classes (a drafter's).
  bool extended = false;
  for (const auto& c : snap.classes) extended |= is_extension(c.name);
  md["format_version"] = std::to_string(kStateFormatMajor) + "." + std::to_string(extended ? kStateFormatMinor : 0);
  md["writer"] = std::string("memra ") + MEMRA_VERSION;
  md["model_fingerprint"] = origin.model_fingerprint;
  md["precision_class"] = origin.precision_class;
  md["position"] = std::to_string(snap.pos);
  md["capacity"] = std::to_string(snap.capacity);
  for (size_t i = 0; i < items.size(); ++i) md["hash." + std::string(items[i].name)] = p.result.class_hashes[i].hex();
  md["hash.state"] = p.result.state_hash.hex();
  md[kMetadataHashKey] = metadata_hash(md).hex();

  std::vector<HeaderEntry> entries;
  uint64_t offset = 0;
  for (const auto& it : items) {
    entries.push_back({it.name, it.dtype, it.shape, offset, offset + it.nbytes});
    offset += it.nbytes;
  }
  p.header = canonical_header(entries, md);
  p.result.file_bytes = 8 + p.header.size() + offset;
  return p;
}

std::string header_length_bytes(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out;
}

}  // namespace

StateWriteResult write_state_file(const std::string& path, const HostSnapshot& snap, const StateOrigin& origin,
                                  const StateWriteOptions& options) {
  if (path == "-") {  // a pipe cannot be rewritten: hash first, then stream
    Prepared p = prepare(snap, origin, options);
    AtomicWriter out(path);
    out.write(header_length_bytes(p.header.size()));
    out.write(p.header);
    for (const auto& c : snap.classes) out.write(c.bytes.data(), c.bytes.size());
    out.commit();
    return p.result;
  }
  // Hash on other threads while the payload goes to disk; the header (whose length does not
  // depend on the hash values) is written last, before fsync and rename.
  const std::vector<Hash128> zeros(snap.classes.size());
  const Prepared placeholder = prepare(snap, origin, options, &zeros);
  AtomicWriter out(path);  // payload first, header rewritten in place last
  std::vector<ClassBytes> items;
  for (const auto& c : snap.classes) items.push_back({c.name, dtype_name(c.dtype), &c.shape, c.bytes.data(), c.bytes.size()});
  std::vector<Hash128> hashes;
  std::exception_ptr hash_error;
  std::thread hasher([&] {
    try {
      hashes = class_hashes(items, options.threads);
    } catch (...) {
      hash_error = std::current_exception();
    }
  });
  try {
    uint64_t offset = 8 + placeholder.header.size();
    for (const auto& c : snap.classes) {
      out.write_at(offset, c.bytes.data(), c.bytes.size());
      offset += c.bytes.size();
    }
  } catch (...) {
    hasher.join();
    throw;
  }
  hasher.join();
  if (hash_error) std::rethrow_exception(hash_error);
  Prepared p = prepare(snap, origin, options, &hashes);
  if (p.header.size() != placeholder.header.size()) throw Error("state header length changed while writing " + path);
  out.write_at(0, (header_length_bytes(p.header.size()) + p.header).data(), 8 + p.header.size());
  out.commit();
  return p.result;
}

std::string serialize_state_file(const HostSnapshot& snap, const StateOrigin& origin, const StateWriteOptions& options) {
  Prepared p = prepare(snap, origin, options);
  std::string out = header_length_bytes(p.header.size()) + p.header;
  out.reserve(p.result.file_bytes);
  for (const auto& c : snap.classes) out.append(reinterpret_cast<const char*>(c.bytes.data()), c.bytes.size());
  return out;
}

StateFile StateFile::open(const std::string& path, StateCheck check, int threads) {
  return parse(InputBytes::open(path), check, threads);
}

StateFile StateFile::parse(InputBytes bytes, StateCheck check, int threads) {
  const std::string where = "state file " + (bytes.path().empty() ? std::string("(memory)") : bytes.path());
  auto bad = [&](const std::string& what) { return negative(where + ": " + what, kCorruptHint); };

  StateFile f;
  try {
    f.file_ = SafetensorsFile::parse(std::move(bytes));
  } catch (const Error& e) {
    throw negative(std::string(e.what()), kCorruptHint);  // the parser names the file
  }
  f.metadata_ = f.file_.metadata();
  const auto& md = f.metadata_;
  auto get = [&](const char* key) -> const std::string& {
    auto it = md.find(key);
    if (it == md.end()) throw bad(std::string("__metadata__ has no ") + key + " (not a memra state file?)");
    return it->second;
  };

  if (get("format") != kStateFormatName)
    throw bad("format is '" + printable(get("format")) + "', expected " + kStateFormatName);
  int major = 0, minor = 0;
  const std::string& version = get("format_version");
  if (!parse_version(version, &major, &minor)) throw bad("format_version '" + printable(version) + "' is not MAJOR.MINOR");
  Hash128 stored_md, computed_md = metadata_hash(md);
  if (!canonical_hex(get(kMetadataHashKey), &stored_md)) throw bad("hash.metadata is not 32 lower-case hex digits");
  if (stored_md != computed_md)
    throw bad("metadata hash mismatch (stored " + stored_md.hex() + ", computed " + computed_md.hex() +
              "): the header was modified or damaged");
  if (major != kStateFormatMajor)
    throw Error(where + ": format version " + version + " is not readable by this memra (reads " +
                    std::to_string(kStateFormatMajor) + ".x)",
                major > kStateFormatMajor ? "use a newer memra to read this state" : "rewrite the state with this memra");
  f.version_ = version;
  f.minor_ = minor;

  // Classes in data order: contiguous from 0, non-empty, each with its hash key.
  uint64_t offset = 0;
  std::vector<HeaderEntry> entries;
  for (const TensorView& t : f.file_.tensors()) {
    if (!valid_class_name(t.name)) throw bad("class name '" + printable(t.name) + "' is not allowed");
    if (t.nbytes == 0) throw bad("class " + t.name + " is empty (empty classes are never written)");
    if (t.data_begin != offset)
      throw bad("class " + t.name + " starts at data offset " + std::to_string(t.data_begin) + ", expected " +
                std::to_string(offset) + " (classes are contiguous)");
    if (!is_supported_class_dtype(t.dtype))
      throw bad("class " + t.name + " has dtype " + dtype_name(t.dtype) + " (state classes are F32, BF16, I32 or I64)");
    if (!is_extension(t.name) && t.dtype != DType::kF32)
      throw bad("class " + t.name + " has dtype " + dtype_name(t.dtype) + ", expected F32");
    StateClassView v;
    v.name = t.name;
    v.dtype = t.dtype;
    v.shape = t.shape;
    v.numel = t.numel;
    v.data = t.data;
    v.nbytes = t.nbytes;
    auto h = md.find("hash." + t.name);
    if (h == md.end()) throw bad("class " + t.name + " has no hash." + t.name + " in __metadata__");
    if (!canonical_hex(h->second, &v.hash)) throw bad("hash." + t.name + " is not 32 lower-case hex digits");
    f.classes_.push_back(std::move(v));
    offset += t.nbytes;
    entries.push_back({t.name, dtype_name(t.dtype), &t.shape, t.data_begin, t.data_begin + t.nbytes});
  }
  for (const auto& [k, v] : md) {
    if (k.rfind("hash.", 0) != 0 || k == "hash.state" || k == kMetadataHashKey) continue;
    if (!f.find(std::string_view(k).substr(5))) throw bad(k + " names no class in the file");
  }
  const uint64_t size = f.file_.bytes().size();
  const uint64_t expected = 8 + f.file_.header_size() + offset;
  if (size != expected)
    throw bad(std::to_string(size) + " bytes, the header describes " + std::to_string(expected));
  std::string_view header_text(reinterpret_cast<const char*>(f.file_.bytes().data() + 8), f.file_.header_size());
  if (header_text != canonical_header(entries, md)) throw bad("header is not in canonical form (modified or damaged)");

  Hash128 probe;
  if (!canonical_hex(get("model_fingerprint"), &probe)) throw bad("model_fingerprint is not 32 lower-case hex digits");
  if (get("precision_class").empty()) throw bad("precision_class is empty");
  get("writer");
  if (!parse_count(get("position"), &f.position_)) throw bad("position '" + printable(get("position")) + "' is not a count");
  if (!parse_count(get("capacity"), &f.capacity_)) throw bad("capacity '" + printable(get("capacity")) + "' is not a count");
  if (f.capacity_ < 1 || f.position_ > f.capacity_)
    throw bad("position " + std::to_string(f.position_) + " exceeds capacity " + std::to_string(f.capacity_));
  if (!canonical_hex(get("hash.state"), &f.state_hash_)) throw bad("hash.state is not 32 lower-case hex digits");

  if (check == StateCheck::kFull) f.verify_payload(threads);
  return f;
}

void StateFile::verify_payload(int threads) {
  if (payload_verified_) return;
  const std::string where = "state file " + path();
  std::vector<ClassBytes> items;
  for (const auto& c : classes_) items.push_back({c.name, dtype_name(c.dtype), &c.shape, c.data, c.nbytes});
  const std::vector<Hash128> computed = class_hashes(items, threads);
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (computed[i] != classes_[i].hash)
      throw negative(where + ": class " + classes_[i].name + " hash mismatch (stored " + classes_[i].hash.hex() +
                         ", computed " + computed[i].hex() + ")",
                     kCorruptHint);
  }
  const Hash128 whole = memra::state_hash(computed);
  if (whole != state_hash_)
    throw negative(where + ": state hash mismatch (stored " + state_hash_.hex() + ", computed " + whole.hex() + ")",
                   kCorruptHint);
  payload_verified_ = true;
}

const StateClassView* StateFile::find(std::string_view name) const {
  for (const auto& c : classes_)
    if (c.name == name) return &c;
  return nullptr;
}

HostSnapshot StateFile::to_host() const {
  if (!payload_verified_) throw Error("state file " + path() + " was not verified before use");
  HostSnapshot host;
  host.pos = position_;
  host.capacity = capacity_;
  for (const auto& c : classes_) {
    CacheClass cc;
    cc.name = c.name;
    cc.dtype = c.dtype;
    cc.shape = c.shape;
    cc.bytes.assign(c.data, c.data + c.nbytes);
    host.classes.push_back(std::move(cc));
  }
  return host;
}

std::unique_ptr<State> restore_state_file(const StateFile& file, const Backend& backend, const std::string& model_fingerprint,
                                          int64_t capacity, const std::function<void(State&)>& attach) {
  const std::string where = "state file " + file.path();
  if (file.model_fingerprint() != model_fingerprint)
    throw negative(where + " belongs to model " + file.model_fingerprint() + ", not to this model (" + model_fingerprint + ")",
                   "restore it with the model it was written from");
  if (capacity < file.position())
    throw negative("capacity " + std::to_string(capacity) + " is smaller than the state's position " +
                       std::to_string(file.position()),
                   "restore with --capacity " + std::to_string(file.position()) + " or more");
  std::unique_ptr<State> state;
  try {
    state = restore_state(backend, file.to_host(), capacity, attach);
  } catch (const Error& e) {
    throw negative(where + ": " + e.what(), e.hint());
  }
  // Verified restore: the restored state's own classes must hash to what the file says.
  const std::vector<CacheClass> back = state->export_classes();
  std::vector<ClassBytes> items;
  for (const auto& c : back) items.push_back({c.name, dtype_name(c.dtype), &c.shape, c.bytes.data(), c.bytes.size()});
  const std::vector<Hash128> hashes = class_hashes(items);
  if (back.size() != file.classes().size())
    throw negative(where + ": restored state has " + std::to_string(back.size()) + " classes, the file " +
                       std::to_string(file.classes().size()),
                   "this is a memra bug; please report it");
  for (size_t i = 0; i < back.size(); ++i) {
    const auto& c = file.classes()[i];
    if (back[i].name != c.name || hashes[i] != c.hash)
      throw negative(where + ": restored class " + c.name + " does not hash to the file's " + c.hash.hex(),
                     "this is a memra bug; please report it");
  }
  return state;
}

}  // namespace memra
