#include "sim/monitors/cron_grammar.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

// The longest a month can be (February in a leap year: 29), 1-based.
constexpr int kLongest[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

}  // namespace

bool cron_is_ascii(std::string_view expr) {
  return std::all_of(expr.begin(), expr.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::optional<std::string> cron_shape_refusal(std::string_view expr, std::size_t fields) {
  if (fields == 5 || fields == 6 || !cron_is_ascii(expr)) return std::nullopt;
  return fmt::format("'{}' has {} field(s): a cron has 5 or 6 (or is a macro spelled exactly)",
                     expr, fields);
}

std::optional<std::string> cron_value_refusal(const std::string& field, const char* name, int lo,
                                              int hi) {
  // The callers pass a field's own range (witness_cron's kSpecs).
  REHEARSE_ASSERT_LE(lo, hi);
  const bool plain =
      !field.empty() && field.size() <= 9 &&
      std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!plain) return std::nullopt;
  const int v = std::stoi(field);
  if (v >= lo && v <= hi) return std::nullopt;
  return fmt::format("{} '{}' is outside {}-{}", name, field, lo, hi);
}

std::optional<std::string> cron_day_refusal(const std::vector<bool>& doms, bool last_dom,
                                            const std::vector<bool>& months, bool month_single,
                                            bool dow_any) {
  // Bitmaps indexed by value: days 1..31, months 1..12 (witness_cron's fields).
  REHEARSE_ASSERT_GE(doms.size(), 32u);
  REHEARSE_ASSERT_GE(months.size(), 13u);
  int smallest = 0;
  for (int d = 1; d <= 31 && smallest == 0; ++d)
    smallest = doms[static_cast<std::size_t>(d)] ? d : 0;
  if (smallest == 0) return std::nullopt;  // only `L`, which every month has

  for (int m = 1; m <= 12; ++m) {
    if (!months[static_cast<std::size_t>(m)] || smallest <= kLongest[m]) continue;
    if (month_single) {
      REHEARSE_ASSERT_GE(smallest, 30);
      return fmt::format("day {} of the month does not exist in month {} (the only month)",
                         smallest, m);
    }
  }
  if (!dow_any || last_dom) return std::nullopt;
  for (int m = 1; m <= 12; ++m) {
    if (months[static_cast<std::size_t>(m)] && smallest <= kLongest[m]) return std::nullopt;
  }
  // Every day up to 29 exists in every month: only the 30th or 31st can be missing.
  REHEARSE_ASSERT_GE(smallest, 30);
  return fmt::format("day {} of the month exists in none of its months: it never fires", smallest);
}

}  // namespace rehearse::sim
