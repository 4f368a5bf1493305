#include "sim/check/progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include <unistd.h>

#include "model/assert.hpp"

namespace rehearse::sim {

std::string format_duration_s(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  REHEARSE_ASSERT_GE(s, 0);  // callers pass finite times (llround of +inf is unspecified)
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string format_progress(const std::string& label, std::size_t done, std::size_t total,
                            double elapsed_s, const std::string& noun,
                            const std::string& rate_noun) {
  REHEARSE_ASSERT_LE(done, total);  // the ETA counts total - done
  const double percent =
      total == 0 ? 100.0 : 100.0 * static_cast<double>(done) / static_cast<double>(total);
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  const std::string eta = done == 0 || rate <= 0
                              ? std::string("--")
                              : format_duration_s(static_cast<double>(total - done) / rate);
  return fmt::format("{}: {}/{} {} ({:.1f}%), {:.1f} {}/s, ETA {}", label, done, total, noun,
                     percent, rate, rate_noun, eta);
}

ProgressStyle stderr_progress_style() {
  return isatty(fileno(stderr)) != 0 ? ProgressStyle::in_place : ProgressStyle::lines;
}

ProgressLine::ProgressLine(std::FILE* out, std::string label, ProgressStyle style, Clock clock)
    : out_(out),
      label_(std::move(label)),
      style_(style),
      clock_(std::move(clock)),
      started_(clock_()) {
  REHEARSE_ASSERT(out_ != nullptr);
}

void ProgressLine::set_nouns(std::string noun, std::string rate_noun) {
  REHEARSE_ASSERT(!noun.empty() && !rate_noun.empty());  // words of the line's text
  noun_ = std::move(noun);
  rate_noun_ = std::move(rate_noun);
}

void ProgressLine::update(std::size_t done, std::size_t total) {
  const auto now = clock_();
  REHEARSE_ASSERT(now >= last_);  // a steady clock never goes back
  const auto interval =
      style_ == ProgressStyle::in_place ? std::chrono::seconds(1) : std::chrono::seconds(10);
  if (shown_ && now - last_ < interval) return;
  last_ = now;
  write(done, total);
}

void ProgressLine::finish(std::size_t done, std::size_t total) {
  write(done, total);
  if (style_ == ProgressStyle::in_place) std::fputc('\n', out_);
  std::fflush(out_);
}

void ProgressLine::write(std::size_t done, std::size_t total) {
  const double elapsed = std::chrono::duration<double>(clock_() - started_).count();
  REHEARSE_ASSERT_GE(elapsed, 0.0);
  const std::string line = format_progress(label_, done, total, elapsed, noun_, rate_noun_);
  if (style_ == ProgressStyle::lines) {
    fmt::print(out_, "{}\n", line);
  } else {
    width_ = std::max(width_, line.size());
    fmt::print(out_, "\r{:<{}}", line, width_);
  }
  std::fflush(out_);
  shown_ = true;
}

}  // namespace rehearse::sim
