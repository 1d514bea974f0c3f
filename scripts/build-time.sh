#!/usr/bin/env bash
# Clean-build cost of the library (target `ember`, Release, ccache off) at one or more commits,
# for the "a clean build stays <= 1.3x" check. Each commit is checked out in a scratch worktree
# and built from nothing; every compile is wrapped so that its CPU time (user + sys) is summed,
# which, unlike the wall time, barely moves when other work shares the machine.
#   scripts/build-time.sh [-j N] COMMIT...      e.g. scripts/build-time.sh 5b56318 main
# Prints, per commit: translation units, summed compile CPU seconds, the slowest five units,
# and the wall time of the build.
set -euo pipefail
jobs=2
if [[ "${1:-}" == "-j" ]]; then jobs=$2; shift 2; elif [[ "${1:-}" == -j* ]]; then jobs=${1#-j}; shift; fi
[[ $# -ge 1 ]] || { echo "usage: $0 [-j N] COMMIT..." >&2; exit 2; }
repo="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/ember-build-time.XXXXXX")"
trap 'for w in "$scratch"/wt-*; do git -C "$repo" worktree remove --force "$w" 2>/dev/null || true; done; rm -rf "$scratch"' EXIT

# The compiler launcher: runs one compile under GNU time, appending "seconds source" to $LOG.
cat >"$scratch/time-cxx" <<'EOF'
#!/usr/bin/env bash
src=unknown
for a in "$@"; do [[ "$a" == *.cpp ]] && src="$a"; done
exec /usr/bin/time -a -o "$EMBER_BUILD_TIME_LOG" -f "%U %S $src" "$@"
EOF
chmod +x "$scratch/time-cxx"

for commit in "$@"; do
  wt="$scratch/wt-$(git -C "$repo" rev-parse --short "$commit")"
  git -C "$repo" worktree add --detach -q "$wt" "$commit"
  log="$wt.times"
  : >"$log"
  cmake -S "$wt" -B "$wt/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=OFF \
    -DCCACHE_PROGRAM="$scratch/time-cxx" >/dev/null  # the launcher CMakeLists sets from it
  start=$(date +%s)
  CCACHE_DISABLE=1 EMBER_BUILD_TIME_LOG="$log" cmake --build "$wt/build" -j "$jobs" --target ember \
    >/dev/null
  wall=$(($(date +%s) - start))
  echo "== $commit ($(git -C "$repo" rev-parse --short "$commit")): load $(cut -d' ' -f1-3 /proc/loadavg)"
  awk -v wall="$wall" '{cpu += $1 + $2; n++} END {printf "  %d units, %.0f s compile CPU, %d s wall\n", n, cpu, wall}' "$log"
  awk '{printf "  %7.1f s  %s\n", $1 + $2, $3}' "$log" | sort -rn | head -5
done
