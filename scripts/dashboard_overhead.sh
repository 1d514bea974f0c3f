#!/usr/bin/env bash
# What the training dashboard costs: one Fashion-MNIST epoch (examples/fashion_mnist) with the
# dashboard, in a 120x32 tmux terminal, and with plain lines to a file, interleaved for N rounds.
# Prints each run's epoch seconds (train + valid, from the metric log at full precision) and the
# median ratio dashboard / plain.
# Usage: scripts/dashboard_overhead.sh [build dir] [rounds] [epochs] [more fashion_mnist arguments]
# (a data root, --device cuda, ...). DASH_ENV="EMBER_DASHBOARD=0" times the one-line bar instead.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
epochs=${3:-1}
shift $(($# < 3 ? $# : 3))
extra=$(printf " %q" "$@")
bin=$build/examples/fashion_mnist
work=$(mktemp -d)
export TMUX_TMPDIR=$work
trap 'tmux kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
seconds() {  # the sum of the metric log's "seconds" column
  awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "seconds") c = i; next } { s += $c } END { printf "%.3f", s }' "$1"
}
dash=() plain=()
run_dash() {
  rm -f "$work/done"
  tmux new-session -d -s m -x 120 -y 32 \
    "cd '$work' && ${DASH_ENV:-} '$bin' $epochs$extra --log dash.csv; touch done; sleep 60"
  while [[ ! -e $work/done ]]; do sleep 1; done
  tmux kill-session -t m
}
run_plain() { (cd "$work" && "$bin" "$epochs" "$@" --log plain.csv > plain.log); }
for r in $(seq "$rounds"); do
  rm -f "$work/dash.csv" "$work/plain.csv"
  if ((r % 2)); then run_dash; run_plain "$@"; else run_plain "$@"; run_dash; fi  # order alternates
  d=$(seconds "$work/dash.csv") p=$(seconds "$work/plain.csv")
  dash+=("$d") plain+=("$p")
  echo "round $r: dashboard ${d} s, plain ${p} s, ratio $(echo "$d $p" | awk '{ printf "%.4f", $1 / $2 }')"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
md=$(median "${dash[@]}") mp=$(median "${plain[@]}")
echo "median: dashboard $md s, plain $mp s, ratio $(echo "$md $mp" | awk '{ printf "%.4f", $1 / $2 }')"
echo "plain log of $epochs epoch(s): $(wc -c < "$work/plain.log") bytes"
