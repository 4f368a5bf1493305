#include "model/policy_text.hpp"

#include <fmt/format.h>

#include "model/js_literal.hpp"
#include "model/policy_forms.hpp"
#include "model/python_literal.hpp"
#include "model/ruby_snippet.hpp"
#include "model/yaml_document.hpp"

namespace rehearse {

namespace {

enum class Syntax : unsigned char { js, python, ruby, yaml };

// The first character that is not space or part of a comment line.
char first_significant(std::string_view text) {
  bool comment = false;
  for (const char c : text) {
    if (comment) {
      comment = c != '\n';
      continue;
    }
    if (c == '#') {
      comment = true;
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return c;
  }
  return '\0';
}

// Which reader a text is for: an object literal is JavaScript (or JSON);
// otherwise the language the system's users write it in.
Syntax syntax_of(std::string_view system, std::string_view text) {
  if (system == "k8s") return Syntax::yaml;
  const char first = first_significant(text);
  if (first == '{' || first == '[') {
    // A Python dict ({'max_retries': None}) is no JavaScript.
    const bool python_words = text.find("None") != std::string_view::npos ||
                              text.find("True") != std::string_view::npos ||
                              text.find("False") != std::string_view::npos;
    return system == "celery" && python_words ? Syntax::python : Syntax::js;
  }
  if (system == "sidekiq") return Syntax::ruby;
  if (system == "celery" || system == "temporal") return Syntax::python;
  return Syntax::js;
}

Result<nlohmann::json> with_syntax(Result<nlohmann::json> read, std::string_view language) {
  if (read.ok()) return read;
  Error e = std::move(read).error();
  e.message = fmt::format("read as {}: {}", language, e.message);
  return e;
}

}  // namespace

std::optional<std::string> policy_file_reference(std::string_view text) {
  if (text.size() < 2 || text.front() != '@') return std::nullopt;
  if (text.find_first_of("( \t\r\n") != std::string_view::npos) return std::nullopt;
  return std::string(text.substr(1));
}

Result<nlohmann::json> read_native_policy(std::string_view system, std::string_view text) {
  switch (syntax_of(system, text)) {
    case Syntax::yaml: return with_syntax(read_yaml_document(text), "YAML (a Job manifest)");
    case Syntax::python: return with_syntax(read_python_call(text), "Python");
    case Syntax::ruby: return with_syntax(read_sidekiq_snippet(text), "Ruby (a Sidekiq job)");
    case Syntax::js: break;
  }
  return with_syntax(parse_js_literal(text), "a JavaScript object literal (or JSON)");
}

namespace {

Error inside(Error e, const std::string& pointer) {
  e.where = pointer + (e.where.empty() ? "" : " " + e.where);
  return e;
}

// "retry_in": "10 * (count + 1)" is the block sidekiq_retry_in { |count| ... }.
Result<nlohmann::json> read_block_text(nlohmann::json value, const std::string& pointer) {
  const std::string body = value.at("retry_in").get<std::string>();
  auto block = read_sidekiq_snippet("sidekiq_retry_in { |count| " + body + " }");
  if (!block.ok()) return inside(std::move(block).error(), pointer + "/retry_in");
  value["retry_in"] = block->at("retry_in");
  return value;
}

}  // namespace

Result<nlohmann::json> read_policy_texts(const nlohmann::json& policy) {
  if (!policy.is_object()) return policy;
  nlohmann::json out = policy;
  for (auto& [system, value] : out.items()) {
    const std::string pointer = "/" + system;
    if (system == "sidekiq" && value.is_object() && value.contains("retry_in") &&
        value.at("retry_in").is_string()) {
      auto read = read_block_text(value, pointer);
      if (!read.ok()) return read;
      value = std::move(*read);
      continue;
    }
    if (!value.is_string()) continue;
    if (find_policy_system(system) == nullptr) continue;
    auto read = read_native_policy(system, value.get<std::string>());
    if (!read.ok()) return inside(std::move(read).error(), pointer);
    value = std::move(*read);
  }
  return out;
}

}  // namespace rehearse
