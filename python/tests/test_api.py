"""meshplan's Python API against the CLI: each function returns the dict `meshplan COMMAND
--json` prints for the same job (same keys, same numbers), inline files load as the CLI's
paths do, and refusals raise the exception classes with the field and value named."""
import os
import threading

import pytest

import meshplan

JOB = dict(gpu="h100-sxm5-80gb", gpus=64, plan="tp=8,pp=2,gb=128,seq=8192,zero=1,recompute=selective")


def assert_same(got, want, path="answer"):
    """Equal structures; reals equal to 1e-9 relative (both come from the same doubles)."""
    if isinstance(want, dict):
        assert isinstance(got, dict), path
        assert sorted(got) == sorted(want), f"{path}: keys differ: {set(got) ^ set(want)}"
        for k in want:
            assert_same(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), path
    else:
        assert got == want, path


def test_predict_equals_cli(cli):
    got = meshplan.predict("llama3-70b", **JOB)
    want = cli("predict", "--model", "llama3-70b", "--gpu", JOB["gpu"], "--gpus", "64",
               "--plan", JOB["plan"])
    assert_same(got, want)
    for key in ("feasible", "reasons", "memory_bytes", "step_s", "time_s", "tokens_per_s",
                "tokens_per_s_per_gpu", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu",
                "hfu", "bottleneck"):  # DESIGN.md's predict --json contract
        assert key in got
    assert 0 < got["mfu"] < 1


def test_infer_equals_cli(cli):
    got = meshplan.infer("llama3-8b", gpu="h100-sxm5-80gb", gpus=4, plan="tp=2,batch=16,in=2048,out=256")
    want = cli("infer", "--model", "llama3-8b", "--gpu", "h100-sxm5-80gb", "--gpus", "4",
               "--plan", "tp=2,batch=16,in=2048,out=256")
    assert_same(got, want)
    assert got["plan"].startswith("tp=2,pp=1,ep=1,dp=2,")
    assert 0 < got["tpot_s"] < got["e2e_s"]


def test_model_and_cluster_files_equal_cli(cli, root):
    hf = os.path.join(root, "tests", "data", "hf", "gpt-neox-20b.json")
    cl = os.path.join(root, "examples", "clusters", "dgx-h100-roce100.json")
    got = meshplan.predict(hf, cluster=cl, gpus=16, plan="tp=2,gb=32")
    want = cli("predict", "--model", hf, "--cluster", cl, "--gpus", "16", "--plan", "tp=2,gb=32")
    assert_same(got, want)
    # The preset by name is the same cluster.
    assert_same(meshplan.predict(hf, cluster="dgx-h100-roce100", gpus=16, plan="tp=2,gb=32"), want)


def test_search_equals_cli(cli):
    got = meshplan.search("llama3-8b", gpu="h100-sxm5-80gb", gpus="8:16", gb=64, top=3, threads=1)
    want = cli("search", "--model", "llama3-8b", "--gpu", "h100-sxm5-80gb", "--gpus", "8:16",
               "--gb", "64", "--top", "3", "--threads", "1")
    for volatile in ("wall_s", "threads", "plans_per_s"):  # timing, not the answer
        for d in (got, want):
            d.pop(volatile, None)
            d.get("counts", {}).pop(volatile, None)
    assert_same(got, want)
    assert got["top"][0]["tokens_per_s"] > 0


def test_collective_equals_cli(cli):
    got = meshplan.collective("reduce_scatter", gpu="h100-sxm5-80gb", gpus=32, sizes="64K:64M:4")
    want = cli("collective", "--op", "reduce_scatter", "--gpu", "h100-sxm5-80gb", "--gpus", "32",
               "--sizes", "64K:64M:4")
    assert_same(got, want)
    assert len(got["rows"]) == 6


def test_run_equals_cli(cli):
    got = meshplan.run("llama3-70b", tokens=1e12, trials=200, seed=7, price_gpu_hour=2.5, **JOB)
    want = cli("run", "--model", "llama3-70b", "--gpu", JOB["gpu"], "--gpus", "64", "--plan",
               JOB["plan"], "--tokens", "1e12", "--trials", "200", "--seed", "7",
               "--price-gpu-hour", "2.5")
    assert_same(got, want)
    assert 0.5 < got["goodput"] <= 1


def test_bad_plan_names_field_and_value():
    with pytest.raises(meshplan.InputError) as e:
        meshplan.predict("llama3-70b", gpu="h100-sxm5-80gb", gpus=64, plan="tp=3")
    assert (e.value.field, e.value.value) == ("plan.tp", "3")
    assert e.value.status == "bad input" and e.value.code == 1
    assert any("must divide heads" in m for m in e.value.messages)


def test_errors_by_kind():
    with pytest.raises(meshplan.NotFoundError) as e:
        meshplan.predict("no-such-model", gpu="h100-sxm5-80gb", gpus=8)
    assert (e.value.field, e.value.value) == ("model", "no-such-model")
    assert isinstance(e.value, LookupError) and isinstance(e.value, ValueError)
    with pytest.raises(meshplan.InputError) as e:
        meshplan.predict("llama3-8b", gpu="h100-sxm5-80gb", gpus=-8)
    assert (e.value.field, e.value.value) == ("gpus", "-8")
    with pytest.raises(meshplan.InputError) as e:
        meshplan.predict("llama3-8b", gpu="h100-sxm5-80gb", gpus=8, gpux=1)
    assert e.value.field == "gpux"
    with pytest.raises(meshplan.InputError) as e:
        meshplan.search("llama3-8b", gpu="h100-sxm5-80gb", gpus=8)
    assert e.value.field == "gb"
    with pytest.raises(meshplan.NotFoundError):
        meshplan.call("nope")


def test_non_finite_and_unknown_plan_key_name_field_and_value():
    # Found by a reviewer: gpus=nan became invalid JSON (ParseError, field None), and an unknown
    # plan key came back with value ''.
    with pytest.raises(meshplan.InputError) as e:
        meshplan.predict("llama3-8b", gpu="h100-sxm5-80gb", gpus=float("nan"))
    assert (e.value.field, e.value.value) == ("gpus", "nan")
    assert not isinstance(e.value, meshplan.ParseError)
    with pytest.raises(meshplan.InputError) as e:
        meshplan.run("llama3-8b", gpu="h100-sxm5-80gb", gpus=8, plan="gb=8", tokens=float("inf"))
    assert (e.value.field, e.value.value) == ("tokens", "inf")
    with pytest.raises(meshplan.InputError) as e:
        meshplan.predict("llama3-8b", gpu="h100-sxm5-80gb", gpus=8, plan="tpp=8")
    assert (e.value.field, e.value.value) == ("tpp", "8")


def test_integer_past_64_bits_names_field_and_value():
    # Found by a new user: gpus=10**30 became jansson's "too big integer" (ParseError, field None).
    with pytest.raises(meshplan.InputError) as e:
        meshplan.predict("llama3-8b", gpu="h100-sxm5-80gb", gpus=10**30, plan="gb=8")
    assert (e.value.field, e.value.value) == ("gpus", str(10**30))
    assert not isinstance(e.value, meshplan.ParseError)
    # within 64 bits the library's own range check answers, naming the range
    with pytest.raises(meshplan.InputError) as e:
        meshplan.predict("llama3-8b", gpu="h100-sxm5-80gb", gpus=2**62, plan="gb=8")
    assert e.value.field == "gpus" and "[1, 16777216]" in str(e.value)


def test_bad_file_is_parse_error(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"hidden_size": 4096,')
    with pytest.raises(meshplan.ParseError) as e:
        meshplan.predict(str(bad), gpu="h100-sxm5-80gb", gpus=8)
    assert e.value.field == "model"


def test_infeasible_is_an_answer():
    r = meshplan.predict("llama3-405b", gpu="h100-sxm5-80gb", gpus=8, plan="tp=8,gb=8")
    assert r["feasible"] is False and r["reasons"]


def test_threads_agree():
    """ctypes drops the GIL during the call; each call builds its own catalog (api.h)."""
    want = meshplan.predict("llama3-8b", gpu="h100-sxm5-80gb", gpus=8, plan="zero=1,gb=64")
    got = []
    threads = [threading.Thread(target=lambda: got.append(
        meshplan.predict("llama3-8b", gpu="h100-sxm5-80gb", gpus=8, plan="zero=1,gb=64")))
        for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(g == want for g in got)
