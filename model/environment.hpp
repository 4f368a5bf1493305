// The process environment as the core sees it: an ordered map (deterministic
// iteration), passed in, never read from getenv() inside the core.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace rehearse {

using Environment = std::map<std::string, std::string, std::less<>>;

inline std::optional<std::string_view> env_lookup(const Environment& env, std::string_view name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return std::string_view(it->second);
}

}  // namespace rehearse
