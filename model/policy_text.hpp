// A system's retry settings as its users keep them, read into the system's
// own keys as JSON (docs/policies.md "Native files and snippets"): a
// Kubernetes manifest in YAML, Celery's decorator and Temporal's Python
// RetryPolicy(...) as Python writes them, Sidekiq's sidekiq_options and
// sidekiq_retry_in as Ruby, and JavaScript object literals (of which JSON is
// a subset) for every system. The converters (convert_system_policy) then
// read the keys; this layer knows the syntax only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/result.hpp"

namespace rehearse {

// "@PATH" names a file holding the text; a Python decorator such as
// "@app.task(max_retries=3)" is text. The path, or nullopt for text: "@"
// followed by something without "(" or white space.
std::optional<std::string> policy_file_reference(std::string_view text);

// Errors carry `where` as "line:column" and name the syntax expected.
Result<nlohmann::json> read_native_policy(std::string_view system, std::string_view text);

// A retry_policy with every text in it read: a system's key holding text
// ({"celery": "@app.task(...)"}) and a Sidekiq `retry_in` given as the
// block's Ruby body. Anything else is returned as written. Errors' `where`
// is the JSON pointer of the text, then " line:column" inside it.
Result<nlohmann::json> read_policy_texts(const nlohmann::json& policy);

}  // namespace rehearse
