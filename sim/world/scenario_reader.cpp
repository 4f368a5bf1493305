// The loader's shared readers' helpers and its top level: the header, the
// time span, env, queue and the order of the world's sections.
#include "sim/world/scenario_loader.hpp"

namespace rehearse::sim::scenario_detail {

const std::vector<std::string>& keys_of(const std::string& level) {
  const auto& all = scenario_known_keys();
  const auto it = all.find(level);
  REHEARSE_ASSERT(it != all.end());
  return it->second;
}

std::string child(const std::string& pointer, std::string_view key) {
  REHEARSE_ASSERT(pointer.empty() || pointer.front() == '/');  // a JSON pointer: "" is the root
  return pointer + "/" + json_pointer_token(key);
}
std::string child(const std::string& pointer, std::size_t index) {
  REHEARSE_ASSERT(pointer.empty() || pointer.front() == '/');
  return pointer + "/" + std::to_string(index);
}

std::string join(const std::vector<std::string>& words, std::string_view sep) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += sep;
    out += w;
  }
  return out;
}

std::string quoted_list(const std::vector<std::string>& words) {
  std::vector<std::string> q;
  q.reserve(words.size());
  for (const auto& w : words) q.push_back("'" + w + "'");
  return join(q);
}

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "number " + v.dump();
    case json::value_t::string: {
      std::string s = v.dump();
      if (s.size() > 42) s = s.substr(0, 40) + "...\"";
      REHEARSE_ASSERT_LE(s.size(), 44u);  // messages quote a string briefly
      return "string " + s;
    }
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

bool is_integer(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength) return false;
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return alnum(c) || c == '_' || c == '.' || c == '-' || c == ':' || c == '@' || c == '#';
  });
}

bool is_kebab(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength || s.front() == '-' || s.back() == '-') return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && s[i - 1] != '-');
    if (!ok) return false;
  }
  return true;
}

bool is_env_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength) return false;
  if (s[0] >= '0' && s[0] <= '9') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_role_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength || s[0] < 'a' || s[0] > 'z') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

void Loader::load(const json& root) {
  if (!root.is_object()) {
    error("", fmt::format("expected a scenario (a JSON object) at the top level, got {}",
                          describe(root)));
    return;
  }
  REHEARSE_ASSERT(scenario_.jobs.empty() && scenario_.faults.empty());  // one document per loader
  check_keys(root, "", keys_of("scenario"));
  load_header(root);
  load_span(root);
  if (const json* v = field(root, "env")) load_env(*v);
  if (const json* v = field(root, "queue")) load_queue(*v);
  load_world(root);
}

// format, scenario (the name) and description.
void Loader::load_header(const json& root) {
  REHEARSE_ASSERT(root.is_object());  // load() refuses anything else first
  if (const json* v = require(root, "", "format", "the integer 1")) {
    if (!is_integer(*v)) {
      error("/format", fmt::format("expected the integer 1, got {}", describe(*v)));
    } else if (v->dump() != "1") {
      value_error("/format",
                  fmt::format("unsupported format {} (this rehearse reads format 1)", v->dump()));
    }
  }
  if (const json* v = require(root, "", "scenario", "a kebab-case name")) {
    if (auto s = read_string(*v, "/scenario", "a kebab-case name")) {
      if (is_kebab(*s)) {
        scenario_.name = *s;
      } else {
        value_error("/scenario",
                    fmt::format("invalid name \"{}\": expected kebab-case (lower-case letters and "
                                "digits separated by single hyphens, e.g. \"weekly-quota-outage\")",
                                *s));
      }
    }
  }
  if (const json* v = field(root, "description")) {
    if (auto s = read_string(*v, "/description")) scenario_.description = *s;
  }
  if (const json* v = field(root, "notes")) load_notes(*v);
}

// What a person or `rehearse import` wants a reader of the file to know:
// free text, kept, never interpreted.
void Loader::load_notes(const json& v) {
  if (!v.is_array()) {
    error("/notes", fmt::format("expected an array of strings, got {}", describe(v)));
    return;
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (auto s = read_string(v[i], fmt::format("/notes/{}", i))) scenario_.notes.push_back(*s);
  }
}

// start, until (after start) and seed.
void Loader::load_span(const json& root) {
  if (const json* v = require(root, "", "start", "an ISO-8601 UTC instant")) {
    if (auto t = read_instant(*v, "/start")) {
      scenario_.start_ms = *t;
      start_ok_ = true;
    }
  }
  if (const json* v = require(root, "", "until", "an ISO-8601 UTC instant after start")) {
    if (auto t = read_instant(*v, "/until")) {
      scenario_.until_ms = *t;
      until_ok_ = true;
    }
  }
  if (start_ok_ && until_ok_ && scenario_.until_ms <= scenario_.start_ms) {
    value_error("/until",
                fmt::format("until {} must be after start {}", format_instant(scenario_.until_ms),
                            format_instant(scenario_.start_ms)));
    until_ok_ = false;
  }
  // Faults are checked against the span only when it is one.
  REHEARSE_ASSERT(!(start_ok_ && until_ok_) || scenario_.start_ms < scenario_.until_ms);
  if (const json* v = field(root, "seed")) {
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<std::int64_t>() >= 0)) {
      error("/seed", fmt::format("expected an unsigned 64-bit integer, got {}", describe(*v)));
    } else {
      scenario_.seed = v->get<std::uint64_t>();
    }
  }
}

void Loader::load_env(const json& v) {
  if (!expect_object(v, "/env", "environment variables")) return;
  for (const auto& [name, value] : v.items()) {
    const std::string at = child("/env", name);
    if (!is_env_name(name)) {
      value_error(at, fmt::format("invalid environment variable name '{}' (letters, digits "
                                  "and _, not starting with a digit)",
                                  name));
      continue;
    }
    if (auto s = read_string(value, at, "a string value")) scenario_.env[name] = *s;
  }
  REHEARSE_ASSERT_LE(scenario_.env.size(), v.size());  // read once: one variable per key
}

void Loader::load_queue(const json& v) {
  if (!expect_object(v, "/queue", "queue settings")) return;
  check_keys(v, "/queue", keys_of("queue"));
  if (const json* st = field(v, "store")) {
    if (auto i = read_name(*st, "/queue/store", queue_store_names(), "queue store")) {
      scenario_.queue.store = static_cast<QueueStore>(*i);
    }
  }
  if (const json* c = field(v, "concurrency")) {
    if (auto n = read_int(*c, "/queue/concurrency", 1, 64)) {
      scenario_.queue.concurrency = static_cast<int>(*n);
    }
  }
  if (const json* w = field(v, "workers")) {
    if (auto n = read_int(*w, "/queue/workers", 1, 4))
      scenario_.queue.workers = static_cast<int>(*n);
  }
  if (const json* p = field(v, "standby_poll")) {
    if (auto d = read_duration(*p, "/queue/standby_poll", 1)) scenario_.queue.standby_poll_ms = *d;
  }
  if (const json* m = field(v, "max_events")) {
    if (auto n = read_int(*m, "/queue/max_events", 1, 100'000'000)) {
      scenario_.queue.max_events = *n;
    }
  }
  // The defaults and read_int's ranges: the world starts 1 to 4 workers.
  REHEARSE_ASSERT(scenario_.queue.workers >= 1 && scenario_.queue.workers <= 4);
  REHEARSE_ASSERT_GE(scenario_.queue.concurrency, 1);
}

// services, jobs, fleet, faults, expect: each reads what the ones before declared.
void Loader::load_world(const json& root) {
  REHEARSE_ASSERT(root.is_object());  // load() refuses anything else first
  if (const json* v = field(root, "services")) load_services(*v, "/services");
  if (const json* v = field(root, "jobs")) {
    load_jobs(*v, "/jobs");
  } else if (field(root, "fleet") == nullptr) {
    error("", "missing required key 'jobs' (a non-empty array of jobs; or a 'fleet' block)");
  } else {
    jobs_ok_ = true;  // no listed job; the fleet's own check decides below
  }
  // The fleet before the faults, so that a listed fault may name a generated
  // job or failure-rate service; its own faults still come after the listed
  // ones (the order that breaks ties between faults at one instant).
  if (const json* v = field(root, "fleet")) load_fleet(*v, "/fleet");
  if (const json* v = field(root, "faults")) load_faults(*v, "/faults");
  for (FaultSpec& fault : fleet_faults_) scenario_.faults.push_back(std::move(fault));
  REHEARSE_ASSERT_GE(scenario_.faults.size(), fleet_faults_.size());  // the fleet's come last
  if (const json* v = field(root, "expect")) {
    load_expect(*v, "/expect");
    scenario_.expect_source = *v;
  }
}

}  // namespace rehearse::sim::scenario_detail
