// Reads one YAML document (a Kubernetes Job manifest, a values file, any YAML
// a system keeps its retry settings in) into JSON, with yaml-cpp doing the
// syntax. JSON text is YAML and reads the same.
//
// Scalars are typed as the YAML 1.2 core schema types them, which is what
// Kubernetes means by the same text: a plain (unquoted) integer becomes a JSON
// integer (beyond int64, a double), a plain float a number, true/false (also
// True, TRUE, ...) a boolean, null/~/nothing null; every quoted or block
// scalar stays a string. The tags !!str, !!int, !!float, !!bool, !!null, !!map
// and !!seq are honoured.
//
// Refused, with the 1-based line:column of the offending node:
//   - no document, an empty one, or several (`---`): a manifest is one document;
//   - plain scalars that YAML 1.1 readers (go-yaml v2, which Kubernetes
//     tooling still uses) read differently from YAML 1.2: yes/no/on/off/y/n,
//     zero-led integers (octal in 1.1), 1_000, 0x/0o/0b numbers; quote them or
//     write true/false and decimal numbers;
//   - .inf and .nan (JSON has no such numbers), other tags (!Ref, !!binary);
//   - map keys that are maps, lists or null, a key given twice (YAML forbids
//     it; yaml-cpp would keep both), merge keys (<<);
//   - control characters other than tab and line breaks, and bytes that are
//     not UTF-8 (also UTF-16 text), anywhere; strings that are not valid UTF-8, values nested
//     deeper than 64 levels, aliases that expand to more than 100,000 values;
//   - every syntax error yaml-cpp reports, with its message.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "model/result.hpp"

namespace rehearse {

// Errors: ErrorCode::parse_error with where = "line:column" (1-based).
Result<nlohmann::json> read_yaml_document(std::string_view text);

}  // namespace rehearse
