# Sourced by the device scripts (gpu_check.sh, gpu_learn.sh): run_limited LIMIT_S LOG COMMAND...
# runs COMMAND for at most LIMIT_S seconds with its output in LOG (a shell function gets the
# limit as its last argument and bounds its own commands with it), prints the log's tail, counts
# a failure in $failed and returns the exit status.
run_limited() {
  local limit=$1 log=$2
  shift 2
  # stdbuf: line-buffered, so that a stage stopped at its limit leaves what it printed
  if declare -F "$1" >/dev/null; then "$@" "$limit"; else timeout -k 5 "$limit" stdbuf -oL -eL "$@"; fi >"$log" 2>&1
  local rc=$?
  [ "$rc" -ne 0 ] && failed=$((failed + 1))
  tail -n 15 "$log"
  return "$rc"
}
