#include "model/pipeline_store.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/assert.hpp"

namespace rehearse {
namespace {

using nlohmann::json;

std::string parent_dir(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const auto slash = d.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return d.substr(0, slash);
}

json instant_or_null(std::optional<TimeMs> t) {
  if (!t) return nullptr;
  return format_instant(*t);
}

// Checks one record; `where` names it in the message.
Status check_item(const PipelineItem& item, const std::string& where) {
  if (item.id.empty()) return make_error(ErrorCode::schema_error, "empty internal id", where);
  if (item.issue.empty()) return make_error(ErrorCode::schema_error, "empty issue id", where);
  if (item.stage.empty()) return make_error(ErrorCode::schema_error, "empty stage", where);
  if (item.failures < 0) return make_error(ErrorCode::schema_error, "negative failures", where);
  return {};
}

Status check_unique(const std::vector<PipelineItem>& items) {
  std::set<std::string> ids;
  std::set<std::string> issues;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string where = fmt::format("/items/{}", i);
    if (auto s = check_item(items[i], where); !s.ok()) return s;
    if (!ids.insert(items[i].id).second) {
      return make_error(ErrorCode::schema_error, "duplicate internal id " + items[i].id, where);
    }
    if (!issues.insert(items[i].issue).second) {
      return make_error(ErrorCode::schema_error, "duplicate issue id " + items[i].issue, where);
    }
  }
  return {};
}

Result<std::string> get_string(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || !o.at(key).is_string()) {
    return make_error(ErrorCode::schema_error, fmt::format("'{}' must be a string", key), where);
  }
  return o.at(key).get<std::string>();
}

Result<std::optional<TimeMs>> get_instant(const json& o, const char* key, bool nullable,
                                          const std::string& where) {
  if (!o.contains(key)) {
    return make_error(ErrorCode::schema_error, fmt::format("'{}' is missing", key), where);
  }
  const json& v = o.at(key);
  if (v.is_null() && nullable) return std::optional<TimeMs>{};
  if (!v.is_string()) {
    return make_error(ErrorCode::schema_error, fmt::format("'{}' must be an instant", key), where);
  }
  auto t = parse_instant(v.get<std::string>());
  if (!t.ok()) {
    return make_error(ErrorCode::schema_error, fmt::format("'{}': {}", key, t.error().message),
                      where);
  }
  return std::optional<TimeMs>{*t};
}

}  // namespace

std::string encode_pipeline(const std::vector<PipelineItem>& items) {
  json list = json::array();
  for (const PipelineItem& item : items) {
    json o = json::object();
    o["id"] = item.id;
    o["issue"] = item.issue;
    o["stage"] = item.stage;
    o["reconcile_error"] = item.reconcile_error;
    o["failures"] = item.failures;
    o["next_attempt_at"] = format_instant(item.next_attempt_at);
    o["last_config_error_at"] = instant_or_null(item.last_config_error_at);
    o["validated_instance"] = item.validated_instance;
    o["updated_at"] = format_instant(item.updated_at);
    list.push_back(std::move(o));
  }
  json doc = json::object();
  doc["format"] = kPipelineFormat;
  doc["items"] = std::move(list);
  // Error texts come from outside (an orchestrator's message): invalid UTF-8
  // is replaced (U+FFFD) rather than making the write throw.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<std::vector<PipelineItem>> decode_pipeline(std::string_view bytes) {
  json doc = json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error(ErrorCode::parse_error, "not valid JSON");
  if (!doc.is_object()) return make_error(ErrorCode::schema_error, "not an object", "/");
  for (const auto& [key, value] : doc.items()) {
    if (key != "format" && key != "items") {
      return make_error(ErrorCode::schema_error, "unknown key '" + key + "'", "/" + key);
    }
  }
  if (!doc.contains("format") || !doc.at("format").is_number_integer() ||
      doc.at("format").get<int>() != kPipelineFormat) {
    return make_error(ErrorCode::schema_error, "'format' must be 1", "/format");
  }
  if (!doc.contains("items") || !doc.at("items").is_array()) {
    return make_error(ErrorCode::schema_error, "'items' must be an array", "/items");
  }
  std::vector<PipelineItem> items;
  const json& list = doc.at("items");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("/items/{}", i);
    const json& o = list.at(i);
    if (!o.is_object()) return make_error(ErrorCode::schema_error, "not an object", where);
    PipelineItem item;
    auto id = get_string(o, "id", where);
    if (!id.ok()) return std::move(id).error();
    auto issue = get_string(o, "issue", where);
    if (!issue.ok()) return std::move(issue).error();
    auto stage = get_string(o, "stage", where);
    if (!stage.ok()) return std::move(stage).error();
    auto error = get_string(o, "reconcile_error", where);
    if (!error.ok()) return std::move(error).error();
    auto instance = get_string(o, "validated_instance", where);
    if (!instance.ok()) return std::move(instance).error();
    if (!o.contains("failures") || !o.at("failures").is_number_integer()) {
      return make_error(ErrorCode::schema_error, "'failures' must be an integer", where);
    }
    auto next = get_instant(o, "next_attempt_at", false, where);
    if (!next.ok()) return std::move(next).error();
    auto config_at = get_instant(o, "last_config_error_at", true, where);
    if (!config_at.ok()) return std::move(config_at).error();
    auto updated = get_instant(o, "updated_at", false, where);
    if (!updated.ok()) return std::move(updated).error();
    for (const auto& [key, value] : o.items()) {
      static const std::set<std::string> kKeys{"id",
                                               "issue",
                                               "stage",
                                               "reconcile_error",
                                               "failures",
                                               "next_attempt_at",
                                               "last_config_error_at",
                                               "validated_instance",
                                               "updated_at"};
      if (kKeys.count(key) == 0) {
        return make_error(ErrorCode::schema_error, "unknown key '" + key + "'", where);
      }
    }
    item.id = std::move(*id);
    item.issue = std::move(*issue);
    item.stage = std::move(*stage);
    item.reconcile_error = std::move(*error);
    item.validated_instance = std::move(*instance);
    const std::int64_t failures = o.at("failures").get<std::int64_t>();
    if (failures < 0 || failures > 1'000'000) {
      return make_error(ErrorCode::schema_error, "'failures' out of range", where);
    }
    item.failures = static_cast<int>(failures);
    item.next_attempt_at = **next;
    item.last_config_error_at = *config_at;
    item.updated_at = **updated;
    items.push_back(std::move(item));
  }
  if (auto s = check_unique(items); !s.ok()) return s.error();
  return items;
}

PipelineStore::PipelineStore(Disk& disk, std::string dir) : disk_(disk), dir_(std::move(dir)) {
  REHEARSE_ASSERT(!dir_.empty());
}

Result<std::vector<PipelineItem>> PipelineStore::read_locked() {
  auto bytes = disk_.read_file(file_path());
  if (!bytes.ok()) return std::move(bytes).error();
  if (!bytes->has_value()) {
    corrupt_ = false;
    return std::vector<PipelineItem>{};
  }
  auto items = decode_pipeline(**bytes);
  if (!items.ok()) {
    // Fail closed: the file stays as it is and every operation reports it.
    corrupt_ = true;
    return make_error(ErrorCode::corrupt,
                      "pipeline file is corrupt (kept for repair): " + items.error().describe(),
                      file_path());
  }
  corrupt_ = false;
  return items;
}

Status PipelineStore::write_locked(const std::vector<PipelineItem>& items) {
  // Check before writing; the reader checks again after reading back.
  if (auto s = check_unique(items); !s.ok()) {
    return make_error(ErrorCode::internal, "refusing to write: " + s.error().describe(),
                      file_path());
  }
  const std::string bytes = encode_pipeline(items);
  // Read-back check: the bytes about to be written decode to exactly these
  // items. An encoder that drops or alters a field stops here, at the cause,
  // instead of at the next load (where the store would fail closed on its
  // own file). Pure: no second disk read, so a disk fault is never taken for
  // a bug.
  auto back = decode_pipeline(bytes);
  REHEARSE_ASSERT(back.ok());
  REHEARSE_ASSERT_EQ(back->size(), items.size());
  REHEARSE_ASSERT(*back == items);
  const std::string temp = file_path() + kTempSuffix;
  if (auto s = disk_.write_file(temp, bytes); !s.ok()) return s;
  if (auto s = disk_.fsync_file(temp); !s.ok()) return s;
  if (auto s = disk_.rename_file(temp, file_path()); !s.ok()) return s;
  return disk_.fsync_dir(dir_);
}

Result<std::vector<PipelineItem>> PipelineStore::load() {
  auto held = disk_.lock_exclusive(join_path(dir_, kLockName));
  if (!held.ok()) {
    // The directory may not exist yet: nothing was ever written.
    auto bytes = disk_.read_file(file_path());
    if (bytes.ok() && !bytes->has_value()) return std::vector<PipelineItem>{};
    return std::move(held).error();
  }
  return read_locked();
}

Result<std::optional<PipelineItem>> PipelineStore::find(const std::string& issue) {
  auto items = load();
  if (!items.ok()) return std::move(items).error();
  for (PipelineItem& item : *items) {
    if (item.issue == issue) return std::optional<PipelineItem>(std::move(item));
  }
  return std::optional<PipelineItem>{};
}

Status PipelineStore::save_item(const PipelineItem& item) {
  if (auto s = check_item(item, item.id); !s.ok()) {
    return make_error(ErrorCode::invalid_argument, s.error().describe(), file_path());
  }
  if (auto s = disk_.create_dir(dir_); !s.ok()) return s;
  if (auto s = disk_.fsync_dir(parent_dir(dir_)); !s.ok()) return s;
  auto held = disk_.lock_exclusive(join_path(dir_, kLockName));
  if (!held.ok()) return std::move(held).error();
  auto items = read_locked();
  if (!items.ok()) return std::move(items).error();
  bool replaced = false;
  for (PipelineItem& existing : *items) {
    if (existing.id == item.id) {
      existing = item;
      replaced = true;
      break;
    }
  }
  if (!replaced) items->push_back(item);
  REHEARSE_ASSERT_EQ(std::count_if(items->begin(), items->end(),
                                   [&item](const PipelineItem& i) { return i.id == item.id; }),
                     1);
  return write_locked(*items);
}

Result<std::size_t> PipelineStore::add_missing(const std::vector<PipelineItem>& items) {
  if (auto s = disk_.create_dir(dir_); !s.ok()) return s.error();
  if (auto s = disk_.fsync_dir(parent_dir(dir_)); !s.ok()) return s.error();
  auto held = disk_.lock_exclusive(join_path(dir_, kLockName));
  if (!held.ok()) return std::move(held).error();
  auto stored = read_locked();
  if (!stored.ok()) return std::move(stored).error();
  std::size_t added = 0;
  for (const PipelineItem& item : items) {
    bool present = false;
    for (const PipelineItem& existing : *stored) {
      if (existing.issue == item.issue || existing.id == item.id) present = true;
    }
    if (present) continue;
    if (auto s = check_item(item, item.id); !s.ok()) return s.error();
    stored->push_back(item);
    ++added;
  }
  if (added == 0) return added;
  REHEARSE_ASSERT_LE(added, items.size());
  if (auto s = write_locked(*stored); !s.ok()) return s.error();
  return added;
}

}  // namespace rehearse
