// State file writing (hash, then stream header and class bytes through AtomicWriter without an
// in-memory copy of the payload) and reading (verification before any byte is used).
#include "state/state_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/checked.h"
#include "core/shape_text.h"
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
                                     "precision_class", "position", "capacity", "qat"};

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

struct Prepared {
  std::string header;  // canonical header text (padded)
  StateWriteResult result;
};

// What a state file holds, from either snapshot form: position, capacity and the classes in order.
struct Item {
  const std::string* name;
  DType dtype;
  const std::vector<int64_t>* shape;
  const uint8_t* data;
  size_t nbytes;
};
struct Source {
  int64_t pos = 0, capacity = 0;
  std::vector<Item> items;
};

Source source_of(const HostSnapshot& snap) {
  Source src{snap.pos, snap.capacity, {}};
  for (const auto& c : snap.classes) src.items.push_back({&c.name, c.dtype, &c.shape, c.bytes.data(), c.bytes.size()});
  return src;
}

Source source_of(const StreamedSnapshot& snap) {
  Source src{snap.pos, snap.capacity, {}};
  size_t offset = 0;
  for (const auto& l : snap.layout) {
    src.items.push_back({&l.name, l.dtype, &l.shape, snap.bytes.data() + offset, l.nbytes()});
    offset += l.nbytes();
  }
  return src;
}

std::vector<ClassBytes> class_bytes(const Source& src) {
  std::vector<ClassBytes> items;
  for (const auto& it : src.items) items.push_back({*it.name, dtype_name(it.dtype), it.shape, it.data, it.nbytes});
  return items;
}

// Keyed BLAKE2b-256 over a domain string, the canonical header of the metadata without the tag and
// hash.metadata (length-prefixed), then every class's bytes in data order (their lengths are in
// that header, so the stream is unambiguous).
template <typename Bytes>
std::string auth_tag(const AuthKey& key, const std::vector<HeaderEntry>& entries,
                     std::map<std::string, std::string> metadata, const Bytes& payload) {
  metadata.erase(kMetadataHashKey);
  metadata.erase(kAuthTagKey);
  const std::string header = canonical_header(entries, metadata);
  KeyedHasher h(key);
  h.update(std::string_view("memra.state auth 1"));
  h.update_u64(header.size());
  h.update(header);
  for (const auto& [data, size] : payload) h.update(data, size);
  return h.hex_digest();
}

// Validates the source and builds the header. `hashes` null: hash the classes here; otherwise use
// them (placeholders of the right width give a header of the final length; `placeholder_tag`
// likewise stands in for the keyed tag).
Prepared prepare(const Source& snap, const StateOrigin& origin, const StateWriteOptions& options,
                 const std::vector<Hash128>* hashes = nullptr, bool placeholder_tag = false) {
  Hash128 probe;
  if (!canonical_hex(origin.model_fingerprint, &probe))
    throw Error("model fingerprint '" + printable(origin.model_fingerprint) + "' is not 32 lower-case hex digits",
                "pass Model::fingerprint().hex()");
  if (origin.precision_class.empty()) throw Error("a state file needs a precision class (e.g. cpu-f32-exact)");
  if (snap.capacity < 1 || snap.pos < 0 || snap.pos > snap.capacity)
    throw Error("snapshot has position " + std::to_string(snap.pos) + " and capacity " + std::to_string(snap.capacity));

  std::vector<ClassBytes> items;
  std::vector<std::string_view> seen;
  for (const auto& c : snap.items) {
    const std::string& name = *c.name;
    if (!valid_class_name(name)) throw Error("class name '" + printable(name) + "' is not allowed in a state file");
    uint64_t n = 1;
    for (int64_t d : *c.shape) {
      if (d <= 0 || !mul_fits(n, static_cast<uint64_t>(d), &n))
        throw Error("class " + name + " has shape " + shape_text(*c.shape) + " (every dimension must be positive)");
    }
    if (!is_supported_class_dtype(c.dtype))
      throw Error("class " + name + " has dtype " + dtype_name(c.dtype) + " (state classes are F32, BF16, I32 or I64)");
    if (!is_extension(name) && c.dtype != DType::kF32) throw Error("trunk class " + name + " must be F32");
    uint64_t need = 0;
    if (!mul_fits(n, dtype_size(c.dtype), &need) || need != c.nbytes)
      throw Error("class " + name + " holds " + std::to_string(c.nbytes) + " bytes, its shape needs " +
                  std::to_string(n) + " x " + std::to_string(dtype_size(c.dtype)));
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) throw Error("class " + name + " appears twice");
    seen.push_back(name);
    items.push_back({name, dtype_name(c.dtype), c.shape, c.data, c.nbytes});
  }
  if (hashes && hashes->size() != items.size()) throw Error("internal: " + std::to_string(hashes->size()) +
                                                            " class hashes for " + std::to_string(items.size()) + " classes");

  Prepared p;
  p.result.class_hashes = hashes ? *hashes : class_hashes(items, options.threads);
  p.result.state_hash = state_hash(p.result.class_hashes);

  std::map<std::string, std::string> md;
  for (const auto& [k, v] : options.extra_metadata) {
    for (const char* r : kReservedKeys)
      if (k == r) throw Error("metadata key " + k + " is reserved by the state format");
    if (k.rfind("hash.", 0) == 0 || k.rfind("auth.", 0) == 0)
      throw Error("metadata key " + k + " is reserved by the state format");
    md[k] = v;
  }
  md["format"] = kStateFormatName;
  // 1.0 byte for byte when the file holds only trunk classes (readers of 1.0 read it as before);
  // 1.1 when it carries component classes (a drafter's).
  bool extended = false;
  for (const auto& c : snap.items) extended |= is_extension(*c.name);
  md["format_version"] = std::to_string(kStateFormatMajor) + "." + std::to_string(extended ? kStateFormatMinor : 0);
  md["writer"] = std::string("memra ") + MEMRA_VERSION;
  md["model_fingerprint"] = origin.model_fingerprint;
  md["precision_class"] = origin.precision_class;
  if (origin.qat) md["qat"] = "on";
  md["position"] = std::to_string(snap.pos);
  md["capacity"] = std::to_string(snap.capacity);
  for (size_t i = 0; i < items.size(); ++i) md["hash." + std::string(items[i].name)] = p.result.class_hashes[i].hex();
  md["hash.state"] = p.result.state_hash.hex();

  std::vector<HeaderEntry> entries;
  uint64_t offset = 0;
  for (const auto& it : items) {
    entries.push_back({it.name, it.dtype, it.shape, offset, offset + it.nbytes});
    offset += it.nbytes;
  }
  if (options.key) {  // the placeholder header only needs the tag's length
    std::vector<std::pair<const void*, size_t>> payload;
    for (const auto& it : items) payload.emplace_back(it.data, it.nbytes);
    md[kAuthTagKey] = placeholder_tag ? std::string(64, '0') : auth_tag(*options.key, entries, md, payload);
  }
  md[kMetadataHashKey] = metadata_hash(md).hex();
  p.header = canonical_header(entries, md);
  p.result.file_bytes = 8 + p.header.size() + offset;
  return p;
}

std::string header_length_bytes(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out;
}

// Writes the file atomically. `known` null: the class hashes are computed on other threads while
// the payload goes to disk, and the header (whose length does not depend on the hash values) is
// written last, before fsync and rename; otherwise they are the given ones (a streamed snapshot
// hashed its classes as they landed).
StateWriteResult write_source(const std::string& path, const Source& snap, const StateOrigin& origin,
                              const StateWriteOptions& options, const std::vector<Hash128>* known) {
  AtomicWriter out(path);
  if (!out.seekable() || known) {  // stdout, a pipe or a device cannot be rewritten: hash first, then stream
    Prepared p = prepare(snap, origin, options, known);
    out.write(header_length_bytes(p.header.size()));
    out.write(p.header);
    for (const auto& c : snap.items) out.write(c.data, c.nbytes);
    out.commit();
    return p.result;
  }
  const std::vector<Hash128> zeros(snap.items.size());
  const Prepared placeholder = prepare(snap, origin, options, &zeros, true);  // payload first, header written last
  const std::vector<ClassBytes> items = class_bytes(snap);
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
    for (const auto& c : snap.items) {
      out.write_at(offset, c.data, c.nbytes);
      offset += c.nbytes;
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

}  // namespace

StateWriteResult write_state_file(const std::string& path, const HostSnapshot& snap, const StateOrigin& origin,
                                  const StateWriteOptions& options) {
  return write_source(path, source_of(snap), origin, options, nullptr);
}

StateWriteResult write_state_file(const std::string& path, const StreamedSnapshot& snap, const StateOrigin& origin,
                                  const StateWriteOptions& options) {
  return write_source(path, source_of(snap), origin, options, &snap.hashes);
}

std::string serialize_state_file(const HostSnapshot& snap, const StateOrigin& origin, const StateWriteOptions& options) {
  const Source src = source_of(snap);
  Prepared p = prepare(src, origin, options);
  std::string out = header_length_bytes(p.header.size()) + p.header;
  out.reserve(p.result.file_bytes);
  for (const auto& c : src.items) out.append(reinterpret_cast<const char*>(c.data), c.nbytes);
  return out;
}

StateFile StateFile::open(const std::string& path, StateCheck check, int threads) {
  auto stream = StdinReader::open_stream(path);  // header first: a stream that is not a state fails on its first bytes
  if (!stream) return parse(InputBytes::open(path), check, threads);
  return parse(SafetensorsFile::read_stream(*stream, path, stdin_limit()), check, threads);
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
  if (md.count("qat") && md.at("qat") != "on") throw bad("qat '" + printable(md.at("qat")) + "' is not 'on'");
  get("writer");
  if (!parse_count(get("position"), &f.position_)) throw bad("position '" + printable(get("position")) + "' is not a count");
  if (!parse_count(get("capacity"), &f.capacity_)) throw bad("capacity '" + printable(get("capacity")) + "' is not a count");
  if (f.capacity_ < 1 || f.position_ > f.capacity_)
    throw bad("position " + std::to_string(f.position_) + " exceeds capacity " + std::to_string(f.capacity_));
  if (!canonical_hex(get("hash.state"), &f.state_hash_)) throw bad("hash.state is not 32 lower-case hex digits");
  if (auto tag = md.find(kAuthTagKey); tag != md.end()) {
    const std::string& t = tag->second;
    if (t.size() != 64 || t.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw bad(std::string(kAuthTagKey) + " is not 64 lower-case hex digits");
  }

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

void StateFile::verify_auth(const AuthKey& key) const {
  const std::string where = "state file " + path();
  auto tag = metadata_.find(kAuthTagKey);
  if (tag == metadata_.end())
    throw negative(where + " carries no keyed tag (" + kAuthTagKey + "): it was written without --key, so who wrote it cannot be checked",
                   "write it again with --key, or drop --key to accept it on its XXH3 hashes alone (they catch accidents, not forgery)");
  std::vector<HeaderEntry> entries;
  std::vector<std::pair<const void*, size_t>> payload;
  for (const auto& c : classes_) {
    const uint64_t begin = static_cast<uint64_t>(c.data - classes_.front().data);
    entries.push_back({c.name, dtype_name(c.dtype), &c.shape, begin, begin + c.nbytes});
    payload.emplace_back(c.data, c.nbytes);
  }
  if (!tags_equal(auth_tag(key, entries, metadata_, payload), tag->second))
    throw negative(where + ": keyed tag mismatch: the file was modified after it was written, or written with another key",
                   "do not use this state; get it again from where it was written");
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

std::vector<NonFiniteClass> nonfinite_classes(const StateFile& file) {
  std::vector<NonFiniteClass> out;
  for (const auto& c : file.classes()) {
    if (c.dtype != DType::kF32) continue;
    NonFiniteClass n{c.name};
    for (uint64_t i = 0; i < c.numel; ++i) {
      float v;
      std::memcpy(&v, c.data + 4 * i, 4);
      if (std::isfinite(v)) continue;
      if (n.nan + n.inf == 0) n.first = i;
      ++(std::isnan(v) ? n.nan : n.inf);
    }
    if (n.nan + n.inf > 0) out.push_back(std::move(n));
  }
  return out;
}

std::unique_ptr<State> restore_state_file(const StateFile& file, const Backend& backend, const std::string& model_fingerprint,
                                          int64_t capacity, const std::function<void(State&)>& attach) {
  const std::string where = "state file " + file.path();
  if (!file.payload_verified()) throw Error(where + " was not verified before use");
  if (file.model_fingerprint() != model_fingerprint)
    throw negative(where + " belongs to model " + file.model_fingerprint() + ", not to this model (" + model_fingerprint + ")",
                   "restore it with the model it was written from");
  if (file.qat() != backend.qat())
    throw negative(where + (file.qat() ? " was computed with the QAT simulations on (--qat); this backend has them off"
                                       : " was computed without the QAT simulations; this backend has them on (--qat)"),
                   file.qat() ? "add --qat to continue it" : "drop --qat to continue it");
  if (capacity < file.position())
    throw negative("capacity " + std::to_string(capacity) + " is smaller than the state's position " +
                       std::to_string(file.position()),
                   "restore with --capacity " + std::to_string(file.position()) + " or more");
  // The classes lie end to end in the file's data section (checked when it was parsed): they are
  // streamed into the new state straight from the file's bytes.
  std::vector<ClassLayout> layout;
  size_t total = 0;
  for (const auto& c : file.classes()) {
    layout.push_back(ClassLayout{c.name, c.dtype, c.shape});
    total += c.nbytes;
  }
  const uint8_t* data = file.classes().empty() ? nullptr : file.classes().front().data;
  std::unique_ptr<State> state;
  try {
    state = restore_stream(backend, file.position(), capacity, layout, data, total, attach);
  } catch (const Error& e) {
    throw negative(where + ": " + e.what(), e.hint());
  }
  // Verified restore: the restored state's own classes must hash to what the file says.
  const StreamedSnapshot back = stream_snapshot(backend, *state);
  if (back.layout.size() != file.classes().size())
    throw negative(where + ": restored state has " + std::to_string(back.layout.size()) + " classes, the file " +
                       std::to_string(file.classes().size()),
                   "this is a memra bug; please report it");
  for (size_t i = 0; i < back.layout.size(); ++i) {
    const auto& c = file.classes()[i];
    if (back.layout[i].name != c.name || back.hashes[i] != c.hash)
      throw negative(where + ": restored class " + c.name + " does not hash to the file's " + c.hash.hex(),
                     "this is a memra bug; please report it");
  }
  return state;
}

}  // namespace memra
