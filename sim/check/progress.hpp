// The progress line of `rehearse check` on stderr: cases done of the total,
// seeds per second and the time left, rewritten in place with '\r' at most
// about once a second. The command shows it only when stderr is a terminal
// or --progress is given; it never goes to stdout or into a JSON document.
// Wall time is read here, outside every run (docs/check-ci.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>

namespace rehearse::sim {

// "check: 1234/8000 cases (15.4%), 210.5 seeds/s, ETA 32s" (a case is one
// seed of one scenario, so seeds/s counts cases). The ETA is "--" before the
// first case is done; it is the time left at the rate so far.
std::string format_progress(const std::string& label, std::size_t done, std::size_t total,
                            double elapsed_s);

// "45s", "12m05s", "3h07m".
std::string format_duration_s(double seconds);

class ProgressLine {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  explicit ProgressLine(
      std::FILE* out, std::string label = "check",
      Clock clock = [] { return std::chrono::steady_clock::now(); });

  // Rewrites the line when a second has passed since it was last written
  // (or it never was).
  void update(std::size_t done, std::size_t total);
  // The last state, then a newline so what follows starts on its own line.
  void finish(std::size_t done, std::size_t total);

 private:
  void write(std::size_t done, std::size_t total);

  std::FILE* out_;
  std::string label_;
  Clock clock_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_{};
  bool shown_ = false;
  std::size_t width_ = 0;  // of the longest line so far, to blank what a shorter one leaves
};

}  // namespace rehearse::sim
