// Cron's private header, shared by model/cron*.cpp: the field table and the
// calendar tables, the text helpers of cron_text.cpp the parser reads with,
// and the day rule and bit search of cron_match.cpp that the parser's "does
// it ever fire" checks reuse.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/cron.hpp"

namespace rehearse::cron_detail {

struct FieldSpec {
  CronFieldKind kind;
  int min;
  int max;
};

// Index = position in the 6-field form.
constexpr std::array<FieldSpec, 6> kSpecs = {{
    {CronFieldKind::second, 0, 59},
    {CronFieldKind::minute, 0, 59},
    {CronFieldKind::hour, 0, 23},
    {CronFieldKind::day_of_month, 1, 31},
    {CronFieldKind::month, 1, 12},
    {CronFieldKind::day_of_week, 0, 7},
}};

constexpr std::size_t kSecond = 0, kMinute = 1, kHour = 2, kDom = 3, kMonth = 4, kDow = 5;

// cron-parser's month lengths for the wildcard test and the explicit-day
// check: February always counts 29 days.
constexpr std::array<unsigned, 13> kDaysInMonthTable = {0,  31, 29, 31, 30, 31, 30,
                                                        31, 31, 30, 31, 30, 31};

constexpr std::array<const char*, 13> kMonthNames = {
    "", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<const char*, 7> kWeekdayNames = {"SUN", "MON", "TUE", "WED",
                                                      "THU", "FRI", "SAT"};

// cron_text.cpp: cron text as JavaScript reads it.
bool is_digit(char c);
bool is_alpha(char c);
char to_upper(char c);
std::string in_quotes(std::string_view s);
double js_to_number(std::string_view s);
std::vector<std::string_view> split_fields(std::string_view s);
std::vector<std::string_view> split(std::string_view s, char sep);
bool contains(std::string_view s, char c);
std::string replace_all(std::string_view s, char c, std::string_view with);

// cron_match.cpp: the day rule and the bit search.
bool day_matches(const CronField& dom, const CronField& dow, unsigned month, unsigned day,
                 unsigned weekday, unsigned dim);
bool some_day_matches(const CronField& dom, const CronField& dow, std::uint64_t month_bits);
int next_bit(std::uint64_t bits, unsigned from);

// cron_parse.cpp: the fields of an expression without a zone prefix.
Result<CronSchedule> parse_fields_of(std::string_view expression);

}  // namespace rehearse::cron_detail
