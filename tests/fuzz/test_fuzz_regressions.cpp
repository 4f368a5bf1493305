// Replays every input under tests/fuzz/regressions/<target>/ (the fuzzers'
// findings, each fixed) and tests/fuzz/corpus/<target>/ (the seeds and the
// minimized corpus) through the same property checks the libFuzzer targets
// run (tests/fuzz/properties.hpp), in the normal g++ suite.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tests/fuzz/properties.hpp"

namespace fs = std::filesystem;
using rehearse::fuzz::Target;

namespace {

[[noreturn]] void throw_failure(const std::string& message) { throw std::runtime_error(message); }

fs::path fuzz_dir() {
  const char* source = std::getenv("REHEARSE_SOURCE_DIR");
  return fs::path(source != nullptr ? source : ".") / "tests" / "fuzz";
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replays the files of one directory; returns how many there were.
std::size_t replay(const Target& target, const fs::path& dir) {
  if (!fs::is_directory(dir)) return 0;
  std::size_t count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    ++count;
    try {
      target.check(read(entry.path()));
    } catch (const std::exception& e) {
      ADD_FAILURE() << entry.path().string() << ": " << e.what();
    }
  }
  return count;
}

class FuzzReplay : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override { rehearse::fuzz::set_failure_handler(throw_failure); }
};

TEST_P(FuzzReplay, RegressionsAndCorpusHoldTheProperties) {
  const Target& target = GetParam();
  const std::size_t regressions = replay(target, fuzz_dir() / "regressions" / target.name);
  const std::size_t corpus = replay(target, fuzz_dir() / "corpus" / target.name);
  EXPECT_GT(corpus, 0U) << "no seed corpus for " << target.name;
  RecordProperty("regressions", static_cast<int>(regressions));
  RecordProperty("corpus", static_cast<int>(corpus));
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay,
                         ::testing::ValuesIn(rehearse::fuzz::targets().begin(),
                                             rehearse::fuzz::targets().end()),
                         [](const ::testing::TestParamInfo<Target>& target_info) {
                           return std::string(target_info.param.name);
                         });

// The replay has teeth: a property failure inside a check is reported.
TEST(FuzzReplayHandler, AFailedPropertyIsReported) {
  rehearse::fuzz::set_failure_handler(throw_failure);
  EXPECT_THROW(REHEARSE_FUZZ_CHECK(1 + 1 == 3, "arithmetic"), std::runtime_error);
}

}  // namespace
