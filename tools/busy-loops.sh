# Sourced by the scripts that run tests with other work on the machine (tools/test-under-load.sh,
# bench/suite_under_load.sh): start_busy_loops N starts N shell loops that each keep a core busy,
# and stops them when the sourcing script exits.
busy_loop_pids=()
stop_busy_loops() {
  for pid in "${busy_loop_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
start_busy_loops() {
  trap stop_busy_loops EXIT
  for _ in $(seq "$1"); do
    (while :; do :; done) &
    busy_loop_pids+=("$!")
  done
}
