// A BullMQ job export (docs/bullmq-export.md: what tools/bullmq-export
// writes with BullMQ's own API) read as jobs and their attempts.
//
// Per job: its options (attempts, backoff, repeat), and each attempt from the
// queue's event stream, as BullMQ writes it: an `active` entry starts one; a
// failure BullMQ will retry writes no `failed` entry but `delayed` (with a
// backoff) or `waiting` from `active` (without), which end the attempt as
// failed, its reason the job's `stacktrace` entry of that failure; the last
// attempt ends with `failed` (its reason the job's `failedReason`) or
// `completed`. The stream's ids are Redis's millisecond clock. A malformed export is refused: the
// file, the JSON pointer and what was expected; a job with no `opts` too (BullMQ always keeps
// them).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "model/time.hpp"

namespace rehearse::sim {

struct BullmqAttempt {
  TimeMs start_ms = 0;           // the `active` entry
  std::optional<TimeMs> end_ms;  // its `failed` / `completed` entry (none: cut)
  bool failed = false;
  std::string failed_reason;  // as BullMQ kept it
  std::string where;          // FILE:/pointer of the ending entry (or the start's)
};

struct BullmqJob {
  std::string queue;
  std::string id;
  std::string name;
  nlohmann::json opts;  // an object
  TimeMs timestamp_ms = 0;
  int attempts_made = 0;
  std::string state;
  std::string failed_reason;            // the last failure's
  std::vector<std::string> stacktrace;  // one per failed attempt, oldest first
  std::vector<BullmqAttempt> attempts;  // in stream order
  std::string where;                    // FILE:/queues/Q/jobs/J
};

struct BullmqExport {
  std::string bullmq_version;
  std::vector<BullmqJob> jobs;  // by queue, then as exported
};

// `text` is the file's content; `path` names it in errors and evidence.
Result<BullmqExport> read_bullmq_export(const std::string& text, const std::string& path);

}  // namespace rehearse::sim
