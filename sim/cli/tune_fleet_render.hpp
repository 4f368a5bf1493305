// The outputs of `rehearse tune SCENARIO --fleet` (docs/tune.md "Fleets and
// retry storms"): a terminal table, one JSON document, CSV (one row per
// policy) and an SVG of small multiples (the service's mean load per minute
// under each policy, one column per jitter shape).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/report/tune_fleet.hpp"

namespace rehearse::cli {

std::string tune_fleet_table(const sim::FleetTuneResult& result);
nlohmann::json tune_fleet_json(const sim::FleetTuneResult& result);
std::string tune_fleet_csv(const sim::FleetTuneResult& result);
std::string tune_fleet_svg(const sim::FleetTuneResult& result);

}  // namespace rehearse::cli
