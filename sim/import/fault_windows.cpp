#include "sim/import/fault_windows.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

std::string signature_of(const CallObservation& call) {
  switch (call.outcome) {
    case CallOutcome::success: return "ok";
    case CallOutcome::http_error: return std::to_string(call.status);
    case CallOutcome::timeout: return "timeout";
    case CallOutcome::network_error: return "network " + call.error;
  }
  return "?";
}

namespace {

// An edge between the last call that answered one way, at `before`, and the
// first that answered the other, at `after`: the middle of its bounds, which
// leaves a replay's calls the most room to drift either way and still be
// answered as they were. Never `before` itself (that call must stay out).
TimeMs midpoint(TimeMs before, TimeMs after) {
  REHEARSE_ASSERT_LE(before, after);  // calls are folded in order of their start
  if (before == after) return after;  // calls in flight together: reported as ambiguous
  return before + (after - before + 1) / 2;
}

// One service's calls, folded into windows in start order.
class ServiceFold {
 public:
  explicit ServiceFold(InferredWindows& out) : out_(out) {}

  void add(const CallObservation& call) {
    check_overlap(call);
    if (call.outcome == CallOutcome::success) {
      if (open_) close(call);
    } else if (open_ && signature_of(open_->failure) == signature_of(call)) {
      extend(call);
    } else {
      const std::optional<std::string> closed =
          open_ ? std::optional(signature_of(open_->failure)) : std::nullopt;
      if (open_) close(call);
      check_alternation(call, closed);
      open(call);
    }
    previous_ = call;
  }

  void finish() {
    if (!open_) return;
    const InferredWindow& w = *open_;
    out_.ambiguities.push_back(Ambiguity{
        w.service, w.evidence.last_failure_ms,
        fmt::format("no call after the last {} failure at {} answered otherwise: the outage may "
                    "have lasted past the evidence",
                    signature_of(w.failure), format_instant(w.evidence.last_failure_ms)),
        "the window lasts to the end of the scenario", w.evidence.last_where});
    out_.windows.push_back(std::move(*open_));
    open_.reset();
  }

 private:
  void open(const CallObservation& call) {
    InferredWindow w;
    w.service = call.service;
    w.failure = call;
    w.from_ms = call.start_ms;
    w.evidence.failures = 1;
    w.evidence.first_failure_ms = call.start_ms;
    w.evidence.last_failure_ms = call.start_ms;
    w.evidence.first_where = call.where;
    w.evidence.last_where = call.where;
    if (previous_) {
      w.evidence.start_after_ms = previous_->start_ms;
      w.from_ms = midpoint(previous_->start_ms, call.start_ms);
    }
    open_ = std::move(w);
  }

  void extend(const CallObservation& call) {
    REHEARSE_ASSERT(open_.has_value());  // only a window of this signature is extended
    open_->evidence.failures += 1;
    open_->evidence.last_failure_ms = call.start_ms;
    open_->evidence.last_where = call.where;
  }

  void close(const CallObservation& by) {
    REHEARSE_ASSERT(open_.has_value());
    open_->until_ms = midpoint(open_->evidence.last_failure_ms, by.start_ms);
    open_->evidence.end_by_ms = by.start_ms;
    open_->evidence.end_by = signature_of(by);
    open_->evidence.end_by_where = by.where;
    out_.windows.push_back(std::move(*open_));
    open_.reset();
  }

  // A, then B, then A again with no success between: one outage answering
  // with mixed statuses, or several outages; the calls cannot tell.
  void check_alternation(const CallObservation& call, const std::optional<std::string>& closed) {
    const std::string sig = signature_of(call);
    if (closed && before_closed_ && *before_closed_ == sig && *closed != sig) {
      out_.ambiguities.push_back(Ambiguity{
          call.service, call.start_ms,
          fmt::format("failures alternate ({}, {}, {}) with no success between: one outage "
                      "answering with mixed statuses, or several",
                      sig, *closed, sig),
          "a window per run of one signature", call.where});
    }
    before_closed_ = closed;
  }

  // Calls in flight at the same time that disagree (one succeeded, one
  // failed): a partial outage (a rate below 1), or an edge inside both.
  void check_overlap(const CallObservation& call) {
    if (!previous_ || previous_->end_ms <= call.start_ms) return;
    const bool prev_ok = previous_->outcome == CallOutcome::success;
    const bool now_ok = call.outcome == CallOutcome::success;
    if (prev_ok == now_ok) return;
    out_.ambiguities.push_back(Ambiguity{
        call.service, call.start_ms,
        fmt::format("calls in flight together disagree ({} from {}, {} from {}): a partial "
                    "outage, or an edge inside both calls",
                    signature_of(*previous_), format_instant(previous_->start_ms),
                    signature_of(call), format_instant(call.start_ms)),
        "ordered by their start", fmt::format("{}, {}", previous_->where, call.where)});
  }

  InferredWindows& out_;
  std::optional<InferredWindow> open_;
  std::optional<CallObservation> previous_;
  std::optional<std::string> before_closed_;  // the signature closed when the open one began
};

}  // namespace

InferredWindows infer_fault_windows(std::vector<CallObservation> calls) {
  InferredWindows out;
  out.calls = static_cast<int>(calls.size());
  // Stable: calls that started at the same instant keep the records' order.
  std::stable_sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) {
    return std::tie(a.service, a.start_ms, a.end_ms) < std::tie(b.service, b.start_ms, b.end_ms);
  });
  std::size_t i = 0;
  while (i < calls.size()) {
    ServiceFold fold(out);
    const std::string& service = calls[i].service;
    for (; i < calls.size() && calls[i].service == service; ++i) fold.add(calls[i]);
    fold.finish();
  }
  return out;
}

}  // namespace rehearse::sim
