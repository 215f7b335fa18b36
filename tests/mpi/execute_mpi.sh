#!/bin/sh
# `meshplan execute --transport mpi` under mpirun: a 4-rank plan runs with one process per rank,
# rank 0 gathers the outputs and the check against plain attention passes; a wrong process count
# is refused and a failing rank ends the job; --repeat runs every rank the same number of times.
# Usage: execute_mpi.sh MESHPLAN SOURCE_DIR [MPIEXEC]   (CTest label mpi, tests/CMakeLists.txt)
set -u
meshplan=$1
source_dir=$2
mpiexec=${3:-mpirun}
work=$(mktemp -d "${TMPDIR:-/tmp}/meshplan_execute_mpi.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

fail() {
  echo "execute_mpi: FAILED: $*"
  echo "--- stdout"; cat "$work/out" 2>/dev/null
  echo "--- stderr"; cat "$work/err" 2>/dev/null
  exit 1
}

"$meshplan" plan -t "$source_dir/tests/mpi/four_gpus.toml" --seq 256 --heads 4 --kv-heads 2 \
  --head-dim 16 --schemes mesh -q --out "$work/plan.toml" >"$work/out" 2>"$work/err" ||
  fail "meshplan plan"

"$mpiexec" -np 4 --oversubscribe --allow-run-as-root "$meshplan" execute "$work/plan.toml" \
  --transport mpi --check --outputs "$work/outputs" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 0 ] || fail "mpirun exited $rc"
grep -q "transport mpi, 4 ranks" "$work/out" || fail "no 'transport mpi, 4 ranks' line"
grep -q "^check passed$" "$work/out" || fail "no 'check passed' line"
# Only rank 0 prints: one report, one check line.
[ "$(grep -c '^check passed$' "$work/out")" -eq 1 ] || fail "more than one rank printed"
for f in o lse dq dk dv; do
  [ -s "$work/outputs/$f.npy" ] || fail "missing output $f.npy"
done

# --repeat: every rank makes the warm-up and the timed runs, each behind its own start barrier;
# rank 0 alone reports them (and checks the first timed run).
"$mpiexec" -np 4 --oversubscribe --allow-run-as-root "$meshplan" execute "$work/plan.toml" \
  --transport mpi --check --repeat 3 --format json >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 0 ] || fail "mpirun --repeat 3 exited $rc"
grep -q '"repeat":{"n":3,"warm_up":1,' "$work/out" || fail "no repeat object with n 3 and one warm-up"
grep -q '"passed":true' "$work/out" || fail "the check of the first timed run did not pass"
[ "$(grep -c '^{' "$work/out")" -eq 1 ] || fail "more than one rank printed"
[ "$(grep -c '^warm-up run: ' "$work/err")" -eq 1 ] || fail "not one warm-up progress line"
for i in 1 2 3; do
  [ "$(grep -c "^run $i/3: " "$work/err")" -eq 1 ] || fail "not one progress line for run $i/3"
done

# A job with fewer processes than the plan's ranks is refused (exit 2, one clear line).
"$mpiexec" -np 2 --oversubscribe --allow-run-as-root "$meshplan" execute "$work/plan.toml" \
  --transport mpi >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -ne 0 ] || fail "a 2-process job for a 4-rank plan succeeded"
grep -q "the plan has 4 ranks but this MPI job has 2 processes" "$work/err" ||
  fail "no process-count error"
# A rank that fails mid-run ends the whole job with one line naming the rank and the op, and no
# output files.
"$mpiexec" -np 4 --oversubscribe --allow-run-as-root "$meshplan" execute "$work/plan.toml" \
  --transport mpi --inject-fail 2:3 --outputs "$work/failed" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -ne 0 ] || fail "a run with a failing rank succeeded"
grep -q "meshplan: rank 2: aborting the MPI job: rank 2 op 3 .*injected failure" "$work/err" ||
  fail "no abort line naming rank 2 op 3"
[ ! -e "$work/failed" ] || fail "a failed run left outputs"
# Issue 33: a failure on any rank, rank 0 included, leaves no outputs of an earlier run in DIR
# (rank 0 removes them when every rank is ready, before anything runs), exit 1; other files stay.
for failing in 0:2 1:2; do
  mkdir -p "$work/earlier"
  for f in o lse dq dk dv; do echo "earlier run" >"$work/earlier/$f.npy"; done
  echo "not an output" >"$work/earlier/notes.txt"
  "$mpiexec" -np 4 --oversubscribe --allow-run-as-root "$meshplan" execute "$work/plan.toml" \
    --transport mpi --inject-fail "$failing" --outputs "$work/earlier" >"$work/out" 2>"$work/err"
  rc=$?
  [ "$rc" -eq 1 ] || fail "--inject-fail $failing: mpirun exited $rc, expected 1"
  for f in o lse dq dk dv; do
    [ ! -e "$work/earlier/$f.npy" ] || fail "--inject-fail $failing left the earlier run's $f.npy"
  done
  [ -e "$work/earlier/notes.txt" ] || fail "--inject-fail $failing removed a file that is no output"
done
# A refusal before the run (a rank that cannot read its inputs) leaves them.
for f in o lse dq dk dv; do echo "earlier run" >"$work/earlier/$f.npy"; done
"$mpiexec" -np 4 --oversubscribe --allow-run-as-root "$meshplan" execute "$work/plan.toml" \
  --transport mpi --inputs "$work/no-such-dir" --outputs "$work/earlier" >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 2 ] || fail "missing inputs: mpirun exited $rc, expected 2"
[ -e "$work/earlier/o.npy" ] || fail "a refused run removed the earlier outputs"

# A silent rank: the rank it starved reports, naming it, in one line; exit 1.
"$mpiexec" -np 4 --oversubscribe --allow-run-as-root "$meshplan" execute "$work/plan.toml" \
  --transport mpi --inject-silent 2 --timeout-s 1 >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" -eq 1 ] || fail "--inject-silent 2: mpirun exited $rc, expected 1"
[ "$(grep -c '^meshplan: ' "$work/err")" -eq 1 ] || fail "--inject-silent 2: not one meshplan line"
grep -q "^meshplan: rank [0-9]*: aborting the MPI job: .*recv from rank 2 .*(rank 2 sends nothing" \
  "$work/err" || fail "--inject-silent 2: the line does not name the silent rank"
echo "execute_mpi: passed"
