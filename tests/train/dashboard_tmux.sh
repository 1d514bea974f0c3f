#!/usr/bin/env bash
# The dashboard in a real terminal: tests/train/dashboard_probe.cpp trains under tmux, driven
# with send-keys and read back with capture-pane. Checks: every panel shows live figures, `p`
# freezes the iteration count for 3 s and resumes it, a resize to 80x24 redraws, `q` saves a
# checkpoint and exits cleanly with the terminal restored, a second run resumes from it, the
# terminal comes back after an uncaught exception, exit(), SIGTERM, and a double Ctrl-C or q
# (which kill), EMBER_DASHBOARD=0 gives the one-line bar, and the same program with its output
# in a file writes plain lines (no escape codes, no carriage returns).
# Usage: dashboard_tmux.sh <train_dashboard_probe> <scratch dir>
set -euo pipefail
probe=$1
work=$2
if ! command -v tmux >/dev/null; then
  echo "FAIL: tmux is not installed (scripts/deps.sh installs it)"
  exit 1
fi
rm -rf "$work"
mkdir -p "$work"
export TMUX_TMPDIR="$work"  # a tmux server of our own, not the user's
session=dash$$
fails=0
cleanup() { tmux kill-server 2>/dev/null || true; }
trap cleanup EXIT

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok: $*"; }
screen() { tmux capture-pane -p -J -t "$session"; }  # -J: wrapped lines joined
# The "iteration 12/64" count of the status panel.
iteration() { screen | grep -o 'iteration [0-9]*/' | head -1 | tr -dc '0-9'; }
# Waits (up to $2 s) until the screen matches the extended regex $1.
wait_for() {
  local deadline=$((SECONDS + $2))
  while ((SECONDS <= deadline)); do
    screen | grep -Eq -- "$1" && return 0
    sleep 0.2
  done
  return 1
}
# start <session> <epochs> [step_ms] [fail_at]: the probe in a fresh 120x32 terminal; afterwards
# the pane shows its exit status and the terminal's modes (raw mode must be gone). The shell traps
# SIGINT so that a Ctrl-C which kills the probe does not end the shell too.
start() {
  tmux new-session -d -s "$1" -x 120 -y 32 \
    "trap true INT; TERM=xterm-256color '$probe' '$work/ckpt' $2 ${3:-15} ${4:-}; echo \"exit=\$?\";
     echo tty: \$(stty -a | tr ' ;' '\n\n' | grep -Ex 'icanon|echo' | sort | tr '\n' ' '); sleep 120"
}
# The terminal is back: normal screen, cursor shown, canonical mode and echo on.
restored() {
  [[ $(tmux display -p -t "$session" '#{alternate_on}') == 0 ]] && pass "$1: alternate screen left" \
    || fail "$1: still on the alternate screen"
  [[ $(tmux display -p -t "$session" '#{cursor_flag}') == 1 ]] && pass "$1: cursor shown" \
    || fail "$1: cursor still hidden"
  wait_for 'tty: echo icanon' 3 && pass "$1: echo and canonical mode back" \
    || fail "$1: the terminal stayed raw"
}

# 1. Every panel, with live figures, once an epoch has finished (valid values exist).
start "$session" 8
wait_for 'epoch 2/8 ' 20 || fail "the status panel never reached epoch 2"
sleep 0.5
s=$(screen)
echo "$s"
# A check polls the live screen for up to 3 s: a capture can land in the middle of a repaint.
check() { if wait_for "$1" 3; then pass "$2"; else fail "$2 (no match for '$1')"; fi; }
check 'ember training · RUNNING' "title bar and mode"
check 'mode train +epoch [0-9]+/8 +iteration [0-9]+/64' "status: mode, epoch, iteration"
check 'elapsed [0-9.]+s \(fit [0-9.]+s\)' "status: elapsed"
check 'ETA [0-9.]+s \(fit [0-9.:]+s?\)' "status: ETA after warm-up"
check 'items/s [0-9]+' "status: items/s"
check 'lr 0\.0[0-9]+' "learning rate"
check 'loss +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+' "metrics: loss latest/avg for train and valid"
check 'accuracy +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+' "metrics: accuracy latest/avg for train and valid"
check 'epoch 1/8 [0-9.]+s train loss' "metrics: the last finished epoch"
check 'CPU +[0-9]+% of [0-9]+%' "system: CPU"
check 'RSS +[0-9.]+ (KiB|MiB|GiB)' "system: RSS"
check 'GPU +none' "system: GPU (none on the host)"
check '⢀|⠁|⡀|⠉|⣀|⠒|⠤' "plot: braille curve"
check 'loss: last [0-9]+ iterations' "plot: recent window"
check 'whole run' "plot: whole run"
check ' o' "plot: valid points"
# Live: the iteration count moves.
a=$(iteration); sleep 0.6; b=$(iteration)
if [[ -n $a && -n $b && $a != "$b" ]]; then pass "iteration count is live ($a -> $b)"; else fail "iteration count not moving ($a, $b)"; fi

# 2. Plots switch: tab to the next metric, down to the epochs view.
tmux send-keys -t "$session" Tab
wait_for 'accuracy: last [0-9]+ iterations' 3 && pass "tab switches the plotted metric" || fail "tab did not switch the plot"
tmux send-keys -t "$session" Down
wait_for 'accuracy per epoch' 3 && pass "down switches to the epochs view" || fail "down did not switch the view"
tmux send-keys -t "$session" '?'
wait_for 'pause / resume training' 3 && pass "? shows help" || fail "? did not show help"
tmux send-keys -t "$session" '?'

# 3. Pause: the count stays for 3 s, then moves again.
tmux send-keys -t "$session" p
wait_for 'ember training · PAUSED' 3 || fail "p did not pause"
sleep 0.3
frozen=$(iteration)
ok=1
for _ in 1 2 3; do
  sleep 1
  [[ $(iteration) == "$frozen" ]] || ok=0
done
((ok)) && pass "paused: iteration stayed at $frozen for 3 s" || fail "iteration moved while paused"
tmux send-keys -t "$session" p
sleep 0.8
after=$(iteration)
[[ -n $after && $after != "$frozen" ]] && pass "resumed: iteration $frozen -> $after" || fail "did not resume ($frozen, $after)"

# 4. Resize to 80x24: redrawn to the new size.
tmux resize-window -t "$session" -x 80 -y 24
sleep 0.6
s=$(tmux capture-pane -p -t "$session")
echo "$s"
widest=$(echo "$s" | perl -CSD -ne 'chomp; $m = length if length > $m; END { print $m + 0 }')
rows=$(echo "$s" | wc -l)
check '┌─ status' "80x24: status panel"
check '┌─ metrics' "80x24: metrics panel"
check '┌─ system' "80x24: system panel"
check 'iterations|epochs' "80x24: plot panel"
[[ $widest -le 80 && $rows -le 24 ]] && pass "80x24: frame fits ($widest columns, $rows rows)" || fail "80x24: frame is $widest x $rows"
echo "$s" | tail -1 | grep -q '┘' && pass "80x24: bottom border on the last rows" || true

# 5. q: stops after the step, saves a checkpoint, exits cleanly with the terminal restored.
tmux send-keys -t "$session" q
wait_for 'exit=[0-9]+' 15 || fail "q did not end the program"
s=$(screen)
echo "$s"
check 'interrupted: saved .*epoch-[0-9]+-step-[0-9]+\.safetensors' "q saved a mid-epoch checkpoint"
check 'exit=130' "q exit status (interrupted)"
check 'stopped at epoch' "the program went on after fit returned"
restored "q"
ckpt=$(ls "$work/ckpt" | grep -- '-step-' | tail -1)
[[ -n $ckpt ]] && pass "checkpoint file $ckpt" || fail "no mid-epoch checkpoint in $work/ckpt"
tmux kill-session -t "$session"

# 6. A second run resumes from that checkpoint, and runs to the end.
epoch=$((10#$(echo "$ckpt" | sed -E 's/epoch-0*([0-9]+)-step.*/\1/')))
batch=$((10#$(echo "$ckpt" | sed -E 's/.*-step-0*([0-9]+)\..*/\1/')))
start "$session" "$epoch"
wait_for "resumed from .*$ckpt \(epoch $epoch, batch $batch\)" 10 \
  && pass "second run resumed from $ckpt" || fail "second run did not resume from $ckpt"
wait_for 'exit=[0-9]+' 15 || fail "the second run did not finish"
s=$(screen)
check "finished at epoch $epoch" "second run finished epoch $epoch"
check 'exit=0' "second run exit status"
tmux kill-session -t "$session"

# 7. An exception nothing catches, exit() from the step, and SIGTERM: the terminal comes back.
rm -rf "$work/ckpt"
start "$session" 2 15 30
wait_for 'exit=[0-9]+' 15 || fail "the failing run did not end"
check 'terminate called after throwing.*|probe failure at step 30' "exception: its message on the normal screen"
check 'exit=134' "exception: aborted"
restored "exception"
tmux kill-session -t "$session"
rm -rf "$work/ckpt"
start "$session" 2 15 exit30
wait_for 'exit=[0-9]+' 15 || fail "the run calling exit() did not end"
check 'exit=3' "exit(): its status"
restored "exit()"
tmux kill-session -t "$session"
rm -rf "$work/ckpt"
start "$session" 8
wait_for 'iteration [0-9]+/' 10 || fail "the run for SIGTERM did not start"
# The probe is the pane shell's only child (found in /proc: no procps needed).
shell=$(tmux display -p -t "$session" '#{pane_pid}')
child=""
for p in /proc/[0-9]*; do
  read -r _ _ _ parent _ < "$p/stat" 2>/dev/null || continue
  [[ $parent == "$shell" ]] && child=${p#/proc/}
done
[[ -n $child ]] && kill -TERM "$child" || fail "no probe process to signal"
wait_for 'exit=[0-9]+' 10 || fail "SIGTERM did not end the run"
check 'exit=143' "SIGTERM: killed by the signal"
restored "SIGTERM"
tmux kill-session -t "$session"

# 8. Ctrl-C twice, and q twice, kill at once (steps of 3 s: the first press cannot finish first).
for keys in C-c q; do
  rm -rf "$work/ckpt"
  start "$session" 2 3000
  wait_for 'ember training · RUNNING' 10 || fail "$keys: the dashboard did not start"
  tmux send-keys -t "$session" "$keys"
  wait_for 'ember training · STOPPING' 3 && pass "$keys: stopping after the step" || fail "$keys: no STOPPING"
  tmux send-keys -t "$session" "$keys"
  wait_for 'exit=[0-9]+' 5 || fail "$keys twice did not end the program"
  check 'exit=130' "$keys twice: killed by SIGINT"
  if screen | grep -q 'stopped at epoch'; then fail "$keys twice: fit returned"; else pass "$keys twice: no clean return"; fi
  restored "$keys twice"
  tmux kill-session -t "$session"
done

# 9. EMBER_DASHBOARD=0: the one-line bar on the normal screen instead.
rm -rf "$work/ckpt"
tmux new-session -d -s "$session" -x 120 -y 32 \
  "EMBER_DASHBOARD=0 '$probe' '$work/ckpt' 1 15; echo \"exit=\$?\"; sleep 120"
check 'epoch 1/1 train \[[#.]+\] [0-9]+/64' "EMBER_DASHBOARD=0: the live bar"
[[ $(tmux display -p -t "$session" '#{alternate_on}') == 0 ]] && pass "EMBER_DASHBOARD=0: normal screen" \
  || fail "EMBER_DASHBOARD=0: alternate screen"
wait_for 'exit=[0-9]+' 15 || fail "EMBER_DASHBOARD=0: the run did not finish"
tmux kill-session -t "$session"

# 10. Output to a file: the plain renderer, no escape codes, no carriage returns.
rm -rf "$work/ckpt"
"$probe" "$work/ckpt" 2 1 > "$work/log" < /dev/null
if grep -q $'\x1b' "$work/log"; then fail "escape codes in the log"; else pass "no escape codes in ./train > log"; fi
if grep -q $'\r' "$work/log"; then fail "carriage returns in the log"; else pass "no carriage returns in the log"; fi
grep -q '^epoch 2/2 .* train loss' "$work/log" && pass "plain lines in the log" || fail "no epoch lines in the log"

if ((fails)); then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all dashboard checks passed"
