// Ctrl-C as a request to stop at the next safe point instead of at once: a sweep stops between
// points and keeps the rows it finished (issue 48). For as long as the object lives the first
// SIGINT only sets a flag and puts back the handler that was there before (core/base/
// temp_files.h's cleanup), so a second Ctrl-C ends the process as it always did.
#pragma once

namespace meshplan::tools {

class InterruptRequest {
 public:
  InterruptRequest();
  ~InterruptRequest();
  InterruptRequest(const InterruptRequest&) = delete;
  InterruptRequest& operator=(const InterruptRequest&) = delete;

  // Whether a SIGINT came since construction.
  bool requested() const;
};

}  // namespace meshplan::tools
