#include "model/notification.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>

#include "model/assert.hpp"

namespace rehearse {

using nlohmann::json;

namespace {
constexpr std::array<const char*, 6> kEventNames{"retry_scheduled",  "retry_exhausted",
                                                 "failed_permanent", "recovered",
                                                 "policy_invalid",   "state_corrupt"};
}  // namespace

const char* to_string(NotificationEvent event) noexcept {
  return kEventNames[static_cast<std::size_t>(event)];
}

std::optional<NotificationEvent> parse_notification_event(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kEventNames.size(); ++i) {
    if (name == kEventNames[i]) return static_cast<NotificationEvent>(i);
  }
  return std::nullopt;
}

std::string to_string(const Notification& n) {
  std::string line =
      fmt::format("event={} job_id={} failure_class={} attempt={} next_action={} at={}",
                  to_string(n.event), n.job_id,
                  n.failure_class ? to_string(*n.failure_class) : "none", n.attempt,
                  to_string(n.next_action), format_instant(n.at));
  if (n.slot) line += " slot=" + format_instant(*n.slot);
  if (n.next_retry_at) line += " next_retry_at=" + format_instant(*n.next_retry_at);
  if (!n.detail.empty())
    line += " detail=" + json(n.detail).dump(-1, ' ', false, json::error_handler_t::replace);
  return line;
}

json to_json(const Notification& n) {
  REHEARSE_ASSERT_GE(n.attempt, 0);  // notification_from_json refuses a negative one
  json out = json::object();
  out["event"] = to_string(n.event);
  out["job_id"] = n.job_id;
  out["failure_class"] = n.failure_class ? json(to_string(*n.failure_class)) : json(nullptr);
  out["attempt"] = n.attempt;
  out["next_action"] = to_string(n.next_action);
  out["at"] = format_instant(n.at);
  if (n.slot) out["slot"] = format_instant(*n.slot);
  if (n.next_retry_at) out["next_retry_at"] = format_instant(*n.next_retry_at);
  if (!n.detail.empty()) out["detail"] = n.detail;
  return out;
}

namespace {

Error bad(std::string where, std::string message) {
  return make_error(ErrorCode::schema_error, std::move(message), std::move(where));
}

Result<std::string> string_at(const json& object, const char* key) {
  const std::string where = std::string("/") + key;
  if (!object.contains(key)) return bad(where, fmt::format("missing \"{}\"", key));
  const json& v = object.at(key);
  if (!v.is_string()) return bad(where, fmt::format("expected \"{}\" to be a string", key));
  return v.get<std::string>();
}

Result<TimeMs> instant_at(const json& object, const char* key) {
  auto text = string_at(object, key);
  if (!text.ok()) return std::move(text).error();
  auto t = parse_instant(*text);
  if (!t.ok()) return bad(std::string("/") + key, t.error().message);
  return *t;
}

}  // namespace

Result<Notification> notification_from_json(const json& value) {
  if (!value.is_object()) return bad("", "expected a notification object");
  for (const auto& [key, unused] : value.items()) {
    (void)unused;
    static constexpr std::array<std::string_view, 9> kKeys{
        "event", "job_id", "failure_class", "attempt", "next_action",
        "at",    "slot",   "next_retry_at", "detail"};
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return bad("/" + key, fmt::format("unknown key \"{}\" in a notification", key));
    }
  }
  Notification n;
  auto event = string_at(value, "event");
  if (!event.ok()) return std::move(event).error();
  const auto parsed_event = parse_notification_event(*event);
  if (!parsed_event) return bad("/event", fmt::format("unknown event \"{}\"", *event));
  n.event = *parsed_event;
  auto job = string_at(value, "job_id");
  if (!job.ok()) return std::move(job).error();
  n.job_id = *job;
  if (!value.contains("failure_class")) return bad("/failure_class", "missing \"failure_class\"");
  const json& cls = value.at("failure_class");
  if (!cls.is_null()) {
    if (!cls.is_string()) return bad("/failure_class", "expected a class name or null");
    const auto parsed = parse_failure_class(cls.get_ref<const std::string&>());
    if (!parsed)
      return bad("/failure_class", "unknown failure class " +
                                       cls.dump(-1, ' ', false, json::error_handler_t::replace));
    n.failure_class = *parsed;
  }
  if (!value.contains("attempt") || !value.at("attempt").is_number_integer()) {
    return bad("/attempt", "expected \"attempt\" to be an integer");
  }
  const auto attempt = value.at("attempt").get<std::int64_t>();
  if (attempt < 0 || attempt > std::numeric_limits<int>::max()) {
    return bad("/attempt", "attempt out of range");
  }
  n.attempt = static_cast<int>(attempt);
  auto action = string_at(value, "next_action");
  if (!action.ok()) return std::move(action).error();
  const auto parsed_action = parse_next_action(*action);
  if (!parsed_action)
    return bad("/next_action", fmt::format("unknown next_action \"{}\"", *action));
  n.next_action = *parsed_action;
  auto at = instant_at(value, "at");
  if (!at.ok()) return std::move(at).error();
  n.at = *at;
  if (value.contains("slot")) {
    auto slot = instant_at(value, "slot");
    if (!slot.ok()) return std::move(slot).error();
    n.slot = *slot;
  }
  if (value.contains("next_retry_at")) {
    auto retry_at = instant_at(value, "next_retry_at");
    if (!retry_at.ok()) return std::move(retry_at).error();
    n.next_retry_at = *retry_at;
  }
  if (value.contains("detail")) {
    auto detail = string_at(value, "detail");
    if (!detail.ok()) return std::move(detail).error();
    n.detail = *detail;
  }
  return n;
}

}  // namespace rehearse
