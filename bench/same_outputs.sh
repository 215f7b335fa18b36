#!/usr/bin/env bash
# Checks that a refactor changed no figure: runs the same planner, simulator, sweep and fit
# commands with two meshplan binaries (e.g. one built from the commit before the change, one from
# after) and compares their outputs with wall-clock fields masked. Prints each command whose
# output differs, with the first lines of the difference; exits 1 if any differs.
# Usage: bash bench/same_outputs.sh OLD_MESHPLAN NEW_MESHPLAN [WORK_DIR [MACHINE_TOML]]
# With MACHINE_TOML (a `meshplan calibrate` file), also bench/fidelity.py's predicted side: every
# plan of its workloads (4K tokens, 8 heads of 64, fp32; full and causal; fwd and fwd+bwd) ranked
# on that file, and each one simulated on it.
set -u
if [ $# -lt 2 ]; then
  echo "usage: bash bench/same_outputs.sh OLD_MESHPLAN NEW_MESHPLAN [WORK_DIR]" >&2
  exit 2
fi
old=$(realpath "$1"); new=$(realpath "$2")
work=${3:-$(mktemp -d)}
machine=${4:-}
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "same_outputs: $b is not an executable" >&2; exit 2; }
done

capture() {  # BINARY DIR: one .out (stdout + exit code) and .err per command, .cmd its arguments
  local mp=$1 dir=$2 i=0
  mkdir -p "$dir"
  run() {
    i=$((i + 1))
    (cd "$dir" && "$mp" "$@" > "c$i.out" 2> "c$i.err"; echo "rc=$?" >> "c$i.out")
    echo "$*" > "$dir/c$i.cmd"
  }
  run plan -q --format json --top 0 --all-variants
  run plan -q --seq 256K --heads 32 --kv-heads 32 --pass fwd --top 0 --format csv --all-variants
  run plan -q -t dgx-h100-4node --seq 64K --mask window:4K --top 0 --format json --all-variants
  run plan -q -t dgx-a100-16node --seq 128K --mask docs-full-sampled:lognormal:median=8K:sigma=1.2:seed=7 \
      --heads 32 --kv-heads 8 --top 0 --format csv --all-variants
  run plan -q -t dgx-h100-4gpu --seq 16K --mask prefix:2K --top 0 --format json --all-variants
  run plan -q -t hgx-h200-32gpu --seq 512K --mask full --pass fwd --top 0 --format json --explain 3
  run plan -q -t gb200-nvl72-4rack --seq 1179648 --top 20 --simulate 5 --format json
  run plan -q -t dgx-h100-1node --seq 32K --top 0 --format table --wide --all-variants
  run plan --seq 1000000
  run sweep -q --seq 64K,256K --gpus 8,64 --format csv
  run fit --seq 2M --budget-s 1
  # Models, TP and frameworks (issue 45: the planning request moved out of the commands).
  run plan -q --model llama-3.1-70b --tp 8 --framework megatron -t dgx-h100-32node --seq 1M --top 0 --format json
  run plan -q --model gemma-2-27b -t dgx-h100-4node --seq 128K --top 10 --format json
  run plan -q --model llama-3.1-8b --tp 2 --framework yunchang -t dgx-h100-4node --seq 100001 --seq-round up --top 5
  run sweep -q --model llama-3.1-70b --tp 8 --seq 256K,1M --gpus 64,256 --format csv
  run fit -q --model llama-3.1-8b --seq 512K --budget-s 2 --format json
  local s
  for s in $("$new" plan --list-schemes | awk '{print $1}'); do
    run plan -q -t dgx-h100-4node --seq 128K --heads 32 --kv-heads 32 --schemes "$s" --top 3 --out "p-$s.toml"
    run simulate "p-$s.toml" --format json
    run simulate "p-$s.toml" -t dgx-h100-4node --format table
  done
  [ -n "$machine" ] || return 0
  local mask pass k count
  for mask in full causal; do
    for pass in fwd fwd+bwd; do
      local w=(-t "$machine" --seq 4K --heads 8 --kv-heads 8 --head-dim 64 --dtype fp32 --mask "$mask" --pass "$pass")
      run plan "${w[@]}" --format json --top 0 --all-variants -q
      # The plans in the ranking (the .out file ends with the exit code's line).
      count=$(head -n -1 "$dir/c$i.out" | python3 -c "import json,sys; print(len(json.load(sys.stdin)['plans']))")
      for k in $(seq 1 "$count"); do
        run plan "${w[@]}" --pick "$k" --out "fid.toml" -q
        run simulate fid.toml -t "$machine" --format json
      done
    done
  done
}

# masks what differs between two runs of one binary: timings and the binary's path; the source
# tree a binary was built in (shipped clusters' paths) becomes SRC (arguments: FILE BINARY); a JSON
# "workload" object becomes its "text", the string it was before issue 45 made it an object.
norm() {
  local tree
  tree=$(dirname "$(dirname "$(dirname "$2")")")
  sed -E 's/"(replay_wall_s|events_per_s|wall_s|search_s|elapsed_s)":[0-9.e+-]+/"\1":X/g; s/^replay: .*/replay: X/;
          s#Usage: [^ ]*meshplan[^ ]*#Usage: meshplan#; s/in [0-9.]+ (ms|us|s)\b/in X/g' "$1" |
    sed "s#$tree/#SRC/#g" |
    python3 -c '
import json, re, sys
def text(o):
    if isinstance(o, dict):
        return {k: v["text"] if k == "workload" and isinstance(v, dict) and "text" in v else text(v)
                for k, v in o.items()}
    return [text(x) for x in o] if isinstance(o, list) else o
for line in sys.stdin:
    try:
        if not line.lstrip().startswith("{"):
            raise ValueError
        o = json.loads(re.sub(r":X([,}])", lambda m: ":\"X\"" + m.group(1), line))
        print(json.dumps(text(o), separators=(",", ":")))
    except ValueError:
        print(line, end="")
'
}

capture "$old" "$work/old"
capture "$new" "$work/new"
differ=0 same=0
for f in "$work"/old/*; do
  b=$(basename "$f")
  case "$b" in *.cmd) continue ;; esac
  if diff <(norm "$f" "$old") <(norm "$work/new/$b" "$new") > "$work/diff"; then
    same=$((same + 1))
  else
    differ=$((differ + 1))
    echo "== differs: $b (meshplan $(cat "$work/old/${b%.*}.cmd" 2>/dev/null))"
    head -8 "$work/diff"
  fi
done
echo "same_outputs: $same files identical, $differ differ ($work)"
[ "$differ" = 0 ]
