// JUnit XML of `rehearse check --junit` (sim/check/junit.hpp): escaping,
// grouping by scenario and block of seeds, counts, and a document a real
// XML parser (python3's xml.etree) reads back with every text intact.
#include "sim/check/junit.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace rehearse::sim {
namespace {

TEST(JunitEscape, MarkupCharactersBecomeEntities) {
  EXPECT_EQ(xml_escape("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;");
  EXPECT_EQ(xml_escape("]]>"), "]]&gt;");
  EXPECT_EQ(xml_escape("plain text 123"), "plain text 123");
}

TEST(JunitEscape, WhitespaceSurvivesAttributesAndControlsAreReplaced) {
  EXPECT_EQ(xml_escape("a\tb\nc\rd"), "a&#9;b&#10;c&#13;d");
  EXPECT_EQ(xml_escape(std::string("a\0b\x1b[31m", 8)),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD[31m");
}

TEST(JunitEscape, Utf8IsKeptAndBrokenBytesAreReplaced) {
  EXPECT_EQ(xml_escape("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x92\xa5"),
            "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x92\xa5");
  EXPECT_EQ(xml_escape("\xc3"), "\xEF\xBF\xBD");  // cut short
  EXPECT_EQ(xml_escape("\xff"
                       "a"),
            "\xEF\xBF\xBD"
            "a");                                                 // never a UTF-8 byte
  EXPECT_EQ(xml_escape("\xc0\xaf"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(xml_escape("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(xml_escape("\xef\xbf\xbf"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFF
}

CaseRecord record(const std::string& path, std::uint64_t seed, CaseVerdict verdict) {
  CaseRecord r;
  r.scenario = path.empty() ? "generated" : "scn-" + path;
  r.path = path;
  r.seed = seed;
  r.verdict = verdict;
  if (verdict == CaseVerdict::fail) {
    r.violations = {"retries_bounded", "nothing_lost"};
    r.message = "job <a> & \"b\": 5 retries, budget 3\n\x01";
    r.replay = "rehearse check '" + path + "' --seeds 1 --first-seed " + std::to_string(seed);
    r.shrunk = "shrunk/s-" + std::to_string(seed) + ".json";
  }
  if (verdict == CaseVerdict::error) r.message = "derived world refused";
  return r;
}

struct Fixture {
  CampaignHeader header;
  std::vector<TimedRecord> records;
};

// a.json: seeds 0..249 (three blocks), seed 7 and 120 fail, seed 130 errs;
// b&c.json: seeds 0..249, all pass.
Fixture fixture() {
  Fixture f;
  f.header.scenarios = {"a.json", "b&c.json"};
  f.header.seeds = 250;
  f.header.options = {{"random_jobs", true}};
  for (const std::string& path : f.header.scenarios) {
    for (std::uint64_t seed = 0; seed < 250; ++seed) {
      CaseVerdict v = CaseVerdict::pass;
      if (path == "a.json" && (seed == 7 || seed == 120)) v = CaseVerdict::fail;
      if (path == "a.json" && seed == 130) v = CaseVerdict::error;
      f.records.push_back({record(path, seed, v), 2.0});
    }
  }
  return f;
}

std::string run_python(const std::string& script, const std::string& xml) {
  const std::string dir = ::testing::TempDir();
  const std::string xml_path = dir + "/junit-test.xml";
  const std::string py_path = dir + "/junit-test.py";
  std::ofstream(xml_path, std::ios::binary) << xml;
  std::ofstream(py_path) << script;
  const std::string command = "python3 " + py_path + " " + xml_path + " 2>&1";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return "cannot start python3";
  std::string out;
  std::array<char, 4096> buffer{};
  while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe))
    out.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return status == 0 ? out : "python3 failed (" + std::to_string(status) + "): " + out;
}

// Reads the document with a real XML parser and prints what a CI system
// would show: counts, test names, and the failure's attributes and text.
constexpr const char* kReadBack = R"(
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
print(root.tag, root.get("tests"), root.get("failures"), root.get("errors"))
for suite in root.findall("testsuite"):
    print("suite", suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("time"))
    for case in suite.findall("testcase"):
        print("case", case.get("classname"), case.get("name"), case.get("time"))
        for kind in ("failure", "error"):
            for f in case.findall(kind):
                print(kind, repr(f.get("type")), repr(f.get("message")))
                print(repr(f.text))
)";

TEST(Junit, ARealParserReadsGroupsCountsAndFailuresBack) {
  const Fixture f = fixture();
  const std::string out = run_python(kReadBack, render_junit(f.header, f.records));
  const std::string expected =
      "testsuites 6 2 0\n"
      "suite a.json 3 2 0 0.500\n"
      "case scn-a.json seeds 0..99 0.200\n"
      "failure 'retries_bounded' '1 of 100 seeds failed (first: seed 7: job <a> & \"b\": 5 "
      "retries, budget 3\\n\xEF\xBF\xBD)'\n"
      "'seed 7: fail: retries_bounded, nothing_lost\\n  job <a> & \"b\": 5 retries, budget "
      "3\\n\xEF\xBF\xBD\\n  replay: rehearse check \\'a.json\\' --seeds 1 --first-seed 7\\n  "
      "shrunk: shrunk/s-7.json\\n'\n"
      "case scn-a.json seeds 100..199 0.200\n"
      "failure 'retries_bounded' '1 of 100 seeds failed (first: seed 120: job <a> & \"b\": 5 "
      "retries, budget 3\\n\xEF\xBF\xBD)'\n"
      "'seed 120: fail: retries_bounded, nothing_lost\\n  job <a> & \"b\": 5 retries, budget "
      "3\\n\xEF\xBF\xBD\\n  replay: rehearse check \\'a.json\\' --seeds 1 --first-seed 120\\n  "
      "shrunk: shrunk/s-120.json\\nseed 130: error\\n  derived world refused\\n'\n"
      "case scn-a.json seeds 200..249 0.100\n"
      "suite b&c.json 3 0 0 0.500\n"
      "case scn-b&c.json seeds 0..99 0.200\n"
      "case scn-b&c.json seeds 100..199 0.200\n"
      "case scn-b&c.json seeds 200..249 0.100\n";
  EXPECT_EQ(out, expected);
}

TEST(Junit, ABlockThatOnlyErredCarriesAnErrorElement) {
  CampaignHeader h;
  h.seeds = 3;
  std::vector<TimedRecord> records{{record("", 0, CaseVerdict::pass), 1},
                                   {record("", 1, CaseVerdict::error), 1},
                                   {record("", 2, CaseVerdict::pass), 1}};
  const std::string out = run_python(kReadBack, render_junit(h, records));
  EXPECT_EQ(out,
            "testsuites 1 0 1\n"
            "suite generated 1 0 1 0.003\n"
            "case generated seeds 0..2 0.003\n"
            "error 'error' '1 of 3 seeds could not run (first: seed 1: derived world refused)'\n"
            "'seed 1: error\\n  derived world refused\\n'\n");
}

TEST(Junit, BlocksCountFromTheRunsFirstSeed) {
  CampaignHeader h;
  h.first_seed = 1000;
  h.seeds = 150;
  h.shard = Shard{2, 2};  // seeds 1075..1149: part of block 0 and of block 1
  std::vector<TimedRecord> records;
  for (std::uint64_t s = 1075; s < 1150; ++s)
    records.push_back({record("a.json", s, CaseVerdict::pass), 0});
  const std::string xml = render_junit(h, records);
  EXPECT_NE(xml.find("name=\"seeds 1075..1099\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("name=\"seeds 1100..1149\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<property name=\"shard\" value=\"2/2\"/>"), std::string::npos) << xml;
}

}  // namespace
}  // namespace rehearse::sim
