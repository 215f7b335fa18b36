// The text helpers the execute subcommand's reports use, now in report/text_table.h.
// TODO(issue 10): tools/execute_*.cc include this header and are being rewritten on another
// branch; once they include report/text_table.h, delete this file.
#pragma once

#include "report/text_table.h"

namespace meshplan::tools {

using report::Columns;
using report::Fixed;

}  // namespace meshplan::tools
