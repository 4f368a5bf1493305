// The fault kind `job_file_corrupted`: a job's own durable file damaged on
// the simulated disk (the delivery ledger of a group or publish job, the
// pipeline file of a reconcile job), as a bad disk or a careless operator
// would. Only damage the file's reader must see: bytes that are not JSON, an
// empty file, or valid JSON of the wrong shape. A cut or a flipped byte can
// leave a valid file (the pipeline file carries no checksum), which no
// reader can tell from an older one (docs/fault-kinds.md).
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/world/fault_kinds.hpp"

// As in sim/world/fault_kinds.cpp: designated initializers name only the fields an
// entry sets; GCC 12 warns about every omitted field even so.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace rehearse::sim {

namespace {

// The modes this kind does, in the order of their names.
const std::vector<std::pair<std::string, CorruptionMode>>& job_file_modes() {
  static const std::vector<std::pair<std::string, CorruptionMode>> kModes{
      {"garbage", CorruptionMode::garbage},
      {"empty", CorruptionMode::empty},
      {"schema", CorruptionMode::schema}};
  return kModes;
}

std::vector<std::string> mode_names() {
  std::vector<std::string> names;
  for (const auto& [name, mode] : job_file_modes()) names.push_back(name);
  return names;
}

FaultKeySpec job_key() {
  return FaultKeySpec{.name = "job",
                      .type = FaultKeyType::job,
                      .required = true,
                      .what = "job id",
                      .expected = "the id of a group, publish or reconcile job from /jobs",
                      .schema_ref = "identifier",
                      .doc = "`job` (required: a `group`, `publish` or `reconcile` job)",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        REHEARSE_ASSERT(v.value.is_string());  // a declared job's id
                        f.job = v.value.get<std::string>();
                      }};
}

FaultKeySpec mode_key() {
  return FaultKeySpec{.name = "mode",
                      .type = FaultKeyType::name,
                      .names = mode_names(),
                      .what = "corruption mode",
                      .doc = "`mode` (`garbage` (default), `empty`, `schema`)",
                      .default_value = "garbage",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        REHEARSE_ASSERT_LT(v.index,
                                           job_file_modes().size());  // one of mode_names()
                        f.mode = job_file_modes()[v.index].second;
                      }};
}

}  // namespace

FaultKindSpec job_file_corrupted_kind() {
  return FaultKindSpec{
      .name = "job_file_corrupted",
      .applies_to = FaultTarget::job_file,
      .keys = {job_key(), mode_key()},
      .trace = {{"job", [](const FaultSpec& f) -> std::optional<nlohmann::json> { return f.job; }},
                {"mode",
                 [](const FaultSpec& f) -> std::optional<nlohmann::json> {
                   // One of job_file_modes(): mode_key stores no other.
                   REHEARSE_ASSERT(f.mode != CorruptionMode::truncated &&
                                   f.mode != CorruptionMode::flip);
                   return to_string(f.mode);
                 }}},
      .meaning =
          "the job's own durable file is damaged on disk: a group or publish job's "
          "delivery ledger (its journal while one exists, else its snapshot), a reconcile "
          "job's pipeline file",
      .at_instant =
          [](const FaultSpec& f, FaultWorld& world) {
            REHEARSE_ASSERT(!f.job.empty());                             // `job` is required
            REHEARSE_ASSERT(static_cast<bool>(world.corrupt_job_file));  // the world always sets it
            world.corrupt_job_file(f);
          },
  };
}

}  // namespace rehearse::sim
