"""ember-bench end to end: the runner on the smoke suite beside a fake peer (tests/tools/
fake_peer.py), the JSON document, the history written and read back, compare finding an
injected regression, the report, and the error cases (unknown suite, device and peer, peers
that crash or write nothing, unusable history files), none of which may change the history.
Usage: /usr/bin/python3 tests/tools/ember_bench_test.py PATH/TO/ember-bench [unittest args]"""
import json, os, sqlite3, subprocess, sys, tempfile, unittest

TOOL = sys.argv.pop(1)
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_peer.py")


def bench(*args, env=None, check=None):
    e = dict(os.environ, THREADS="2")
    e.update(env or {})
    p = subprocess.run([TOOL, *args], env=e, capture_output=True, text=True, timeout=300)
    if check is not None and p.returncode != check:
        raise AssertionError(f"ember-bench {' '.join(args)}: status {p.returncode}, expected {check}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def runs_in(db):
    with sqlite3.connect(db) as c:
        return c.execute("SELECT count(*) FROM runs").fetchone()[0]


class EmberBench(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.dir.name, "history.sqlite")
        self.log = os.path.join(self.dir.name, "peer.log")

    def tearDown(self):
        self.dir.cleanup()

    def smoke(self, *extra, env=None, check=0):
        return bench("smoke", "--device", "flex,cpu_eager", "--history", self.db, *extra,
                     env=dict(FAKE_PEER_LOG=self.log, **(env or {})), check=check)

    def test_run_json_and_interleaved_peer(self):
        p = self.smoke("--peer", FAKE, "--rounds", "2", "--json")
        doc = json.loads(p.stdout)
        self.assertEqual(doc["schema"], "ember-bench/run/1")
        for k in ("run_id", "history", "started", "commit", "dirty", "machine", "config", "results",
                  "peer_rows"):
            self.assertIn(k, doc)
        for k in ("fingerprint", "cpu_model", "flags", "avx2", "avx512", "cores", "memory_gib"):
            self.assertIn(k, doc["machine"])
        self.assertEqual(doc["config"]["rounds"], 2)
        self.assertEqual(doc["config"]["threads"], 2)
        self.assertEqual(doc["config"]["devices"], ["flex", "cpu_eager"])
        got = {(r["name"], r["device"]): r for r in doc["results"]}
        self.assertEqual(set(got), {(n, d) for n in ("smoke_add_4k", "smoke_matmul_32")
                                    for d in ("flex", "cpu_eager")})
        for r in doc["results"]:
            self.assertEqual(r["suite"], "smoke")
            self.assertEqual(r["n"], 6)  # 3 timed calls a round, 2 rounds
            self.assertTrue(0 < r["min_ms"] <= r["q1_ms"] <= r["median_ms"] <= r["q3_ms"] <= r["max_ms"])
        add = got[("smoke_add_4k", "flex")]["peers"]
        self.assertEqual(len(add), 1)
        self.assertAlmostEqual(add[0]["ratio"], got[("smoke_add_4k", "flex")]["median_ms"] / 0.5)
        mm = got[("smoke_matmul_32", "cpu_eager")]
        self.assertEqual(sorted(p["row"] for p in mm["peers"]),
                         ["smoke_matmul_32[liba]", "smoke_matmul_32[libb]"])
        self.assertIn("gflops", mm)
        self.assertEqual(len(doc["peer_rows"]), 3)
        self.assertTrue(all(r["rounds"] == [r["median_ms"]] * 2 for r in doc["peer_rows"]))
        # The peer ran once a round, with the run's threads and rows.
        with open(self.log) as f:
            calls = [json.loads(l) for l in f]
        self.assertEqual(len(calls), 2)
        self.assertEqual(calls[0]["THREADS"], "2")
        self.assertEqual(set(calls[0]["BENCH_ROWS"].split(",")), {"smoke_add_4k", "smoke_matmul_32"})
        # The table went to stderr, with the best of two peer rows.
        self.assertIn("best (fake_peer:smoke_matmul_32[libb])", p.stderr)
        self.assertIn("recorded as run 1", p.stderr)

    def test_history_written_and_read_back(self):
        self.smoke("--peer", FAKE, "--commit", "feedbeef1234")
        with sqlite3.connect(self.db) as c:
            self.assertEqual(c.execute("PRAGMA user_version").fetchone()[0], 1)
            self.assertEqual(dict(c.execute("SELECT key, value FROM meta"))["schema_version"], "1")
            run = c.execute("SELECT id, commit_id, machine, rounds, suites, devices, peers FROM runs").fetchall()
            self.assertEqual(run, [(1, "feedbeef1234", run[0][2], 3, "smoke", "flex,cpu_eager", "fake_peer")])
            self.assertEqual(len(run[0][2]), 16)
            rows = c.execute("SELECT source, name, device, n FROM results ORDER BY source, name, device").fetchall()
            self.assertIn(("ember", "smoke_add_4k", "flex", 9), rows)
            self.assertIn(("fake_peer", "smoke_matmul_32[liba]", "", 3), rows)
            self.assertEqual(len(rows), 7)
            m = c.execute("SELECT cpu_model, cores FROM machines").fetchall()
            self.assertEqual(len(m), 1)
            self.assertGreater(m[0][1], 0)
        h = json.loads(bench("history", "--history", self.db, "--json", check=0).stdout)
        self.assertEqual([(r["run_id"], r["commit"]) for r in h], [(1, "feedbeef1234")])
        # A second run appends.
        self.smoke("--no-peers", "--rounds", "1")
        self.assertEqual(runs_in(self.db), 2)

    def inject(self, commit_a, commit_b):
        """Two runs whose figures are then set: B's smoke_matmul_32 twice A's, the rest equal."""
        self.smoke("--no-peers", "--rounds", "1", "--commit", commit_a)
        self.smoke("--no-peers", "--rounds", "1", "--commit", commit_b)
        with sqlite3.connect(self.db) as c:
            c.execute("UPDATE results SET median_ms = 1, min_ms = 0.9, q1_ms = 0.95, q3_ms = 1.05, max_ms = 1.1")
            c.execute("UPDATE results SET median_ms = 2, min_ms = 1.9, q1_ms = 1.95, q3_ms = 2.05, max_ms = 2.1 "
                      "WHERE run_id = 2 AND name = 'smoke_matmul_32' AND device = 'flex'")

    def test_compare_finds_injected_regression(self):
        self.inject("aaaa1111", "bbbb2222")
        p = bench("compare", "aaaa1111", "bbbb2222", "--history", self.db, "--json", check=1)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["schema"], "ember-bench/compare/1")
        self.assertEqual(doc["regressions"], 1)
        verdicts = {(r["name"], r["device"]): r["verdict"] for r in doc["rows"]}
        self.assertEqual(verdicts[("smoke_matmul_32", "flex")], "regression")
        self.assertEqual(verdicts[("smoke_add_4k", "flex")], "same")
        self.assertEqual(len(verdicts), 4)
        # Run ids work too, the other way round it is an improvement, and a threshold above the
        # change hides it.
        p = bench("compare", "#2", "#1", "--history", self.db, check=0)
        self.assertIn("improvement", p.stdout)
        bench("compare", "1", "2", "--history", self.db, "--threshold", "1.5", check=0)
        p = bench("compare", "1", "2", "--history", self.db, check=1)
        self.assertIn("1 regression beyond 10% (0 changes within the spread)", p.stdout)
        # A change beyond the threshold inside overlapping spreads is unclear, not a regression.
        with sqlite3.connect(self.db) as c:
            c.execute("UPDATE results SET q1_ms = 0.5, q3_ms = 2.5 WHERE run_id = 2")
        doc = json.loads(bench("compare", "1", "2", "--history", self.db, "--json", check=0).stdout)
        self.assertEqual(doc["regressions"], 0)
        self.assertEqual({r["verdict"] for r in doc["rows"] if r["name"] == "smoke_matmul_32"},
                         {"unclear", "same"})

    def test_report(self):
        self.smoke("--peer", FAKE, "--rounds", "1")
        self.smoke("--peer", FAKE, "--rounds", "1")
        out = os.path.join(self.dir.name, "report.html")
        bench("report", "--history", self.db, "-o", out, check=0)
        with open(out) as f:
            html = f.read()
        self.assertIn("<svg", html)
        self.assertIn("smoke_matmul_32", html)
        self.assertIn("ember cpu_eager", html)
        self.assertIn("fake_peer:smoke_add_4k", html)
        self.assertNotIn("<script", html)
        self.assertNotIn("http", html.replace("http://www.w3.org", ""))

    def test_list(self):
        doc = json.loads(bench("list", "--json", check=0).stdout)
        for s in ("elementwise", "reduce", "matmul", "conv", "nn", "train", "models", "smoke"):
            self.assertIn(s, doc["suites"])
        self.assertIn("torch_ops", doc["suites"]["elementwise"]["peers"])
        self.assertTrue({"flex", "cpu", "cpu_eager"} <= set(doc["devices"]))
        self.assertIn("torch_ops_peer", [p["name"] for p in doc["peers"]])

    def test_usage_errors(self):
        p = self.smoke("--no-peers", check=None)
        self.assertEqual(p.returncode, 0, p.stderr)
        before = runs_in(self.db)
        cases = [
            (["nosuchsuite"], "unknown suite 'nosuchsuite'"),
            (["smoke", "--device", "tpu"], "unknown device 'tpu'"),
            (["smoke", "--peer", "no_such_peer"], "unknown peer 'no_such_peer'"),
            (["smoke", "--peer", "/nonexistent/peer.py"], "no such file"),
            (["smoke", "--rounds", "x"], "expected an integer"),
            (["smoke", "--bogus"], "unknown option '--bogus'"),
            ([], "name a suite"),
        ]
        for args, msg in cases:
            p = bench(*args, "--history", self.db)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(msg, p.stderr, args)
        if "cuda" not in json.loads(bench("list", "--json", check=0).stdout)["devices"]:
            p = bench("smoke", "--device", "cuda", "--history", self.db, check=2)
            self.assertIn("not available here", p.stderr)
        p = bench("compare", "1", "99", "--history", self.db, check=2)
        self.assertIn("names no run", p.stderr)
        self.assertEqual(runs_in(self.db), before)

    def test_failing_peers_leave_history_unchanged(self):
        self.smoke("--no-peers", "--rounds", "1")
        with open(self.db, "rb") as f:
            before = f.read()
        for mode, msg in [("crash", "died of signal 11"), ("fail", "exited with status 7"),
                          ("nojson", "wrote no JSON rows"), ("badjson", "not JSON")]:
            p = self.smoke("--peer", FAKE, "--rounds", "1", env={"FAKE_PEER_MODE": mode}, check=3)
            self.assertIn("peer fake_peer", p.stderr, mode)
            self.assertIn(msg, p.stderr, mode)
            self.assertIn("nothing was recorded", p.stderr, mode)
            if mode == "fail":  # the peer's last lines are quoted
                self.assertIn("something went wrong", p.stderr)
        p = self.smoke("--peer", FAKE, "--rounds", "1", "--peer-timeout", "1",
                       env={"FAKE_PEER_MODE": "hang"}, check=3)
        self.assertIn("ran past 1 s and was stopped", p.stderr)
        self.assertEqual(runs_in(self.db), 1)
        with open(self.db, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_unusable_history_files(self):
        # A folder that does not exist: refused before any row runs.
        p = bench("smoke", "--no-peers", "--history", os.path.join(self.dir.name, "no", "h.sqlite"), check=4)
        self.assertIn("cannot open history", p.stderr)
        self.assertNotIn("[round", p.stderr)
        # A file that is not a database is refused and left as it was.
        junk = os.path.join(self.dir.name, "junk.sqlite")
        with open(junk, "wb") as f:
            f.write(b"this is not a database" * 100)
        p = bench("smoke", "--no-peers", "--history", junk, check=4)
        self.assertIn("history " + junk, p.stderr)
        with open(junk, "rb") as f:
            self.assertEqual(f.read(), b"this is not a database" * 100)
        # Another program's database, and a newer schema, are refused.
        other = os.path.join(self.dir.name, "other.sqlite")
        with sqlite3.connect(other) as c:
            c.execute("CREATE TABLE t(x)")
        p = bench("smoke", "--no-peers", "--history", other, check=4)
        self.assertIn("not an ember-bench history", p.stderr)
        self.smoke("--no-peers", "--rounds", "1")
        with sqlite3.connect(self.db) as c:
            c.execute("PRAGMA user_version = 9")
        p = self.smoke("--no-peers", "--rounds", "1", check=4)
        self.assertIn("schema version 9 is newer", p.stderr)
        # A read-only file (when not root, who may write anyway).
        if os.geteuid() != 0:
            ro = os.path.join(self.dir.name, "ro.sqlite")
            bench("smoke", "--no-peers", "--rounds", "1", "--device", "flex", "--history", ro, check=0)
            os.chmod(ro, 0o444)
            bench("smoke", "--no-peers", "--rounds", "1", "--device", "flex", "--history", ro, check=4)
        # compare and report never create a history.
        missing = os.path.join(self.dir.name, "missing.sqlite")
        bench("report", "--history", missing, check=4)
        self.assertFalse(os.path.exists(missing))


if __name__ == "__main__":
    unittest.main()
