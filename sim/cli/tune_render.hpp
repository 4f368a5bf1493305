// The outputs of `rehearse tune` (docs/tune.md): a terminal table, one JSON
// document, CSV (one row per policy) and an SVG heat map (attempts x base
// delay per backoff kind, colour = recovery probability).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/report/tune.hpp"

namespace rehearse::cli {

std::string tune_table(const sim::TuneResult& result);
nlohmann::json tune_json(const sim::TuneResult& result);
std::string tune_csv(const sim::TuneResult& result);
std::string tune_svg(const sim::TuneResult& result);
// One sentence: the job's own policy against the Pareto front.
std::string tune_verdict(const sim::TuneResult& result);

}  // namespace rehearse::cli
