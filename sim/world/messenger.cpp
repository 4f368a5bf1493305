#include "sim/world/messenger.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

// The fields of a message the platform (and the trace) keys on.
struct MessageKey {
  std::string kind = "notification";
  std::string event;
  std::string job;
  std::optional<TimeMs> slot;
  std::int64_t attempt = 0;
  std::int64_t items = 0;
};

MessageKey read_key(const nlohmann::json& m) {
  MessageKey k;
  if (!m.is_object()) return k;
  if (auto it = m.find("kind"); it != m.end() && it->is_string()) k.kind = it->get<std::string>();
  if (auto it = m.find("event"); it != m.end() && it->is_string()) {
    k.event = it->get<std::string>();
  }
  if (auto it = m.find("job_id"); it != m.end() && it->is_string()) {
    k.job = it->get<std::string>();
  }
  if (auto it = m.find("slot"); it != m.end() && it->is_string()) {
    if (auto t = parse_instant(it->get<std::string>()); t.ok()) k.slot = *t;
  }
  if (auto it = m.find("attempt"); it != m.end() && it->is_number_integer()) {
    k.attempt = it->get<std::int64_t>();
  }
  if (auto it = m.find("items"); it != m.end() && it->is_array()) {
    k.items = static_cast<std::int64_t>(it->size());
  }
  return k;
}

// What a refusal says. The platform's client library reports anything but
// its outage page as text only, the way the 004 report quotes it
// ("ConnectionError: HTTP 403"): no status field, and a word ("Connection")
// that a classifier reading words before numbers takes for a network error.
std::string refusal_text(int status) {
  REHEARSE_ASSERT(status >= 400 && status <= 599);  // an outage's status (add_outage)
  if (status == MessengerOutage::kDefaultStatus) {
    return "messenger: 503 Service Unavailable (the platform is down)";
  }
  return fmt::format("messenger: ConnectionError: HTTP {}", status);
}

}  // namespace

bool MessengerOutage::hits(const std::string& target, TimeMs t) const {
  REHEARSE_ASSERT_LE(from_ms, until_ms);  // a window, possibly empty
  if (t < from_ms || t >= until_ms) return false;
  return targets.empty() || std::find(targets.begin(), targets.end(), target) != targets.end();
}

Messenger::Messenger(Simulator& simulator, Trace& trace, MessengerOptions options)
    : simulator_(simulator), trace_(trace), options_(std::move(options)) {
  REHEARSE_ASSERT(options_.latency_ms >= 0);
}

void Messenger::add_outage(TimeMs from_ms, TimeMs until_ms, std::vector<std::string> targets,
                           int status) {
  REHEARSE_ASSERT(from_ms <= until_ms);
  REHEARSE_ASSERT(outages_.size() < kOutagesMax);
  REHEARSE_ASSERT_GE(status, 400);
  REHEARSE_ASSERT_LT(status, 600);
  outages_.push_back({from_ms, until_ms, std::move(targets), status});
}

const MessengerOutage* Messenger::outage_at(const std::string& target, TimeMs t) const {
  const auto it = std::find_if(outages_.begin(), outages_.end(),
                               [&](const MessengerOutage& o) { return o.hits(target, t); });
  return it == outages_.end() ? nullptr : &*it;
}

bool Messenger::is_down(const std::string& target, TimeMs t) const {
  return outage_at(target, t) != nullptr;
}

bool Messenger::knows(const std::string& target) const {
  return std::find(options_.targets.begin(), options_.targets.end(), target) !=
         options_.targets.end();
}

Task<Status> Messenger::send(std::string target, nlohmann::json message) {
  const TimeMs now = simulator_.now();
  const MessageKey key = read_key(message);

  TraceEvent e;
  e.t = now;
  e.service = kServiceName;
  e.job = key.job;
  e.slot = key.slot;
  e.data["target"] = target;
  e.data["kind"] = key.kind;
  if (!key.event.empty()) e.data["event"] = key.event;
  e.data["attempt"] = key.attempt;

  Status answer;
  int refused_status = 0;
  if (!knows(target)) {
    refused_status = 404;
    answer =
        make_error(ErrorCode::not_found,
                   fmt::format("messenger: 404 channel_not_found: unknown target '{}'", target));
  } else if (const MessengerOutage* outage = outage_at(target, now)) {
    refused_status = outage->status;
    answer = make_error(ErrorCode::io_error, refusal_text(outage->status));
  }

  if (answer.ok()) {
    e.type = "message_delivered";
    e.data["items"] = key.items;
    if (key.kind == "delivery" && key.slot) {
      const std::int64_t n = ++deliveries_[{key.job, *key.slot, target}];
      e.data["delivery_count"] = n;
      e.data["duplicate"] = n > 1;
    }
    // Accepted in the order they arrive: time never goes backwards.
    REHEARSE_ASSERT(accepted_.empty() || accepted_.back().at_ms <= now);
    accepted_.push_back({now, target, key.kind, key.job, key.slot, key.attempt, message});
  } else {
    REHEARSE_ASSERT(refused_status >= 400 && refused_status <= 599);  // 404 or an outage's
    ++refused_;
    e.type = "message_refused";
    e.data["reason"] = answer.error().message;
    e.data["status"] = refused_status;
  }
  trace_.record(std::move(e));

  // The answer travels back; a crash here loses it (the effect stays).
  co_await simulator_.clock().sleep_for(options_.latency_ms);
  co_return answer;
}

std::int64_t Messenger::delivery_count(const std::string& job, TimeMs slot,
                                       const std::string& target) const {
  const auto it = deliveries_.find({job, slot, target});
  if (it == deliveries_.end()) return 0;
  REHEARSE_ASSERT_GE(it->second, 1);  // an entry is made by a delivery
  return it->second;
}

std::int64_t Messenger::count(const std::string& kind, const std::string& job, TimeMs slot) const {
  return std::count_if(accepted_.begin(), accepted_.end(), [&](const AcceptedMessage& m) {
    return m.kind == kind && m.job == job && m.slot == slot;
  });
}

std::vector<std::tuple<std::string, TimeMs, std::string>> Messenger::duplicate_deliveries() const {
  std::vector<std::tuple<std::string, TimeMs, std::string>> out;
  for (const auto& [k, n] : deliveries_) {
    REHEARSE_ASSERT_GE(n, 1);  // an entry is made by a delivery
    if (n > 1) out.push_back(k);
  }
  return out;
}

}  // namespace rehearse::sim
