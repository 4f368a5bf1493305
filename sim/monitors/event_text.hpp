// Small readers of trace events shared by the monitors.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

// The event's data field `key`, or null when absent.
inline const nlohmann::json* field(const TraceEvent& e, std::string_view key) {
  const auto it = e.data.find(key);
  return it == e.data.end() ? nullptr : &*it;
}

// A slot as messages name it.
inline std::string slot_text(std::optional<TimeMs> slot) {
  return slot ? format_instant(*slot) : std::string("(no slot)");
}

}  // namespace rehearse::sim
