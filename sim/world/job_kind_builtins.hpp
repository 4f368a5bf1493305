// The built-in job kinds' table entries, one file each
// (sim/world/job_kind_<name>.cpp); job_kind_table() lists them in JobKind order.
#pragma once

#include "sim/world/job_kind_table.hpp"

namespace rehearse::sim {

JobKindDef group_job_kind();
JobKindDef fetch_job_kind();
JobKindDef reconcile_job_kind();
JobKindDef publish_job_kind();
JobKindDef call_job_kind();

}  // namespace rehearse::sim
