#include "sim/monitors/item_queries_bounded.hpp"

#include <fmt/format.h>

#include <utility>

#include "model/assert.hpp"
#include "sim/monitors/reply_class.hpp"
#include "sim/monitors/stage_rank.hpp"

namespace rehearse::sim {

namespace {

constexpr DurationMs kConfigDeferralMs = kHourMs;
// A transient failure's per-item backoff: 1 min, doubling, at most 1 h
// (docs/semantics.md §8).
constexpr DurationMs kTransientBackoffFirstMs = kMinuteMs;
constexpr DurationMs kTransientBackoffMaxMs = kHourMs;
constexpr std::size_t kAgentPrefixChars = 8;  // logs may carry this much of an agent id

// A refusal a human must look at (docs/semantics.md §8: 400, 401, 403,
// 422 and every other 4xx that is neither gone, 404 / 410, nor transient,
// 408 / 429).
bool is_refusal(std::int64_t status) {
  return status >= 400 && status < 500 && status != 404 && status != 410 && status != 408 &&
         status != 429;
}

// The least backoff after the n-th transient failure in a row.
DurationMs transient_backoff_ms(int n) {
  // Asked only for an item with a transient failure in a row.
  REHEARSE_ASSERT_GE(n, 1);
  DurationMs d = kTransientBackoffFirstMs;
  for (int k = 1; k < n && d < kTransientBackoffMaxMs; ++k) d *= 2;
  const DurationMs out = std::min(d, kTransientBackoffMaxMs);
  REHEARSE_ASSERT_GE(out, kTransientBackoffFirstMs);
  REHEARSE_ASSERT_LE(out, kTransientBackoffMaxMs);
  return out;
}

// The stage a handoff for the issue's status leads to (its rank), or -1.
int handoff_rank(const std::string& issue_status) {
  if (issue_status == "in_progress") return stage_rank("BUILDING");
  if (issue_status == "in_review") return stage_rank("REVIEWING");
  return -1;
}

}  // namespace

ItemQueriesBounded::ItemQueriesBounded(const Scenario& scenario, MonitorContext& context)
    : context_(context),
      migration_(kName, scenario),
      schedule_(kName, scenario, context.wall_clock) {
  if (const auto lead = env_lookup(scenario.env, "AGENT_LEAD_ID"); lead && !lead->empty()) {
    const std::string id(*lead);
    lead_prefix_ = id.substr(0, kAgentPrefixChars);
    if (scenario.services.orchestrator) {
      for (const OrchestratorAgent& a : scenario.services.orchestrator->agents) {
        if (a.id == id && a.present) lead_present_ = true;
      }
    }
  }
  // Compared with the agent ids events carry, which are this short.
  REHEARSE_ASSERT_LE(lead_prefix_.size(), kAgentPrefixChars);
  for (const JobSpec& spec : scenario.jobs) {
    for (const ReconcileItem& item : spec.items) stages_[item.issue] = item.stage;
  }
}

Violations ItemQueriesBounded::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  const bool went_down = context_.process.went_down_at(i);
  migration_.observe(e, i, agent_list_answered_[e.job], went_down, out);
  schedule_.observe(e, i, went_down, out);
  if (went_down) {
    forget_answers_not_yet_durable();
    return out;
  }
  if (e.type == "durable_stage") on_durable_stage(e);
  check_config_attempts(e, i, out);
  check_after_not_found(e, i, out);
  return out;
}

// The item's durable record: the answers before it are durable now, and a
// blocked handoff a lookup showed was an attempt when the record carries the
// deferral's reconcile error.
void ItemQueriesBounded::on_durable_stage(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "durable_stage");
  stages_[e.item] = e.str("stage");
  ItemWatch& w = items_[e.item];
  if (w.blocked_handoff_at && !e.str("error").empty()) w.config_error_at = w.blocked_handoff_at;
  w.blocked_handoff_at.reset();
  w.not_found_durable = w.not_found_at.has_value();
  w.config_error_durable = w.config_error_at.has_value();
}

// Config attempts at most hourly (docs/semantics.md §8), from the
// orchestrator's own answers and request times.
void ItemQueriesBounded::check_config_attempts(const TraceEvent& e, std::size_t i,
                                               Violations& out) {
  // observe() forgot the answers of a process that went down and returned.
  REHEARSE_ASSERT(!context_.process.went_down_at(i));
  if (e.type == "agent_removed" || e.type == "agent_restored") {
    if (!lead_prefix_.empty() && e.str("agent") == lead_prefix_) {
      lead_present_ = e.type == "agent_restored";
    }
    return;
  }
  if (e.type == "instance_changed") {
    for (auto& [id, w] : items_) w.validation_allowed = true;
    return;
  }
  if (e.service == "orchestrator" && e.str("operation") == "list_agents") {
    // The core knows the lead is missing only from an agent list its cycle
    // got: a list lost to a network error hides it.
    agent_list_answered_[e.job] = e.type == "service_reply" && e.num("status") == 200;
    return;
  }
  if (e.item.empty() || e.service != "orchestrator") return;
  ItemWatch& w = items_[e.item];
  if (e.type == "service_call" && e.str("operation") == "get_issue") {
    on_item_query(e, i, w, out);
  } else if (e.type == "service_reply") {
    on_item_reply(e, w);
  }
}

// A get_issue for an item: inside the hour after a config error it fires,
// unless it may be the validation a migration calls for: the core validates
// an item it is not due to try once it knows the new instance (from an agent
// list its cycle got) until the instance answers about the item.
void ItemQueriesBounded::on_item_query(const TraceEvent& e, std::size_t i, ItemWatch& w,
                                       Violations& out) {
  // check_config_attempts hands over an item's get_issue call.
  REHEARSE_ASSERT_EQ(e.type, "service_call");
  REHEARSE_ASSERT(!e.item.empty());
  check_transient_backoff(e, i, w, out);
  w.validating = false;
  w.blocked_handoff_at.reset();  // no deferral recorded since: it was a lookup
  w.may_be_lookup = w.validation_allowed && agent_list_answered_[e.job];
  if (!w.config_error_at || context_.wall_clock.wall(e.t) >= *w.config_error_at + kConfigDeferralMs)
    return;
  // An item backing off from a transient failure is not validated: it waits
  // for its due attempt (docs/reconcile.md).
  if (w.validation_allowed && w.validated && agent_list_answered_[e.job] &&
      w.transient_in_row == 0) {
    w.validating = true;
    return;
  }
  out.push_back(
      {kName, i, e.t,
       fmt::format("issue {} queried {} after a config error the orchestrator "
                   "showed at {} (config attempts at most hourly)",
                   e.item, format_duration(context_.wall_clock.wall(e.t) - *w.config_error_at),
                   format_instant(*w.config_error_at))});
}

// An item that failed transiently is asked again only after its backoff
// (1 min, doubling with each failure in a row, at most 1 h). An item that is
// backing off is never validated (docs/reconcile.md), so no query is exempt.
void ItemQueriesBounded::check_transient_backoff(const TraceEvent& e, std::size_t i,
                                                 const ItemWatch& w, Violations& out) const {
  if (w.transient_in_row == 0) return;
  // A count in a row: it only grows from 0, or goes back to 0.
  REHEARSE_ASSERT_GT(w.transient_in_row, 0);
  const DurationMs wait = transient_backoff_ms(w.transient_in_row);
  if (context_.wall_clock.wall(e.t) + 1 >= w.transient_at + wait)
    return;  // 1 ms of slack for rounding
  out.push_back(
      {kName, i, e.t,
       fmt::format("issue {} queried {} after its transient failure {} in a row at {} "
                   "(its backoff is {})",
                   e.item, format_duration(context_.wall_clock.wall(e.t) - w.transient_at),
                   w.transient_in_row, format_instant(w.transient_at), format_duration(wait))});
}

// An orchestrator reply about an item: a definitive answer (2xx, or a 4xx
// that is not transient) in a cycle that knows the instance ends the
// validation a migration called for; the answer to a validation is no config
// attempt and leaves the hour where it was; a refusal, or a handoff the
// missing lead agent blocks, is a config error.
void ItemQueriesBounded::on_item_reply(const TraceEvent& e, ItemWatch& w) {
  REHEARSE_ASSERT_EQ(e.type, "service_reply");
  REHEARSE_ASSERT_GE(w.transient_in_row, 0);
  const std::int64_t status = e.num("status");
  const bool definitive =
      (status >= 200 && status < 300) || is_refusal(status) || status == 404 || status == 410;
  if (definitive && agent_list_answered_[e.job]) {
    w.validation_allowed = false;
    w.validated = true;
  }
  if (item_answer(e) == ItemAnswer::transient) {
    ++w.transient_in_row;
    w.transient_at = context_.wall_clock.wall(e.t);
  } else if (definitive) {
    w.transient_in_row = 0;
  }
  if (std::exchange(w.validating, false)) return;
  if (is_refusal(status)) {
    w.config_error_at = context_.wall_clock.wall(e.t);
    w.config_error_durable = false;
    return;
  }
  if (e.str("operation") != "get_issue" || status != 200) return;
  const int wanted = handoff_rank(e.str("body_class"));
  const auto st = stages_.find(e.item);
  const int current = st == stages_.end() ? -1 : stage_rank(st->second);
  if (wanted > current && current >= 0 && !lead_present_ && agent_list_answered_[e.job]) {
    if (w.may_be_lookup) {
      w.blocked_handoff_at = context_.wall_clock.wall(e.t);
      return;
    }
    w.config_error_at = context_.wall_clock.wall(e.t);
    w.config_error_durable = false;
  }
}

// After an orchestrator 404 or 410 for an item (it is gone), no further
// orchestrator call for it.
void ItemQueriesBounded::check_after_not_found(const TraceEvent& e, std::size_t i,
                                               Violations& out) {
  if (e.item.empty()) return;
  ItemWatch& w = items_[e.item];
  // Only a 404 or a 410 marks the item gone (below).
  if (w.not_found_at) REHEARSE_ASSERT(w.gone_status == 404 || w.gone_status == 410);
  const bool orchestrator = e.service == "orchestrator" || e.service.empty();
  if (e.type == "service_call" && orchestrator) {
    if (e.str("operation") == "get_issue") ++w.queries;
    if (w.not_found_at) {
      out.push_back(
          {kName, i, e.t,
           fmt::format("issue {} queried again ({}) after its {} at {}", e.item, e.str("operation"),
                       w.gone_status, format_instant(*w.not_found_at))});
    }
    return;
  }
  const std::int64_t status = e.num("status");
  if (e.type == "service_reply" && orchestrator && (status == 404 || status == 410) &&
      !w.not_found_at) {
    w.not_found_at = e.t;
    w.gone_status = status;
    w.not_found_durable = false;
    return;
  }
  // The latest reconcile error, as the item's durable record holds it.
  if (e.type == "durable_stage") w.reason = e.str("error");
}

// The acting worker went down: an answer its durable record did not hold
// yet is lost with the process, so the next one may ask again (once: the
// answer it gets then binds as before).
void ItemQueriesBounded::forget_answers_not_yet_durable() {
  for (auto& [id, w] : items_) {
    w.blocked_handoff_at.reset();
    w.transient_in_row = 0;  // a backoff not yet durable may be lost with the process
    if (w.not_found_at && !w.not_found_durable) w.not_found_at.reset();
    if (w.config_error_at && !w.config_error_durable) w.config_error_at.reset();
    // What the worker may have lost is gone; what stays was durable.
    REHEARSE_ASSERT(!w.not_found_at || w.not_found_durable);
    REHEARSE_ASSERT(!w.config_error_at || w.config_error_durable);
  }
}

void ItemQueriesBounded::tally(nlohmann::json& tallies) const {
  for (const auto& [id, w] : items_) {
    // A count of calls: it only grows.
    REHEARSE_ASSERT_GE(w.queries, 0);
    nlohmann::json& o = tallies["items"][id];

    o["queries"] = w.queries;
    if (!w.reason.empty()) o["reason"] = w.reason;
  }
}

}  // namespace rehearse::sim
