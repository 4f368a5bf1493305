// The table of job kinds (sim/world/job_kind_table.hpp) against what follows
// from it: the schema's job part, the loader's known keys, and the answers
// the table gives for the built-in kinds.
#include "sim/world/job_kind_table.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "tests/support/bundled.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

TEST(JobKinds, SchemaJobPartIsWhatTheTableGenerates) {
  const json schema =
      testsupport::read_json(testsupport::source_dir() + "/docs/schema/scenario.schema.json");
  const json& defs = schema.at("$defs");
  const json generated = job_kinds_schema();
  for (const auto& [name, def] : generated.items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(defs.contains(name)) << "generated:\n" << def.dump(2);
    if (name == "job") {  // the kinds' part of it; the common keys are the file's
      EXPECT_EQ(defs.at(name).at("properties").at("kind"), def.at("properties").at("kind"));
      EXPECT_EQ(defs.at(name).at("allOf"), def.at("allOf"));
      continue;
    }
    EXPECT_EQ(defs.at(name), def) << "in the file:\n"
                                  << defs.at(name).dump(2) << "\ngenerated:\n"
                                  << def.dump(2);
  }
  for (const auto& [name, def] : defs.items()) {  // no job kind lives in the schema alone
    if (name.rfind("job_", 0) == 0 && name != "job_expectation") {
      EXPECT_TRUE(generated.contains(name)) << name;
    }
  }
  if (HasFailure()) std::cout << "generated job $defs:\n" << generated.dump(2) << "\n";
}

TEST(JobKinds, TheEnumeratorsNameTheirPositions) {
  EXPECT_EQ(job_kind_def(JobKind::group).name, "group");
  EXPECT_EQ(job_kind_def(JobKind::fetch).name, "fetch");
  EXPECT_EQ(job_kind_def(JobKind::reconcile).name, "reconcile");
  EXPECT_EQ(job_kind_def(JobKind::publish).name, "publish");
  EXPECT_EQ(job_kind_def(JobKind::call).name, "call");
  EXPECT_EQ(find_job_kind_named("call"), JobKind::call);
  EXPECT_FALSE(find_job_kind_named("cron"));
  EXPECT_EQ(all_job_kinds().size(), job_kind_table().size());
}

TEST(JobKinds, KnownKeysAreTheTablesKeys) {
  for (const JobKindDef& def : job_kind_table()) {
    EXPECT_EQ(scenario_known_keys().at("job_" + def.name), def.keys) << def.name;
  }
}

// The columns the checks ask, for one job of each built-in kind.
TEST(JobKinds, BuiltInColumns) {
  JobSpec group;
  group.kind = JobKind::group;
  group.tasks = {{"a", TaskOutput::summary, 2}, {"b", TaskOutput::skip, 0}};
  group.targets = {"team-1", "team-2"};
  const JobKindDef& g = job_kind_def(JobKind::group);
  EXPECT_EQ(g.calls_per_run(group), 4);
  EXPECT_EQ(g.services(group), std::vector<std::string>{"model-api"});
  EXPECT_TRUE(g.delivers);
  EXPECT_EQ(g.runner_params(group).at("tasks").size(), 2u);
  group.tasks = {{"b", TaskOutput::skip, 0}};
  EXPECT_TRUE(g.services(group).empty());  // no task asks the model

  JobSpec call;
  call.kind = JobKind::call;
  call.calls = {{"api-1", "GET", "/"}, {"api-2", "GET", "/"}, {"api-1", "POST", "/x"}};
  const JobKindDef& c = job_kind_def(JobKind::call);
  EXPECT_EQ(c.calls_per_run(call), 3);
  EXPECT_EQ(c.services(call), (std::vector<std::string>{"api-1", "api-2"}));
  EXPECT_FALSE(c.delivers);

  JobSpec fetch;
  fetch.kind = JobKind::fetch;
  fetch.requests = 3;
  EXPECT_EQ(job_kind_def(JobKind::fetch).calls_per_run(fetch), 7);
  EXPECT_GT(job_kind_def(JobKind::reconcile).settle_ms, 0);
  EXPECT_EQ(default_side_effects(JobKind::publish), SideEffectKind::publish);
  EXPECT_TRUE(job_keeps_file(JobKind::reconcile));
  EXPECT_FALSE(job_keeps_file(JobKind::call));
}

}  // namespace
}  // namespace rehearse::sim
