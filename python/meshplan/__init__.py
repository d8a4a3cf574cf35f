"""meshplan: predict and plan distributed LLM training on GPU clusters.

Python bindings to libmeshplan (ctypes over its request -> JSON layer, include/meshplan/api.h).
Each call builds a JSON request from its arguments and returns the dict that the CLI prints
with --json for the same job:

    >>> import meshplan
    >>> r = meshplan.predict("llama3-70b", gpu="h100-sxm5-80gb", gpus=64, plan="tp=8,pp=2,gb=128")
    >>> round(r["mfu"], 3), r["bottleneck"]

Arguments are the CLI's options with '-' as '_' (``gpus_per_node``, ``scale_out``,
``price_gpu_hour``...). ``model`` and ``cluster`` may be a catalog key or preset name, a path to
a JSON file (a Hugging Face config.json or a model in the catalog schema; a cluster description),
or a dict. Bad input raises :class:`InputError` (an unknown key: :class:`NotFoundError`; text
that does not parse: :class:`ParseError`) with ``field``, ``value`` and ``messages``.
"""
import json
import math
import os

from . import _lib

__all__ = ["predict", "search", "collective", "run", "infer", "call", "commands", "MeshplanError",
           "InputError", "NotFoundError", "ParseError", "RangeError", "InternalError",
           "__version__", "library_path"]

__version__ = "0.1.0"
library_path = _lib.path


class MeshplanError(Exception):
    """A call the library refused. ``status`` is the library's status name ("bad input"),
    ``code`` its number, ``field`` and ``value`` the request key and value it names (or None),
    ``messages`` every line of the diagnostics."""

    def __init__(self, error):
        self.status = error.get("status")
        self.code = error.get("code")
        self.field = error.get("field")
        self.value = error.get("value")
        self.messages = error.get("messages") or []
        super().__init__(error.get("message") or self.status)


class InputError(MeshplanError, ValueError):
    """A value out of range or inconsistent; a plan that cannot be formed (exit 2 in the CLI)."""


class NotFoundError(InputError, LookupError):
    """An unknown catalog key, cluster or command."""


class ParseError(InputError):
    """Malformed JSON or plan text."""


class RangeError(InputError):
    """A result would overflow or not be finite."""


class InternalError(MeshplanError, RuntimeError):
    """Out of memory, an I/O error or a bug (exit 1 in the CLI)."""


# mp_status codes (include/meshplan/status.h, append-only) -> exception classes.
_ERRORS = {1: InputError, 2: NotFoundError, 3: ParseError, 4: RangeError, 5: InternalError,
           6: InternalError, 7: InternalError}


def commands():
    """The names the library's request layer answers ("predict", "search", ...)."""
    return _lib.commands()


def _inline(value, what):
    """A key/name stays a string; a path to an existing JSON file becomes its parsed object (the
    library reads no files); a dict is passed as it is."""
    if isinstance(value, (str, os.PathLike)) and os.path.isfile(value):
        with open(value, encoding="utf-8") as f:
            try:
                return json.load(f)
            except json.JSONDecodeError as e:
                raise ParseError({"status": "parse error", "code": 3, "field": what,
                                  "value": os.fspath(value),
                                  "message": f"{what} = {os.fspath(value)}: {e}"}) from None
    return value


def call(command, **request):
    """Run one command of the request layer with the given request keys (None values are left
    out); returns the answer as a dict. Raises MeshplanError subclasses on refusal."""
    req = {k: v for k, v in request.items() if v is not None}
    for key in ("model", "cluster", "catalog", "failures"):
        if key in req:
            req[key] = _inline(req[key], key)
    for key, v in req.items():
        # JSON has no NaN or infinity: json.dumps would write a token the library cannot parse
        # (a ParseError naming no field); refuse it here, naming the key and the value.
        if isinstance(v, float) and not math.isfinite(v):
            raise InputError({"status": "bad input", "code": 1, "field": key, "value": repr(v),
                              "message": f"{command}: {key} = {v!r}: expected a finite number"})
        # Nor does the library read an integer past 64 bits (jansson: "too big integer", again
        # a ParseError naming no field): refuse it here too.
        if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**63:
            raise InputError({"status": "bad input", "code": 1, "field": key, "value": str(v),
                              "message": f"{command}: {key} = {v}: expected an integer within "
                                         f"64 bits (every count meshplan takes is far smaller)"})
    status, text = _lib.call(command, json.dumps(req, allow_nan=False))
    answer = json.loads(text)
    if status != 0:
        raise _ERRORS.get(status, MeshplanError)(answer)
    return answer


def predict(model, gpu=None, gpus=None, plan=None, cluster=None, **options):
    """One plan on one cluster: the dict of ``meshplan predict --json`` (feasible, reasons,
    memory_bytes, step_s, time_s, tokens_per_s, mfu, hfu, bottleneck, ...).

    model: catalog key, path to a config.json / model JSON, or a dict. gpu, gpus: a catalog GPU
    and count (its usual node and fabric), or cluster: a node key, a shipped preset, a
    description file or dict. plan: "tp=8,pp=2,gb=128,..." (plan keys as the CLI's). Options:
    gpus_per_node, scale_out, catalog (a dict or file merged over the built-in catalog)."""
    return call("predict", model=model, gpu=gpu, gpus=gpus, plan=plan, cluster=cluster, **options)


def search(model, gpu=None, gpus=None, gb=None, **options):
    """Every valid plan for a job: the dict of ``meshplan search --json`` (top, Pareto frontiers,
    counts, explanation). gpus: a count or "A:B" (A, 2A, ... B). Options: seq, precision, fix,
    objective (throughput|time-to-train|cost|energy), tokens, price_gpu_hour, top, threads,
    no_prune, orders, gpus_per_node, scale_out, catalog."""
    return call("search", model=model, gpu=gpu, gpus=gpus, gb=gb, **options)


def collective(op="all_reduce", gpu=None, gpus=None, sizes=None, cluster=None, **options):
    """One collective's time per message size: the dict of ``meshplan collective --json``
    (op, ranks, stride, cluster, rows of bytes, time_us, algbw_GBps, busbw_GBps, algorithm...).
    sizes: "8:8G[:F]" or one byte count. Options: algo, type, ranks, stride, gpus_per_node,
    scale_out, catalog."""
    return call("collective", op=op, gpu=gpu, gpus=gpus, sizes=sizes, cluster=cluster, **options)


def run(model, gpu=None, gpus=None, plan=None, tokens=None, **options):
    """A whole training run (energy, cost, failures, checkpoints, goodput): the dict of
    ``meshplan run --json``. Options as the CLI's (price_gpu_hour, pue, power_cap_W, trials,
    seed, async_checkpoint, failures (a dict or file), ...)."""
    return call("run", model=model, gpu=gpu, gpus=gpus, plan=plan, tokens=tokens, **options)


def infer(model, gpu=None, gpus=None, plan=None, cluster=None, **options):
    """Serving one batch (TTFT, TPOT, tokens/s, memory, KV concurrency, power, J per token): the
    dict of ``meshplan infer --json``. plan: an inference plan, "tp=4,weights=fp8,batch=64,..."
    (the keys of ``meshplan infer --plan``); gpus defaults to tp x pp x dp of the plan. Options:
    gpus_per_node, scale_out, catalog."""
    return call("infer", model=model, gpu=gpu, gpus=gpus, plan=plan, cluster=cluster, **options)
