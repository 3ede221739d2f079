// Artifact gates over files on disk, the ones CI pipelines use:
//  equal A B   two state files (every class by bits, after full hash verification) or two logits
//              files (.npy / safetensors "logits") by bits; evidence: the first differing element.
//  band A B    two logits files [T, V] under the band rule (band.h): every row's max |a-b| within the
//              pair band of its top-1 and every argmax disagreement IN-BAND.
//  hash STATE --expect MANIFEST   a state's class hashes against a kept text manifest.
#pragma once
#include <string>

#include "gate/band.h"
#include "gate/gate.h"

namespace memra {

GateResult gate_equal(const std::string& a, const std::string& b);
GateResult gate_band(const std::string& a, const std::string& b, const Realization& ra, const Realization& rb);
GateResult gate_hash(const std::string& state, const std::string& manifest);

// Logits [rows, V] from .npy or a safetensors file with a "logits" tensor.
std::vector<float> read_logits_file(const std::string& path, int64_t* rows, int64_t* vocab);

}  // namespace memra
