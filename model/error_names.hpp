// Error and exception type names, as retry settings name them (Celery's
// autoretry_for, Temporal's nonRetryableErrorTypes, Step Functions'
// ErrorEquals), read as failure classes (docs/policies.md "Error names").
//
// A name is matched by its last dotted or `::` segment against one table of
// the common library and HTTP-client error types; a wide name (Exception,
// States.ALL) covers every class. A name the table does not know is an
// application's own error: the classifier cannot place it either, so it is
// read as class `unknown`, and the caller reports it.
#pragma once

#include <string>
#include <string_view>

#include "model/failure.hpp"

namespace rehearse {

struct ErrorNameClasses {
  FailureClassSet classes;
  bool known = false;  // false: an application's own name, read as `unknown`
};

ErrorNameClasses classes_of_error_name(std::string_view name);

}  // namespace rehearse
