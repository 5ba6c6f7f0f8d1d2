#!/usr/bin/env python3
"""ctest cuda.report: the GPU report's verdicts and run_cuda.sh's exit status, without a GPU.

Why here: a GPU run is rare and short (docs/cuda.md, "Running on a GPU machine"), so a report
that calls a disagreement a pass, or a runner that exits 0 past a failed step, would go unseen
until it had wasted one. cuda_report.py reads a synthetic run_cuda.sh output folder
(fixtures/cuda_report/agreeing: every check agrees), edited per case; run_cuda.sh runs from a
fake bundle (a fake nvidia-smi, hetpass and gtest binary) to show it records every step, keeps a
failing run's JSON, writes the report anyway and exits non-zero.

usage: cuda_report_test.py [SOURCE_DIR]   (default: this file's checkout)
"""
import glob
import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

# Loading cuda_report.py (test_gpu_label) must not leave a __pycache__ in the source tree.
sys.dont_write_bytecode = True
SOURCE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
REPORT = os.path.join(SOURCE, "tools", "gpu", "cuda_report.py")
RUNNER = os.path.join(SOURCE, "tools", "gpu", "run_cuda.sh")
FIXTURE = os.path.join(SOURCE, "test", "cuda", "fixtures", "cuda_report", "agreeing")


class CudaReport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "out")
        shutil.copytree(FIXTURE, self.out)

    def tearDown(self):
        self.tmp.cleanup()

    def edit(self, name, change):
        """Applies change(dict) to OUT_DIR/name's JSON."""
        path = os.path.join(self.out, name)
        with open(path) as f:
            d = json.load(f)
        change(d)
        with open(path, "w") as f:
            json.dump(d, f)

    def report(self, *args, env=None):
        """Runs the report: (exit status, cuda_report.json, the markdown it wrote)."""
        p = subprocess.run([sys.executable, REPORT, self.out, *args], capture_output=True, text=True,
                           env=env or {k: v for k, v in os.environ.items() if k != "HETPASS_COMMIT"})
        self.assertIn(p.returncode, (0, 1), p.stderr)
        with open(os.path.join(self.out, "cuda_report.json")) as f:
            r = json.load(f)
        with open(os.path.join(self.out, r["report_md"])) as f:
            md = f.read()
        return p.returncode, r, md

    def check(self, row, what):
        return next(c for c in row["cupti_checks"] if c["what"] == what)

    def test_agreeing_input_passes(self):
        rc, r, md = self.report()
        self.assertEqual(r["failures"], [])
        self.assertTrue(r["all_passed"])
        self.assertEqual(rc, 0)
        row = r["models"]["maskrcnn_tiny"]["cuda"]
        self.assertIs(row["cupti_agrees"], True)
        self.assertEqual({c["status"] for c in row["cupti_checks"]}, {"agrees"})
        self.assertEqual(len(r["baselines"]), 2)
        for b in r["baselines"].values():
            self.assertIs(b["cupti_agrees"], True)
        self.assertRegex(r["report_md"], r"^cuda_report_h200_\d{4}-\d\d-\d\d_abc1234\.md$")
        self.assertIn("Commit measured: `abc1234`", md)
        self.assertIn("all passed: True", md)
        with open(os.path.join(self.out, "cuda_report.md")) as f:
            self.assertEqual(f.read(), md)

    def test_d2d_calls_cupti_against_counters_mismatch_fails(self):
        self.edit("run_maskrcnn_tiny_cuda.json", lambda d: d["cupti"].update(d2d=17))
        rc, r, md = self.report()
        self.assertFalse(r["all_passed"])
        self.assertEqual(rc, 1)
        row = r["models"]["maskrcnn_tiny"]["cuda"]
        self.assertIs(row["cupti_agrees"], False)
        self.assertEqual(self.check(row, "d2d calls"), {"what": "d2d calls", "cupti": 17, "counters": 16,
                                                        "status": "DIFFERS"})
        self.assertIn("calls NO, bytes yes", md)
        self.assertIn("all passed: False", md)

    def test_copies_of_zero_bytes_are_calls_cupti_never_sees(self):
        # Eight empty d2h copies: counted (the ledger promises them), never issued to CUDA.
        def empty(d):
            d["counters"]["d2h_calls"] += 8
            d["counters"]["d2h_empty"] = 8
        self.edit("run_maskrcnn_tiny_cuda.json", empty)
        rc, r, _ = self.report()
        row = r["models"]["maskrcnn_tiny"]["cuda"]
        self.assertIs(row["cupti_agrees"], True, row["problems"])
        # Without the empty count (an older hetpass), the same numbers differ.
        self.edit("run_maskrcnn_tiny_cuda.json", lambda d: d["counters"].pop("d2h_empty"))
        rc, r, _ = self.report()
        self.assertIs(r["models"]["maskrcnn_tiny"]["cuda"]["cupti_agrees"], False)

    def test_d2d_bytes_mismatch_fails(self):
        self.edit("run_maskrcnn_tiny_cuda.json", lambda d: d["counters"].update(d2d_bytes=65532))
        rc, r, _ = self.report()
        self.assertFalse(r["all_passed"])
        self.assertEqual(self.check(r["models"]["maskrcnn_tiny"]["cuda"], "d2d bytes")["status"], "DIFFERS")

    def test_a_copy_of_a_kind_the_counters_lack_fails(self):
        self.edit("run_mlp_dynamic_batch_cuda.json", lambda d: d["cupti"].update(other=1))
        _, r, _ = self.report()
        self.assertFalse(r["all_passed"])

    def test_baseline_whose_ledger_disagrees_fails(self):
        self.edit("run_maskrcnn_tiny_cuda_relay.json", lambda d: d.update(ledger_agrees=False))
        rc, r, md = self.report()
        self.assertFalse(r["all_passed"])
        self.assertEqual(rc, 1)
        self.assertEqual(r["baselines"]["relay"]["ledger_check"], "DIFFERS")
        self.assertRegex(md, r"\| relay \|.*\| NO \| yes \|")

    def test_baseline_without_a_ledger_verdict_is_not_measured(self):
        self.edit("run_maskrcnn_tiny_cuda_single-flag.json", lambda d: d.pop("ledger_agrees"))
        _, r, _ = self.report()
        self.assertEqual(r["baselines"]["single-flag"]["ledger_check"], "not measured")
        self.assertFalse(r["all_passed"])

    def test_model_run_whose_ledger_disagrees_fails(self):
        self.edit("run_mlp_dynamic_batch_sim.json", lambda d: d.update(ledger_agrees=False))
        _, r, _ = self.report()
        self.assertFalse(r["all_passed"])
        self.assertEqual(r["models"]["mlp_dynamic_batch"]["sim"]["ledger_check"], "DIFFERS")

    def test_missing_cupti_byte_fields_are_not_measured_never_agreement(self):
        # An old hetpass: CUPTI's calls only.
        for name in ("run_mlp_dynamic_batch_cuda.json", "run_maskrcnn_tiny_cuda.json",
                     "run_maskrcnn_tiny_cuda_relay.json", "run_maskrcnn_tiny_cuda_single-flag.json"):
            self.edit(name, lambda d: [d["cupti"].pop(k) for k in list(d["cupti"]) if k.endswith("_bytes")])
        rc, r, md = self.report()
        row = r["models"]["maskrcnn_tiny"]["cuda"]
        for d in ("h2d", "d2h", "d2d"):
            self.assertEqual(self.check(row, f"{d} bytes")["status"], "not measured")
            self.assertEqual(self.check(row, f"{d} calls")["status"], "agrees")
        self.assertIsNot(row["cupti_agrees"], True)
        self.assertIsNot(r["baselines"]["relay"]["cupti_agrees"], True)
        self.assertIn("calls yes, bytes not measured", md)
        self.assertIn("| ?/?/? |", md)
        self.assertFalse(r["all_passed"])
        self.assertEqual(rc, 1)

    def test_cupti_unavailable_on_cuda_is_not_measured(self):
        def drop(d):
            d.pop("cupti")
            d["cupti_error"] = "FAILED_PRECONDITION: cuda: CUPTI not found"
        self.edit("run_mlp_dynamic_batch_cuda.json", drop)
        _, r, md = self.report()
        row = r["models"]["mlp_dynamic_batch"]["cuda"]
        self.assertIsNone(row["cupti_agrees"])
        self.assertFalse(r["all_passed"])
        self.assertIn("CUPTI unavailable", md)

    def test_failed_test_set_fails(self):
        def fail(d):
            d["sets"][1].update({"pass": False, "ledger_agrees": False})
            d["passed"] = 1
        self.edit("test_maskrcnn_tiny_cuda.json", fail)
        _, r, _ = self.report()
        self.assertFalse(r["all_passed"])

    def test_failed_step_fails(self):
        path = os.path.join(self.out, "steps.tsv")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("hetpass_runtime_tests\t0", "hetpass_runtime_tests\t124"))
        rc, r, md = self.report()
        self.assertFalse(r["all_passed"])
        self.assertEqual(rc, 1)
        self.assertIn("- hetpass_runtime_tests: failed (exit 124)", md)

    def test_missing_step_and_its_output_fail(self):
        path = os.path.join(self.out, "steps.tsv")
        with open(path) as f:
            lines = [line for line in f if not line.startswith("run maskrcnn_tiny cuda baseline relay\t")]
        with open(path, "w") as f:
            f.writelines(lines)
        os.remove(os.path.join(self.out, "run_maskrcnn_tiny_cuda_relay.json"))
        _, r, md = self.report()
        self.assertFalse(r["all_passed"])
        self.assertIn("- run maskrcnn_tiny cuda baseline relay: missing (did not finish)", md)
        self.assertIn("relay", r["baselines"])  # still a row: the report says what it lacks
        self.assertTrue(r["baselines"]["relay"]["error"])

    def test_without_a_plan_missing_steps_cannot_be_told(self):
        os.remove(os.path.join(self.out, "plan.txt"))
        _, r, _ = self.report()
        self.assertFalse(r["all_passed"])
        self.assertIn("mlp_dynamic_batch", r["models"])  # the files found still make the rows

    def test_commit_from_the_command_line_or_the_environment(self):
        _, r, md = self.report("--commit=0123abc")
        self.assertTrue(r["report_md"].endswith("_0123abc.md"))
        env = dict(os.environ, HETPASS_COMMIT="fedcba9-dirty")
        _, r, md = self.report(env=env)
        self.assertTrue(r["report_md"].endswith("_fedcba9-dirty.md"))
        self.assertIn("with changes that commit does not have", md)

    def add_step(self, name, rc):
        with open(os.path.join(self.out, "plan.txt"), "a") as f:
            f.write(name + "\n")
        with open(os.path.join(self.out, "steps.tsv"), "a") as f:
            f.write(f"{name}\t{rc}\n")

    def test_a_run_without_test_onnx_is_a_row_of_its_own(self):
        # A realistic model's second set: run only (the first row's test-onnx checked both).
        shutil.copy(os.path.join(self.out, "run_mlp_dynamic_batch_cuda.json"),
                    os.path.join(self.out, "run_mlp_set1_cuda.json"))
        self.add_step("run mlp_set1 cuda", 0)
        rc, r, md = self.report()
        self.assertEqual(rc, 0, r["failures"])
        self.assertEqual(r["models"]["mlp_set1"]["cuda"]["problems"], [])
        self.assertIn("| mlp_set1 | cuda | run only |", md)

    def test_a_step_past_the_time_budget_fails_and_says_so(self):
        self.add_step("peers compile", "budget")
        rc, r, _ = self.report()
        self.assertEqual(rc, 1)
        self.assertIn("step peers compile: not run: time budget", r["failures"])

    def test_gpu_label(self):
        spec = importlib.util.spec_from_file_location("cuda_report", REPORT)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        for name, label in (("NVIDIA H200, 580.159.04, 143771 MiB", "h200"),
                            ("NVIDIA H100 80GB HBM3, 580.65.06, 81559 MiB", "h100"),
                            ("NVIDIA A100-SXM4-80GB, 580.65.06, 81920 MiB", "a100"),
                            ("NVIDIA GeForce RTX 4090, 580.65.06, 24564 MiB", "rtx4090"),
                            ("", "gpu")):
            self.assertEqual(m.gpu_label(name), label)


FAKE_HETPASS = r'''#!/usr/bin/env python3
# A fake hetpass: test-onnx and run JSON like the real one's; FAKE_FAIL="run sim" makes that
# run's ledger disagree: it prints its JSON, then fails (exit 1), as hetpass run does.
import json, os, sys
args = sys.argv[1:]
cmd = args[0]
dev = next(a.split("=", 1)[1] for a in args if a.startswith("--device="))
n = 0 if dev == "cpu" else 1
c = {"h2d_calls": n, "h2d_bytes": 1024 * n, "d2h_calls": n, "d2h_bytes": 40 * n, "d2d_calls": 0,
     "d2d_bytes": 0, "param_calls": 0, "param_bytes": 0, "syncs": n, "device_allocs": 0, "launches": 3}
agrees = os.environ.get("FAKE_FAIL") != f"{cmd} {dev}"
if cmd == "test-onnx":
    s = {"set": "test_data_set_0", "pass": True, "counters": c, "ledger_agrees": True, "ledger_exact": True}
    print(json.dumps({"sets": [s], "passed": 1, "total": 1}))
    sys.exit(0)
r = {"counters": c, "times_us": {"cold": 9.0, "median": 5.0}, "compile_ms": 1.0,
     "steady_state_device_allocs": 0, "ledger_agrees": agrees, "ledger_exact": agrees,
     "ledger_summary": "exact" if agrees else "h2d count MISMATCH"}
if "--cupti" in args:
    r["cupti"] = {"h2d": n, "d2h": n, "d2d": 0, "other": 0, "h2d_bytes": 1024 * n, "d2h_bytes": 40 * n,
                  "d2d_bytes": 0, "other_bytes": 0}
print(json.dumps(r))
if not agrees:
    print("hetpass: ledger-check: the run's copies differ from the ledger", file=sys.stderr)
sys.exit(0 if agrees else 1)
'''

FAKE_GTEST = r'''#!/usr/bin/env bash
sleep "${FAKE_SLEEP:-0}"
for a; do
  case $a in
    --gtest_output=json:*)
      echo '{"tests": 1, "testsuites": [{"name": "S", "testsuite": [{"name": "T", "result": "COMPLETED"}]}]}' \
        > "${a#--gtest_output=json:}" ;;
  esac
done
echo "[  PASSED  ] 1 test."
'''

FAKE_NVIDIA_SMI = r'''#!/usr/bin/env bash
# FAKE_DRIVER empty: no driver, as nvidia-smi says without one.
[ -n "${FAKE_DRIVER-580.159.04}" ] || exit 9
case "$*" in
  *name,driver_version*) echo "NVIDIA H200, ${FAKE_DRIVER-580.159.04}, 143771 MiB" ;;
  *) echo "${FAKE_DRIVER-580.159.04}" ;;
esac
'''


def write(path, text, executable=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if executable:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class RunCuda(unittest.TestCase):
    """run_cuda.sh from a fake bundle: one model (cuda, sim, cpu) and one test binary."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.bundle = os.path.join(self.tmp.name, "hetpass-gpu")
        os.makedirs(os.path.join(root, "lib"))
        shutil.copy(RUNNER, root)
        shutil.copy(REPORT, root)
        write(os.path.join(root, "COMMIT"), "abc1234\n")
        write(os.path.join(root, "bin", "hetpass"), FAKE_HETPASS, executable=True)
        write(os.path.join(root, "bin", "hetpass_runtime_tests"), FAKE_GTEST, executable=True)
        write(os.path.join(root, "models", "mlp", "model.onnx"), "")
        write(os.path.join(root, "models", "mlp", "test_data_set_0", "input_0.pb"), "")
        fake = os.path.join(self.tmp.name, "fakebin")
        write(os.path.join(fake, "nvidia-smi"), FAKE_NVIDIA_SMI, executable=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("HETPASS_", "FAKE_", "GTEST_"))}
        self.env.update(PATH=f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}", HETPASS_GPU_STEPS="tests models",
                        HETPASS_GPU_REPEAT="2")
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def run_cuda(self, **env):
        p = subprocess.run(["bash", os.path.join(self.bundle, "run_cuda.sh"), self.out], capture_output=True,
                           text=True, env=dict(self.env, **env), timeout=120)
        return p

    def report(self):
        with open(os.path.join(self.out, "cuda_report.json")) as f:
            return json.load(f)

    def test_every_step_passing_exits_0(self):
        p = self.run_cuda()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(self.out, "plan.txt")) as f:
            plan = f.read().split("\n")[:-1]
        self.assertEqual(plan, ["hetpass_runtime_tests"] + [f"{s} mlp {d}" for d in ("cuda", "sim", "cpu")
                                                            for s in ("test-onnx", "run")])
        r = self.report()
        self.assertTrue(r["all_passed"], r["failures"])
        self.assertEqual([s["status"] for s in r["steps"]], ["passed"] * 7)
        self.assertIs(r["models"]["mlp"]["cuda"]["cupti_agrees"], True)
        self.assertEqual(r["commit"], "abc1234")
        self.assertEqual(len(glob.glob(os.path.join(self.out, "cuda_report_h200_*_abc1234.md"))), 1)

    def test_a_failing_run_keeps_its_json_and_fails_the_script(self):
        p = self.run_cuda(FAKE_FAIL="run sim")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("run mlp sim exit 1", p.stdout)
        with open(os.path.join(self.out, "run_mlp_sim.json")) as f:
            self.assertIs(json.load(f)["ledger_agrees"], False)
        r = self.report()  # written although a step failed, and after it: cpu ran too
        self.assertFalse(r["all_passed"])
        self.assertEqual(r["models"]["mlp"]["sim"]["steps"]["run mlp sim"], "failed (exit 1)")
        self.assertEqual(r["models"]["mlp"]["cpu"]["steps"]["run mlp cpu"], "passed")

    def test_a_failing_test_binary_fails_the_script(self):
        write(os.path.join(self.bundle, "bin", "hetpass_runtime_tests"), "#!/bin/sh\nexit 3\n", executable=True)
        p = self.run_cuda()
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertFalse(self.report()["all_passed"])

    def test_a_requested_conformance_run_the_bundle_cannot_make_fails(self):
        p = self.run_cuda(HETPASS_GPU_STEPS="conformance", HETPASS_GPU_CONFORMANCE="default")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(self.report()["steps"][0]["status"], "failed (exit 1)")

    def test_a_failing_report_fails_the_script(self):
        write(os.path.join(self.bundle, "cuda_report.py"), "import sys\nsys.exit(5)\n")
        p = self.run_cuda()
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)

    def test_stopped_early_it_still_writes_the_report(self):
        # The test binary's parent is timeout; timeout's parent is run_cuda.sh, which it stops.
        write(os.path.join(self.bundle, "bin", "hetpass_runtime_tests"),
              "#!/bin/sh\nkill -TERM \"$(cut -d' ' -f4 /proc/$PPID/stat)\"\n", executable=True)
        p = self.run_cuda()
        self.assertEqual(p.returncode, 143, p.stdout + p.stderr)
        self.assertIn("stopped early", p.stderr)
        r = self.report()
        self.assertFalse(r["all_passed"])
        self.assertEqual({s["status"] for s in r["steps"]}, {"missing (did not finish)"})

    def test_steps_past_the_time_budget_are_not_run(self):
        # The test binary outlasts a four-second budget (the budget counts whole seconds, so a
        # shorter one could run out before the first step on a busy machine): every model step
        # after it is not run.
        p = self.run_cuda(HETPASS_GPU_SECONDS="4", FAKE_SLEEP="6")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        r = self.report()
        self.assertEqual([s["status"] for s in r["steps"]], ["passed"] + ["not run: time budget"] * 6)
        self.assertFalse(r["all_passed"])

    def test_refuses_without_a_driver(self):
        p = self.run_cuda(FAKE_DRIVER="")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("refused", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.out, "plan.txt")))


SPEED = os.path.join(SOURCE, "tools", "gpu", "speed_report.py")


class SpeedReport(unittest.TestCase):
    """speed_report.py on a synthetic folder: ratios, GPU busy and host cost per launch."""

    def test_ratios_and_host_cost(self):
        with tempfile.TemporaryDirectory() as out:
            def put(name, d):
                with open(os.path.join(out, name), "w") as f:
                    json.dump(d, f)
            counters = {"launches": 4, "syncs": 1}
            # On cuda three of the four launches ran in one graph launch.
            put("run_m_cuda.json", {"times_us": {"median": 200.0, "cold": 900.0},
                                    "counters": dict(counters, graph_launches=1, graph_kernels=3),
                                    "cupti": {"kernels": 4, "kernel_us": 40.0, "memcpy_us": 10.0, "span_us": 150.0,
                                              "top_kernels": [{"name": "k", "calls": 4, "us": 40.0}]}})
            put("run_m_cpu.json", {"times_us": {"median": 300.0, "cold": 400.0}, "counters": counters})
            # Two runs after the first: 4 launches of 25 us and one argument check each.
            put("profile_m_cuda.json", {"function": "main", "profile_runs": 2, "times_us": {"median": 210.0},
                                        "profile": [{"function": "main", "pc": 0, "opcode": "arg", "calls": 2,
                                                     "total_us": 2.0},
                                                    {"function": "main", "pc": 3, "opcode": "invoke_kernel",
                                                     "calls": 8, "total_us": 200.0,
                                                     "what": "invoke @f(%x, %y)  [cudnn conv2d[bias]]"}]})
            # The same without graphs: a profile run of its own.
            put("profile_m_cuda_nographs.json", {"function": "main", "profile_runs": 2, "times_us": {"median": 260.0},
                                                 "profile": []})
            put("peers.json", {"torch": "x", "models": {"m": {"eager": {"median_us": 400.0, "first_us": 1.0},
                                                              "compile": {"error": "boom"}}}})
            p = subprocess.run([sys.executable, SPEED, out, "--commit=abc"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(out, "speed.json")) as f:
                row = json.load(f)["models"]["m"]
            self.assertAlmostEqual(row["cuda_over_eager"], 0.5)
            self.assertIsNone(row["cuda_over_compile"])
            self.assertAlmostEqual(row["cuda"]["gpu_busy"], 0.25)
            self.assertAlmostEqual(row["profile"]["host_us_per_launch"], 25.0)
            self.assertAlmostEqual(row["profile"]["host_us_per_inference"], 101.0)
            self.assertFalse(row["profile"]["first_run_included"])
            with open(os.path.join(out, "speed.json")) as f:
                self.assertEqual(json.load(f)["host_us_per_call_by_provider"], {"cudnn": [25.0]})
            with open(os.path.join(out, "speed.md")) as f:
                md = f.read()
            self.assertIn("| m | 200.0 | 260.0 | 300.0 | 400.0 | - | - | 0.50 |", md)
            self.assertIn("| 4 | 1 (3) | 1 |", md)
            self.assertIn("- m compile: boom", md)
            self.assertIn("| cudnn | 1 | 25.0 | 25.0 | 25.0 |", md)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
