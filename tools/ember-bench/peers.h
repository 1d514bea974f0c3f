#pragma once
// Peers: scripts that time the same workloads in another library (PyTorch on the CPU or GPU) and
// write their rows as JSON, {"row": milliseconds, ...}, to the folder $OUT. ember-bench runs
// them as child processes between its own rounds.
#include <map>
#include <string>
#include <vector>

namespace ember::benchtool {

struct Peer {
  std::string name;  // the file's stem: "torch_cpu", "torch_models_peer"
  std::string path;
};

/// The folders searched for a peer given by name, in order: $EMBER_BENCH_PEER_PATH (':'-separated),
/// the source tree's bench/peers, the nearest shared/peers beside the source tree or a folder
/// above it, and the installed share/ember/bench/peers.
std::vector<std::string> peer_dirs();
/// Every peer found in peer_dirs() (names, first found wins).
std::vector<Peer> known_peers();
/// A peer by path (anything with a '/' or ending in .py) or by name (NAME.py or NAME_peer.py in
/// peer_dirs()). Throws ToolError(kUsage) naming the folders searched and the peers found there.
Peer resolve_peer(const std::string& spec);

struct PeerEnv {
  int threads = 2;
  std::string clock = "wall";     // BENCH_CLOCK
  std::string filter;             // BENCH_FILTER: rows whose name contains it
  std::vector<std::string> rows;  // BENCH_ROWS: ember's row names, ','-joined
  double timeout_s = 900;
};

/// Runs `peer` once and returns its rows. Throws ToolError(kPeerFailed) when it exits non-zero,
/// dies of a signal, runs past the timeout, or writes no valid JSON; the message names the peer
/// and ends with the last lines it printed.
std::map<std::string, double> run_peer(const Peer& peer, const PeerEnv& env);

}  // namespace ember::benchtool
