// In-process adapters of the Services, Notifier and Log ports and a
// temporary directory, written as a user of the library would write them for
// a worker driven by model/real_driver.hpp (they sleep on the driver's clock,
// so every answer arrives through the driver's timer loop). Shared by the
// production-shaped examples in tests/example/.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/ports.hpp"
#include "model/random.hpp"
#include "model/task.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse::example {

constexpr DurationMs kModelLatencyMs = 4;
constexpr DurationMs kMessengerLatencyMs = 2;

// A model API in the same process: answers after a real delay.
class InProcessModelApi final : public Services {
 public:
  explicit InProcessModelApi(Clock& clock) : clock_(clock) {}

  Task<ServiceResult> call(ServiceRequest request) override {
    ++calls_;
    co_await clock_.sleep_for(kModelLatencyMs);
    if (failing_ || request.target == "impact-report") {
      ServiceResponse unavailable;
      unavailable.status = 503;
      unavailable.body = nlohmann::json{{"message", "HTTP 503 Service Unavailable"}};
      co_return unavailable;
    }
    ServiceResponse ok;
    ok.status = 200;
    ok.body =
        nlohmann::json{{"output", "summary"}, {"text", "This week: " + request.headers["x-slot"]}};
    co_return ok;
  }

  int calls() const { return calls_; }
  void set_failing(bool failing) { failing_ = failing; }

 private:
  Clock& clock_;
  int calls_ = 0;
  bool failing_ = false;
};

// A messenger in the same process: keeps what it was sent.
class InProcessMessenger final : public Notifier {
 public:
  explicit InProcessMessenger(Clock& clock) : clock_(clock) {}

  Task<Status> send(std::string target, nlohmann::json message) override {
    co_await clock_.sleep_for(kMessengerLatencyMs);
    sent_.emplace_back(std::move(target), std::move(message));
    co_return Status{};
  }

  const std::vector<std::pair<std::string, nlohmann::json>>& sent() const { return sent_; }

 private:
  Clock& clock_;
  std::vector<std::pair<std::string, nlohmann::json>> sent_;
};

class MemoryLog final : public Log {
 public:
  void write(LogLevel level, std::string_view event, const LogFields& fields) override {
    std::string line = std::string(to_string(level)) + " " + std::string(event);
    for (const LogField& f : fields) line += " " + f.key + "=" + f.value.dump();
    lines.push_back(std::move(line));
  }
  bool has(std::string_view event) const {
    for (const auto& l : lines) {
      if (l.find(" " + std::string(event)) != std::string::npos) return true;
    }
    return false;
  }
  std::vector<std::string> lines;
};

using testsupport::TempDir;

// A production random source (splitmix64 from a fixed start: the worker only
// draws backoff jitter from it).
class SplitMix final : public RandomSource {
 public:
  std::uint64_t next_u64() override {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_ = 0x2545f4914f6cdd1dULL;
};

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

}  // namespace rehearse::example
