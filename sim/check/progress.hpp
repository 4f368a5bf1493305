// The progress line of `rehearse check` and `rehearse tune` on stderr: cases
// done of the total, the rate and the time left. On a terminal it is one line
// rewritten in place with '\r' at most about once a second; elsewhere (a CI
// log, where '\r' updates run together into one line) it is a line of its own
// at most once every ten seconds. The commands show it when stderr is a
// terminal or --progress is given; it never goes to stdout or into a JSON
// document. Wall time is read here, outside every run (docs/check-ci.md).
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
// `noun` names what is counted and `rate_noun` what the rate counts
// ("tune: 12/40 runs (30.0%), 4.0 runs/s, ETA 7s").
std::string format_progress(const std::string& label, std::size_t done, std::size_t total,
                            double elapsed_s, const std::string& noun = "cases",
                            const std::string& rate_noun = "seeds");

enum class ProgressStyle {
  in_place,  // a terminal: '\r' rewrites one line
  lines,     // a log: one line per update, fewer updates
};

// The style for stderr: in place on a terminal, lines elsewhere.
ProgressStyle stderr_progress_style();

// "45s", "12m05s", "3h07m".
std::string format_duration_s(double seconds);

class ProgressLine {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  explicit ProgressLine(
      std::FILE* out, std::string label = "check", ProgressStyle style = ProgressStyle::in_place,
      Clock clock = [] { return std::chrono::steady_clock::now(); });

  // What is counted, for the line's text (see format_progress).
  void set_nouns(std::string noun, std::string rate_noun);

  // Writes the line when its interval (a second in place, ten seconds as
  // lines) has passed since it was last written (or it never was).
  void update(std::size_t done, std::size_t total);
  // The last state, then a newline so what follows starts on its own line.
  void finish(std::size_t done, std::size_t total);

 private:
  void write(std::size_t done, std::size_t total);

  std::FILE* out_;
  std::string label_;
  ProgressStyle style_;
  std::string noun_ = "cases";
  std::string rate_noun_ = "seeds";
  Clock clock_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point last_{};
  bool shown_ = false;
  std::size_t width_ = 0;  // of the longest line so far, to blank what a shorter one leaves
};

}  // namespace rehearse::sim
