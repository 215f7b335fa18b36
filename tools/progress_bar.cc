#include "tools/progress_bar.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "report/format/progress_text.h"

namespace meshplan::tools {

bool StderrIsTerminal() {
  if (::isatty(STDERR_FILENO) == 0) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double QuietSeconds() {
  const char* text = std::getenv("MESHPLAN_PROGRESS_AFTER_S");
  if (text == nullptr || *text == '\0') return kProgressQuietSeconds;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  return end != text && *end == '\0' && value >= 0 && value < 1e6 ? value : kProgressQuietSeconds;
}

}  // namespace

ProgressBar::ProgressBar(std::string label, bool time_left)
    : label_(std::move(label)),
      time_left_(time_left),
      terminal_(StderrIsTerminal()),
      quiet_s_(QuietSeconds()),
      start_s_(SteadySeconds()),
      phase_start_s_(start_s_) {}

ProgressBar::~ProgressBar() { Erase(); }

double ProgressBar::Elapsed() const { return SteadySeconds() - start_s_; }

double ProgressBar::PhaseElapsed() const { return SteadySeconds() - phase_start_s_; }

void ProgressBar::NextPhase(std::string label) {
  label_ = std::move(label);
  phase_start_s_ = SteadySeconds();
  done_ = total_ = 0;
  last_draw_s_ = -1;
}

void ProgressBar::Update(int64_t done, int64_t total) {
  done_ = done;
  total_ = total;
  if (!terminal_) return;
  const double elapsed = Elapsed();
  if (elapsed < quiet_s_) return;
  const bool last = done >= total;
  if (!last && last_draw_s_ >= 0 && elapsed - last_draw_s_ < 1 / kRedrawsPerSecond) return;
  Draw();
}

void ProgressBar::Print(const std::string& line) {
  Erase();
  std::fprintf(stderr, "%s\n", line.c_str());
  if (terminal_ && total_ > 0 && Elapsed() >= quiet_s_) Draw();
  std::fflush(stderr);
}

void ProgressBar::Erase() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);  // to the line's start, then clear to its end
  std::fflush(stderr);
  shown_ = false;
}

void ProgressBar::Draw() {
  std::fprintf(stderr, "\r\033[K%s",
               report::ProgressBarText(label_, done_, total_, PhaseElapsed(), time_left_).c_str());
  std::fflush(stderr);
  shown_ = true;
  last_draw_s_ = Elapsed();
}

}  // namespace meshplan::tools
