// The content of `rehearse cron explain`: parsed fields, the low-frequency
// verdict with its warnings, and the policy "auto" would choose.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/cron.hpp"
#include "model/result.hpp"

namespace rehearse::cli {

struct CronExplanation {
  std::string text;     // human-readable, several lines
  nlohmann::json json;  // the same content as one document
};

Result<CronExplanation> explain_cron(const CronSchedule& schedule);

}  // namespace rehearse::cli
