#include "tools/interrupt_request.h"

#include <signal.h>

namespace meshplan::tools {
namespace {

// A signal handler can reach nothing but process-wide state: the flag and the handler to put back.
volatile sig_atomic_t interrupted = 0;
struct sigaction previous;

void OnInterrupt(int) {
  interrupted = 1;
  ::sigaction(SIGINT, &previous, nullptr);  // async-signal-safe; the next SIGINT is the old one's
}

}  // namespace

InterruptRequest::InterruptRequest() {
  interrupted = 0;
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &previous);
}

InterruptRequest::~InterruptRequest() {
  if (interrupted == 0) ::sigaction(SIGINT, &previous, nullptr);
}

bool InterruptRequest::requested() const { return interrupted != 0; }

}  // namespace meshplan::tools
