// meshplan command line: one file per subcommand (tools/*_command.cc); this file wires them.
#include <cstdio>

int main() {
  std::puts("meshplan " MESHPLAN_VERSION);
  return 0;
}
