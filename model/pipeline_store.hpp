// PipelineStore: the internal pipeline DB of the reconcile job, durable over
// the Disk port (docs/semantics.md §8; incident 000).
//
// One JSON file `pipeline.json` in the store's directory holds every item:
//   {"format": 1, "items": [{"id", "issue", "stage", "reconcile_error",
//     "failures", "next_attempt_at", "last_config_error_at", "validated_instance",
//     "updated_at"}, ...]}
// with instants as ISO-8601 strings (null when absent). Items keep the order
// they were added in (the order a cycle visits them).
//
// Durability, as the retry state store (docs/semantics.md §5):
//   - every read-modify-write happens under an exclusive lock on
//     `pipeline.lock`, and every write replaces the file atomically: write
//     `pipeline.json.tmp`, fsync it, rename it over `pipeline.json`, fsync the
//     directory. A crash at any point leaves the old or the new file, whole;
//   - a missing file is an empty pipeline (a fresh start);
//   - a present but empty, unparsable or schema-invalid file is CORRUPT: every
//     operation fails with ErrorCode::corrupt naming the file, and nothing ever
//     replaces it (fail closed and visible; the bad file is kept for an
//     operator, never silently reset to empty).
// Every record is checked before it is written and again after it is read
// back (stage non-empty, failures >= 0, ids non-empty and unique).
//
// All calls are synchronous (the Disk port is): a crash of the process cannot
// fall inside one, only between two.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/disk.hpp"
#include "model/result.hpp"
#include "model/time.hpp"

namespace rehearse {

struct PipelineItem {
  std::string id;     // internal id (unique in the store)
  std::string issue;  // external issue id in the orchestrator (unique in the store)
  // DESIGNING, BUILDING, REVIEWING, DONE, DESIGN_FAILED; any other text is an
  // unknown stage, kept as it is (next_stage never changes it).
  std::string stage = "DESIGNING";
  // Why the last attempt failed, or why the item ended DESIGN_FAILED; empty
  // after a clean attempt.
  std::string reconcile_error;
  // Consecutive transient failures (network, timeout, 5xx, 429): the per-item
  // backoff exponent. Reset by any answer that is not transient.
  int failures = 0;
  // The item is not queried before this instant (0: due at once).
  TimeMs next_attempt_at = 0;
  // When the last configuration error deferred this item (invariant 8:
  // config-error attempts at most hourly).
  std::optional<TimeMs> last_config_error_at;
  // The orchestrator instance this item's external id was last confirmed on
  // (empty: never). An item whose instance differs from the orchestrator's
  // current one is validated first (000's lesson after a migration).
  std::string validated_instance;
  TimeMs updated_at = 0;

  bool operator==(const PipelineItem&) const = default;
};

// The on-disk form (exposed for tests and tools).
inline constexpr int kPipelineFormat = 1;
std::string encode_pipeline(const std::vector<PipelineItem>& items);
// parse_error for bad JSON, schema_error for a bad shape (the store reports
// both as corrupt).
Result<std::vector<PipelineItem>> decode_pipeline(std::string_view bytes);

class PipelineStore {
 public:
  static constexpr const char* kFileName = "pipeline.json";
  static constexpr const char* kLockName = "pipeline.lock";
  static constexpr const char* kTempSuffix = ".tmp";

  // `disk` must outlive the store; `dir` is created on first write if missing.
  PipelineStore(Disk& disk, std::string dir);

  // Every item, in store order. Missing file: empty. Corrupt: ErrorCode::corrupt.
  Result<std::vector<PipelineItem>> load();
  // One item by external issue id (nullopt when absent).
  Result<std::optional<PipelineItem>> find(const std::string& issue);

  // Replaces the item with the same internal id (or appends it) under the lock.
  Status save_item(const PipelineItem& item);
  // Appends each item whose issue is not in the store yet (existing items are
  // left exactly as they are: seeding never resets progress). Writes only when
  // something was added; returns how many were.
  Result<std::size_t> add_missing(const std::vector<PipelineItem>& items);

  // Whether the last operation found the file corrupt (visible state).
  bool corrupt() const noexcept { return corrupt_; }
  const std::string& dir() const noexcept { return dir_; }
  std::string file_path() const { return join_path(dir_, kFileName); }

 private:
  Result<std::vector<PipelineItem>> read_locked();
  Status write_locked(const std::vector<PipelineItem>& items);

  Disk& disk_;
  std::string dir_;
  bool corrupt_ = false;
};

}  // namespace rehearse
