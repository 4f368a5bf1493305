// The scheduler's private header, shared by model/scheduler*.cpp: the
// operations a queue entry's intent records (written when a run ends or a
// stalled run is recovered, read back when a boot replays intents) and a
// job's state before its first record.
#pragma once

#include <string>

#include "model/job_state.hpp"

namespace rehearse::scheduler_detail {

constexpr const char* kOpFinish = "finish";
constexpr const char* kOpStallRerun = "stall_rerun";
constexpr const char* kOpStallFail = "stall_fail";

JobState fresh_state(const std::string& id);

}  // namespace rehearse::scheduler_detail
