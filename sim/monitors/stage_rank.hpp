// The monitors' own ranking of a pipeline item's stages (docs/semantics.md
// §8), written from the semantics, not copied from the core: DESIGNING 0 <
// BUILDING 1 < REVIEWING 2 < DONE / DESIGN_FAILED 3 (terminal); -1 for a
// stage the table does not know. Read by stage_monotonic and
// item_queries_bounded.
#pragma once

#include <string>

namespace rehearse::sim {

inline int stage_rank(const std::string& s) {
  if (s == "DESIGNING") return 0;
  if (s == "BUILDING") return 1;
  if (s == "REVIEWING") return 2;
  if (s == "DONE" || s == "DESIGN_FAILED") return 3;
  return -1;
}

inline bool terminal_stage(const std::string& s) { return s == "DONE" || s == "DESIGN_FAILED"; }

}  // namespace rehearse::sim
