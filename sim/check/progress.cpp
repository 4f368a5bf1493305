#include "sim/check/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace rehearse::sim {

std::string format_duration_s(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string format_progress(const std::string& label, std::size_t done, std::size_t total,
                            double elapsed_s) {
  const double percent =
      total == 0 ? 100.0 : 100.0 * static_cast<double>(done) / static_cast<double>(total);
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  const std::string eta = done == 0 || rate <= 0
                              ? std::string("--")
                              : format_duration_s(static_cast<double>(total - done) / rate);
  return fmt::format("{}: {}/{} cases ({:.1f}%), {:.1f} seeds/s, ETA {}", label, done, total,
                     percent, rate, eta);
}

ProgressLine::ProgressLine(std::FILE* out, std::string label, Clock clock)
    : out_(out), label_(std::move(label)), clock_(std::move(clock)), started_(clock_()) {}

void ProgressLine::update(std::size_t done, std::size_t total) {
  const auto now = clock_();
  if (shown_ && now - last_ < std::chrono::seconds(1)) return;
  last_ = now;
  write(done, total);
}

void ProgressLine::finish(std::size_t done, std::size_t total) {
  write(done, total);
  std::fputc('\n', out_);
  std::fflush(out_);
}

void ProgressLine::write(std::size_t done, std::size_t total) {
  const double elapsed = std::chrono::duration<double>(clock_() - started_).count();
  const std::string line = format_progress(label_, done, total, elapsed);
  width_ = std::max(width_, line.size());
  fmt::print(out_, "\r{:<{}}", line, width_);
  std::fflush(out_);
  shown_ = true;
}

}  // namespace rehearse::sim
