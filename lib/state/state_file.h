// memra state files: a valid safetensors file of a decode state's cache classes (f32, live values
// only, in cache_classes() order) whose __metadata__ carries the format name and version, the model
// fingerprint, position, capacity, precision class, an XXH3-128 per class, a whole-state hash and a
// hash of the metadata itself. docs/state-format.md and manifests/state.schema.json are the spec.
//
// Reading is verification first: the safetensors structure (hostile-safe), the format name and
// version, the metadata hash, the header's canonical byte form, contiguous data that ends exactly
// at the end of the file, then (StateCheck::kFull) every class hash and the state hash. Any failure
// is a negative Error (exit 1) naming the reason, except a newer major version (exit 2).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/hash.h"
#include "core/keyed_hash.h"
#include "format/safetensors.h"
#include "state/snapshot.h"

namespace memra {

inline constexpr const char* kStateFormatName = "memra.state";
inline constexpr int kStateFormatMajor = 1;  // a reader refuses another major
inline constexpr int kStateFormatMinor = 1;  // newer minors only add metadata keys and classes
// 1.1 adds component classes (prefix kDrafterClassPrefix, any of F32/BF16/I32/I64); a file without
// them is written as 1.0, byte for byte what earlier memra wrote.

// Where a state came from: recorded in the file, checked on restore.
struct StateOrigin {
  std::string model_fingerprint;  // Model::fingerprint().hex(): 32 lower-case hex digits
  std::string precision_class;    // Backend::precision_class(), e.g. "cpu-f32-exact"
  bool qat = false;               // Backend::qat(): metadata "qat": "on" (absent when off, as before)
};

// The optional keyed tag (docs/state-format.md, "Integrity is not authenticity"): keyed BLAKE2b-256
// over the header without this key and hash.metadata, and the whole payload.
inline constexpr const char* kAuthTagKey = "auth.blake2b";

struct StateWriteOptions {
  int threads = 0;                                // hashing threads (0: one per core)
  std::map<std::string, std::string> extra_metadata;  // more keys (must not collide with the format's)
  const AuthKey* key = nullptr;                   // when set, the file carries a keyed tag
};

struct StateWriteResult {
  std::vector<Hash128> class_hashes;  // in class order
  Hash128 state_hash;
  uint64_t file_bytes = 0;
};

// The metadata and header for `classes`; serialize_state_file() = header bytes + class bytes.
StateWriteResult write_state_file(const std::string& path, const HostSnapshot& snap, const StateOrigin& origin,
                                  const StateWriteOptions& options = {});
std::string serialize_state_file(const HostSnapshot& snap, const StateOrigin& origin,
                                 const StateWriteOptions& options = {});
// The same file from a streamed snapshot, whose class hashes were computed as its bytes landed
// (the CUDA backend's pinned, overlapped export): byte for byte what the HostSnapshot form writes.
StateWriteResult write_state_file(const std::string& path, const StreamedSnapshot& snap, const StateOrigin& origin,
                                  const StateWriteOptions& options = {});

// A class as stored in the file (views into the file's bytes).
struct StateClassView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t numel = 0;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  Hash128 hash;  // as stored; equal to the recomputed hash once payload_verified()
};

enum class StateCheck {
  kHeader,  // structure, format/version, metadata hash, canonical header; class hashes as stored
  kFull,    // kHeader + every class hash and the state hash recomputed
};

class StateFile {
 public:
  static StateFile open(const std::string& path, StateCheck check = StateCheck::kFull, int threads = 0);  // `-` = stdin
  static StateFile parse(InputBytes bytes, StateCheck check = StateCheck::kFull, int threads = 0);

  // Recomputes every class hash and the state hash (no-op once done); negative Error naming the
  // first class (in file order) whose bytes disagree.
  void verify_payload(int threads = 0);
  // Checks the keyed tag with `key`: a negative Error when the file has no tag or the tag does not
  // match (modified, or written with another key). The computed tag is never printed.
  void verify_auth(const AuthKey& key) const;
  bool has_auth_tag() const { return metadata_.count(kAuthTagKey) > 0; }
  bool payload_verified() const { return payload_verified_; }

  const std::string& path() const { return file_.path(); }
  const std::string& version() const { return version_; }  // "1.0"
  int minor_version() const { return minor_; }
  int64_t position() const { return position_; }
  int64_t capacity() const { return capacity_; }
  const std::string& model_fingerprint() const { return metadata_.at("model_fingerprint"); }
  const std::string& precision_class() const { return metadata_.at("precision_class"); }
  bool qat() const { return metadata_.count("qat") > 0; }  // written with the QAT simulations on
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<StateClassView>& classes() const { return classes_; }  // file (= cache_classes) order
  const StateClassView* find(std::string_view name) const;
  const Hash128& state_hash() const { return state_hash_; }
  uint64_t file_bytes() const { return file_.bytes().size(); }

  // Every class (all components) as a host snapshot. Requires a verified payload.
  HostSnapshot to_host() const;

 private:
  SafetensorsFile file_;
  std::map<std::string, std::string> metadata_;
  std::vector<StateClassView> classes_;
  std::string version_;
  int minor_ = 0;
  int64_t position_ = 0;
  int64_t capacity_ = 0;
  Hash128 state_hash_;
  bool payload_verified_ = false;
};

// F32 classes holding NaN or ±Inf, in file order. Hashes prove that bytes are what was written,
// not that the values are sane: a state that overflowed restores bit-exactly and then decodes NaN
// logits, so readers report these (memra restore and snapshot print a warning and a JSON field).
struct NonFiniteClass {
  std::string name;
  uint64_t nan = 0, inf = 0;
  uint64_t first = 0;  // flat index of the first non-finite value
};
std::vector<NonFiniteClass> nonfinite_classes(const StateFile& file);

// Verified restore: checks the model fingerprint and the QAT setting (a state computed with the
// QAT simulations on continues only on a backend with them on, and the other way round), rebuilds
// a state of `capacity` on `backend`
// (capacity < position is refused; a class no component of the backend's state holds is refused by
// name) by streaming the file's class bytes into it (State::import_stream), and re-hashes its
// classes through a streamed snapshot, which must equal the file's. Negative Error naming the
// reason otherwise. The file must have been fully verified. `attach` adds components beyond the
// backend's (a drafter) to the empty state before the import.
std::unique_ptr<State> restore_state_file(const StateFile& file, const Backend& backend,
                                          const std::string& model_fingerprint, int64_t capacity,
                                          const std::function<void(State&)>& attach = {});

}  // namespace memra
