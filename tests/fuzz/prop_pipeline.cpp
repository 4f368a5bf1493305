// The pipeline store's decoder and the store over a file of arbitrary content
// (docs/fuzzing.md, target `pipeline`). Input: the file.
//  - decode refuses with parse_error or schema_error; an accepted file's
//    items have unique non-empty ids and issues and failures >= 0, and
//    decode(encode(items)) == items with encoding a fixed point;
//  - the store reads what the decoder reads; on a refused file it reports
//    corrupt, a save fails as corrupt and leaves the file byte for byte; on an
//    accepted one a save of a new item succeeds, keeps every earlier item
//    as it was, and reads back.
#include <set>
#include <string>

#include "model/pipeline_store.hpp"
#include "tests/fuzz/mem_disk.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

void check_decoded(const std::vector<PipelineItem>& items) {
  std::set<std::string> ids, issues;
  for (const PipelineItem& item : items) {
    REHEARSE_FUZZ_CHECK(!item.id.empty() && ids.insert(item.id).second, item.id);
    REHEARSE_FUZZ_CHECK(!item.issue.empty() && issues.insert(item.issue).second, item.issue);
    REHEARSE_FUZZ_CHECK(item.failures >= 0 && !item.stage.empty(), item.id);
  }
  const std::string encoded = encode_pipeline(items);
  const Result<std::vector<PipelineItem>> back = decode_pipeline(encoded);
  REHEARSE_FUZZ_CHECK(back.ok() && *back == items, encoded);
  REHEARSE_FUZZ_CHECK(encode_pipeline(*back) == encoded, encoded);
}

PipelineItem new_item() {
  PipelineItem item;
  item.id = "fuzz-new-item";
  item.issue = "fuzz-new-issue";
  item.stage = "BUILDING";
  item.failures = 2;
  item.next_attempt_at = 1'700'000'000'000;
  item.updated_at = 1'700'000'000'000;
  return item;
}

}  // namespace

void check_pipeline(std::string_view input) {
  const Result<std::vector<PipelineItem>> decoded = decode_pipeline(input);
  if (decoded.ok()) {
    check_decoded(*decoded);
  } else {
    REHEARSE_FUZZ_CHECK(decoded.error().code == ErrorCode::parse_error ||
                            decoded.error().code == ErrorCode::schema_error,
                        decoded.error().describe());
  }
  MemDisk disk;
  PipelineStore store(disk, "pipeline");
  disk.files[store.file_path()] = std::string(input);
  const Result<std::vector<PipelineItem>> loaded = store.load();
  REHEARSE_FUZZ_CHECK(loaded.ok() == decoded.ok() && store.corrupt() == !decoded.ok(),
                      "the store and the decoder disagree");
  if (!decoded.ok()) {
    REHEARSE_FUZZ_CHECK(loaded.error().code == ErrorCode::corrupt, loaded.error().describe());
    const Status s = store.save_item(new_item());
    REHEARSE_FUZZ_CHECK(!s.ok() && s.error().code == ErrorCode::corrupt,
                        "saved over a corrupt file");
    REHEARSE_FUZZ_CHECK(disk.files[store.file_path()] == input, "a corrupt file was changed");
    return;
  }
  REHEARSE_FUZZ_CHECK(*loaded == *decoded, "the store read other items");
  const PipelineItem item = new_item();
  const Status s = store.save_item(item);
  if (!s.ok()) {
    // Only a clash with an existing issue may refuse the new item.
    REHEARSE_FUZZ_CHECK(disk.files[store.file_path()] == input, s.error().describe());
    return;
  }
  const Result<std::vector<PipelineItem>> after = store.load();
  REHEARSE_FUZZ_CHECK(after.ok(), after.error().describe());
  std::size_t kept = 0;
  for (const PipelineItem& old : *decoded) {
    if (old.id == item.id) continue;
    for (const PipelineItem& now : *after) kept += now == old ? 1 : 0;
  }
  const std::size_t replaced = decoded->size() - kept;
  REHEARSE_FUZZ_CHECK(replaced <= 1, "save_item changed other items");
  const auto found = store.find(item.issue);
  REHEARSE_FUZZ_CHECK(found.ok() && found->has_value() && **found == item,
                      "the saved item is lost");
}

}  // namespace rehearse::fuzz
