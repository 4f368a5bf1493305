// The monitors' own reading of error and exception type names as failure
// classes (docs/policies.md "Error names"), for the policies that name
// errors: Step Functions' ErrorEquals, Celery's autoretry_for, Temporal's
// nonRetryableErrorTypes. Written from the clients' documented exception
// hierarchies, apart from model/error_names on purpose: a core that read a
// name wrongly must meet a reading that does not share the mistake.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace rehearse::sim {

// The classes a name stands for (every class for a wide name such as
// Exception or States.ALL); {"unknown"} for an application's own name.
std::set<std::string> witness_error_classes(std::string_view name);

// Every failure class, by name.
const std::set<std::string>& witness_all_classes();

}  // namespace rehearse::sim
