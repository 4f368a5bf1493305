// A BullMQ job export as a scenario (docs/import.md, "BullMQ").
//
// Each job that ran becomes a `call` job of the scenario calling one service
// named after its queue (the processor's work: what failed is what it
// called), with the job's own `attempts` and `backoff` as its policy in the
// BullMQ form, so the core plans its retries exactly as BullMQ was told to.
// Each attempt is a call: from its `active` entry to its `failed` or
// `completed` one, failed with the HTTP status its `failedReason` names.
//
// A cron slot falls on a whole minute; a job added by hand does not. A
// one-off job's evidence is moved back to the minute of its first attempt
// (by under a minute, the same for all its attempts), so the scenario's slot
// is that first attempt; the delays between attempts are kept exactly.
// Repeatable jobs are reported, not imported.
#pragma once

#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/import/bullmq_export.hpp"
#include "sim/import/imported_scenario.hpp"

namespace rehearse::sim {

struct BullmqImportInput {
  std::string path;  // the export file
  std::string name;  // the scenario's name (empty: "bullmq-incident")
};

// How far a replayed attempt may start from the observed one: BullMQ moves
// a delayed job to waiting from a timer of its own, tens of milliseconds
// after the delay ends (docs/import.md, "BullMQ").
inline constexpr DurationMs kBullmqAttemptTolerance = 500;

Result<ImportResult> import_bullmq(const BullmqImportInput& input, const BullmqExport& jobs);

}  // namespace rehearse::sim
