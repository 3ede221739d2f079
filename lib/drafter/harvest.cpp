// Harvest conventions (see harvest.h).
#include "drafter/harvest.h"

namespace memra {

const char* harvest_name(Harvest h) { return h == Harvest::kDflash ? "dflash" : "dspark"; }

std::optional<Harvest> parse_harvest(std::string_view name) {
  if (name == "dflash") return Harvest::kDflash;
  if (name == "dspark") return Harvest::kDspark;
  return std::nullopt;
}

int64_t harvest_drafts(Harvest h, int64_t block_size) { return h == Harvest::kDflash ? block_size - 1 : block_size; }

int64_t harvest_first_row(Harvest h) { return h == Harvest::kDflash ? 1 : 0; }

}  // namespace memra
